"""SHUTDOWN (spec/L1.md §9), on a server of its own."""

from __future__ import annotations

import os

import pytest

from .catalog import Detached, DetachReason, Ok, Shutdown
from .conftest import EXTERNAL
from .helpers import spawn, subscribe
from .server import local_server
from .wire_client import Conn


@pytest.mark.skipif(
    bool(EXTERNAL), reason="SHUTDOWN would stop the server under test (PHUX_CONFORMANCE_SOCKET)"
)
@pytest.mark.clause("L1.md §9 SHUTDOWN")
def test_shutdown_detaches_everyone_and_removes_the_socket() -> None:
    with local_server() as server:
        a = Conn(server.socket_path)
        b = Conn(server.socket_path)
        try:
            a.hello()
            b.hello()
            t = spawn(a, [], ["sleep", "30"])
            subscribe(b, t.terminal)
            rid = a.rid()
            a.send(Shutdown(request_id=rid))
            frames_a = a.drain_until_closed()
            frames_b = b.drain_until_closed()
            assert Ok(request_id=rid) in frames_a
            assert server.proc is not None
            server.proc.wait(10)
            assert not os.path.exists(server.socket_path)
            for frames in (frames_a, frames_b):
                detached = [f for f in frames if isinstance(f, Detached)]
                assert detached, f"no DETACHED before close: {frames}"
                assert detached[-1].reason == DetachReason.SERVER_SHUTDOWN
        finally:
            a.close()
            b.close()

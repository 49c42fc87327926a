"""A client meets a server of an older minor (spec/proto.md §4 rule 3).

A 1.0 server refuses any HELLO whose major.minor is not exactly 1.0. In front of
the real server, a proxy answers the handshake as a 1.0 server does and passes a
1.0 HELLO, and everything after it, through: the client retries with the older
minor and works, without the 1.1 additions.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire import FrameReader, encode_frame
from phux.wire.errors import ErrorCode
from phux.wire.frames import Error, Hello, ListTerminals, TerminalList
from phux.wire.handshake import PROTOCOL_VERSION

from .harness import ServerProcess, spawn

T = 10.0


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _serve_one(client: socket.socket, target: Path, accepts: tuple[int, int] | None) -> None:
    reader = FrameReader()
    raw = b""
    with client:
        client.settimeout(T)
        while True:
            data = client.recv(65536)
            if not data:
                return
            raw += data
            reader.feed(data)
            frame = reader.next_frame()
            if frame is not None:
                break
        assert isinstance(frame, Hello)
        if (frame.major, frame.minor) != accepts:
            message = f"client speaks {frame.major}.{frame.minor}, server speaks {accepts}"
            client.sendall(
                encode_frame(Error(code=ErrorCode.VERSION_INCOMPATIBLE, message=message))
            )
            return
        client.settimeout(None)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            upstream.connect(str(target))
            upstream.sendall(raw)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join(T)


@contextlib.contextmanager
def old_server_in_front_of(
    server: ServerProcess, accepts: tuple[int, int] | None = (1, 0)
) -> Iterator[Path]:
    """A socket path that handshakes as a server accepting exactly ``accepts``
    (None: nothing), as 1.0 servers did."""
    path = server.dir / "old"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    workers: list[threading.Thread] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                worker = threading.Thread(
                    target=_serve_one, args=(conn, server.socket, accepts), daemon=True
                )
                workers.append(worker)
                worker.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield path
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(T)
        for worker in workers:
            worker.join(T)


def test_a_client_speaks_the_minor_an_older_server_accepts(server: ServerProcess) -> None:
    with (
        old_server_in_front_of(server) as path,
        Connection.open(path, Deadline.after(T), client_name="new") as conn,
    ):
        assert conn.minor == 0
        tid = spawn(conn, ["sleep", "30"])
        reply = conn.call_expect(
            lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
        )
        assert [i.terminal for i in reply.terminals] == [tid]


def test_a_current_server_needs_no_retry(server: ServerProcess) -> None:
    with server.connect() as conn:
        assert conn.minor == PROTOCOL_VERSION[1]
        assert conn.hello is not None and conn.hello.minor == conn.minor


def test_a_client_steps_down_minor_by_minor(server: ServerProcess) -> None:
    too_new = PROTOCOL_VERSION[1] + 2
    with Connection.open(server.socket, Deadline.after(T), minor=too_new) as conn:
        assert conn.minor == PROTOCOL_VERSION[1]


def test_minor_zero_refused_is_an_error(server: ServerProcess) -> None:
    """Nothing older to try: the refusal reaches the caller."""
    with old_server_in_front_of(server, None) as path, pytest.raises(ServerError) as info:
        Connection.open(path, Deadline.after(T)).close()
    assert info.value.wire_code == ErrorCode.VERSION_INCOMPATIBLE


def test_input_events_from_a_1_2_server_are_a_clear_error(server: ServerProcess) -> None:
    import io

    from phux.client.client import Client
    from phux.client.errors import ServerTooOld
    from phux.client.record import Recorder

    with server.connect() as conn:
        tid = spawn(conn, ["cat"])
    with old_server_in_front_of(server, (1, 2)) as path, Client(path) as client:
        with pytest.raises(ServerTooOld) as info:
            Recorder(client, f"@{tid}", io.StringIO(), input=True, deadline=Deadline.after(T))
        assert "protocol 1.2" in info.value.message and "1.3" in info.value.message
        # Without input the recording works as before.
        Recorder(client, f"@{tid}", io.StringIO(), deadline=Deadline.after(T)).close()


def test_audit_of_a_local_1_2_server_reads_its_file(server: ServerProcess) -> None:
    from phux.client.client import Client
    from phux.client.server_info import audit
    from phux.wire.frames import Input

    with server.connect() as conn:
        tid = spawn(conn, ["cat"])
        conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"hi"), Deadline.after(T))
    with old_server_in_front_of(server, (1, 2)) as path, Client(path) as client:
        assert client.connection(Deadline.after(T)).minor == 2
        result = audit(client, f"@{tid}", Deadline.after(T))
        assert [e.bytes for e in result.entries] == [2] and result.host is None
        assert audit(client, f"@{tid}", Deadline.after(T), last=0).entries == []

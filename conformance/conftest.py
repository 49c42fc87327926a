"""Fixtures of the conformance suite.

``PHUX_CONFORMANCE_SOCKET=/path/to/socket`` runs the suite against a server
that is already listening there; otherwise each test process starts this
repository's server in a temporary directory and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from .catalog import Kill
from .server import local_server
from .wire_client import Conn

EXTERNAL = os.environ.get("PHUX_CONFORMANCE_SOCKET")


@pytest.fixture(scope="session")
def server_socket() -> Iterator[str]:
    if EXTERNAL:
        yield EXTERNAL
        return
    with local_server() as server:
        yield server.socket_path


@pytest.fixture
def connect(server_socket: str) -> Iterator[object]:
    """``connect(hello=True) -> Conn``; every connection is closed after the test."""
    conns: list[Conn] = []

    def make(*, hello: bool = True) -> Conn:
        conn = Conn(server_socket)
        conns.append(conn)
        if hello:
            conn.hello()
        return conn

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def conn(connect: object) -> Conn:
    """A connection that has completed the handshake."""
    return connect()  # type: ignore[operator,no-any-return]


@pytest.fixture
def cleanup(server_socket: str) -> Iterator[list[int]]:
    """Append terminal ids here; the live ones are killed after the test."""
    ids: list[int] = []
    yield ids
    if not ids:
        return
    with contextlib.suppress(Exception), Conn(server_socket) as c:
        c.hello()
        for tid in ids:
            c.request(Kill(request_id=c.rid(), terminals=[tid]), timeout=5)

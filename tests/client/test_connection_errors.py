"""An ERROR without a request id ends the client's connection at once, with the
server's reason (spec/proto.md §6): it answers no request, so a call waiting for its
reply would otherwise wait out its deadline, or be told only that the server closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ConnectionLost
from phux.wire.frames import ListTerminals, TerminalList


def list_terminals(conn: Connection) -> None:
    conn.call_expect(lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10))


def test_a_frame_the_server_could_not_read_fails_the_next_call(server: Path) -> None:
    with Connection.open(server, Deadline.after(5)) as conn:
        list_terminals(conn)
        # A client frame type the server does not know (a newer client's request to an
        # older server): ERROR UNKNOWN_MESSAGE_TYPE, with no request id to match.
        os.write(conn.fileno(), b"\x00\x00\x00\x01\x70")
        with pytest.raises(ConnectionLost, match="UNKNOWN_MESSAGE_TYPE"):
            list_terminals(conn)
        assert conn.closed


def test_lost_framing_names_the_servers_reason(server: Path) -> None:
    with Connection.open(server, Deadline.after(5)) as conn:
        os.write(conn.fileno(), b"\x00\x00\x00\x00")  # a length of 0
        with pytest.raises(ConnectionLost, match="MALFORMED_MESSAGE"):
            list_terminals(conn)

"""Malformed frames, unknown ids, request/reply matching (spec/proto.md §2, §5, §6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .catalog import (
    Detached,
    DetachReason,
    Error,
    ErrorCode,
    Input,
    Kill,
    ListTerminals,
    MetadataValue,
    MetaGet,
    MetaSet,
    Ok,
    Ping,
    Pong,
    Resize,
    SendSignal,
    Signal,
    Subscribe,
    TerminalList,
    Unsubscribe,
    WireType,
)
from .codec import encode_frame
from .helpers import check_error
from .wire_client import Conn

Connect = Callable[..., Conn]
NO_SUCH_TERMINAL = 0xFFFFFFF0


def raw_frame(frame_type: int, body: bytes) -> bytes:
    return (1 + len(body)).to_bytes(4, "big") + bytes((frame_type,)) + body


def still_alive(c: Conn) -> None:
    c.send(Ping(token=99))
    assert c.expect_type(Pong) == Pong(token=99)


def connection_error(c: Conn) -> Error:
    err = c.expect_type(Error)
    assert err.request_id is None, err
    return err


@pytest.mark.clause("proto.md §2 unknown or malformed frame", "proto.md §2.1 order of checks")
def test_unknown_frame_type_then_continue(conn: Conn) -> None:
    conn.send_raw(raw_frame(0x70, b"\x01\x00\x04\x00\x00\x00\x01"))
    assert connection_error(conn).code == ErrorCode.UNKNOWN_MESSAGE_TYPE
    still_alive(conn)


@pytest.mark.clause("proto.md §2.1 order of checks", "proto.md §2.1 messages")
def test_server_frame_type_from_client_then_continue(conn: Conn) -> None:
    conn.send(Ok(request_id=5))  # type: ignore[arg-type]
    err = connection_error(conn)
    assert err.code == ErrorCode.UNKNOWN_MESSAGE_TYPE
    assert "OK" in err.message and "Ok " not in err.message, err.message  # the spec's name
    still_alive(conn)


@pytest.mark.clause("proto.md §2.1 order of checks")
def test_server_frame_type_with_a_bad_body_is_still_unknown(conn: Conn) -> None:
    # The direction is checked before the body is decoded (proto.md §2.1).
    conn.send_raw(raw_frame(0xC2, b""))  # OK without its request_id
    assert connection_error(conn).code == ErrorCode.UNKNOWN_MESSAGE_TYPE
    still_alive(conn)


@pytest.mark.clause("proto.md §2.1 messages", "proto.md §3.3 decoder rules")
def test_missing_field_names_the_frame_as_the_spec_does(conn: Conn) -> None:
    conn.send_raw(raw_frame(0x25, b"\x01\x00\x04\x00\x00\x00\x01"))  # KILL without terminals
    err = connection_error(conn)
    assert err.code == ErrorCode.MALFORMED_MESSAGE
    assert "KILL.terminals" in err.message, err.message
    still_alive(conn)


@pytest.mark.parametrize(
    "body",
    [
        b"",  # LIST_TERMINALS without its required request_id
        b"\x01\x00\x03\x00\x00\x01",  # u32 in 3 bytes
        b"\x01\x00\x04\x00\x00\x00\x01\x01\x00\x04\x00\x00\x00\x01",  # duplicate field
        b"\x81\x00\x00\x04\x00\x00\x00\x01",  # non-minimal varint field id
        b"\x01\x00\x09\x00\x00\x00\x01",  # field length past the body
    ],
    ids=["missing", "bad-int", "duplicate", "non-minimal", "overrun"],
)
@pytest.mark.clause("proto.md §2 unknown or malformed frame", "proto.md §3.3 decoder rules")
def test_malformed_body_then_continue(conn: Conn, body: bytes) -> None:
    conn.send_raw(raw_frame(0x30, body))
    assert connection_error(conn).code == ErrorCode.MALFORMED_MESSAGE
    still_alive(conn)


@pytest.mark.parametrize(
    ("frame_type", "body"),
    [
        # RESIZE(request_id 1, terminal 1, cols as 4 bytes, rows 24): a u16 is 2 bytes.
        (
            0x23,
            b"\x01\x00\x04\x00\x00\x00\x01\x02\x00\x04\x00\x00\x00\x01"
            b"\x03\x00\x04\x00\x00\x00\x50\x04\x00\x02\x00\x18",
        ),
        # SEND_SIGNAL whose u8 signal is 2 bytes.
        (0x24, b"\x01\x00\x04\x00\x00\x00\x01\x02\x00\x04\x00\x00\x00\x01\x03\x00\x02\x00\x01"),
    ],
    ids=["u16-in-4", "u8-in-2"],
)
@pytest.mark.clause("proto.md §3.4 UINT width")
def test_an_integer_wider_than_its_field_is_malformed(
    conn: Conn, frame_type: int, body: bytes
) -> None:
    conn.send_raw(raw_frame(frame_type, body))
    err = connection_error(conn)
    assert err.code == ErrorCode.MALFORMED_MESSAGE, err
    still_alive(conn)


@pytest.mark.clause("proto.md §3.3 no allocation by count", "proto.md §3.4 LIST")
def test_huge_declared_count_is_malformed(conn: Conn) -> None:
    # KILL whose terminals list declares 4 billion elements in a few bytes.
    body = b"\x01\x00\x04\x00\x00\x00\x01" + bytes((2, WireType.LIST, 5)) + b"\x80\xd0\xac\xf3\x0e"
    conn.send_raw(raw_frame(0x25, body))
    assert connection_error(conn).code == ErrorCode.MALFORMED_MESSAGE
    still_alive(conn)


@pytest.mark.clause("proto.md §3.3 decoder rules")
def test_unknown_field_ids_are_skipped(conn: Conn) -> None:
    # LIST_TERMINALS(request_id=77) with unknown fields 9 and 300 around it.
    body = (
        bytes((9, WireType.STRING, 3))
        + b"new"
        + b"\x01\x00\x04\x00\x00\x00\x4d"
        + b"\xac\x02"
        + bytes((WireType.BYTES, 2))
        + b"\xff\xff"
    )
    conn.send_raw(raw_frame(0x30, body))
    assert isinstance(conn.reply(77), TerminalList)


def _closed_with_protocol_error(c: Conn, code: ErrorCode) -> None:
    frames = c.drain_until_closed()
    errors = [f for f in frames if isinstance(f, Error)]
    assert errors and errors[0].code == code, frames
    detached = [f for f in frames if isinstance(f, Detached)]
    assert detached and detached[0].reason == DetachReason.PROTOCOL_ERROR, frames


@pytest.mark.clause("proto.md §2 framing")
def test_length_zero_closes(conn: Conn) -> None:
    conn.send_raw(b"\x00\x00\x00\x00")
    _closed_with_protocol_error(conn, ErrorCode.MALFORMED_MESSAGE)


@pytest.mark.clause("proto.md §2 framing")
def test_length_over_16_mib_closes(conn: Conn) -> None:
    conn.send_raw((16 * 1024 * 1024 + 1).to_bytes(4, "big") + b"\x13")
    _closed_with_protocol_error(conn, ErrorCode.FRAME_TOO_LARGE)


@pytest.mark.clause("proto.md §6 errors")
def test_errors_for_unknown_terminal(conn: Conn) -> None:
    t = NO_SUCH_TERMINAL
    requests = [
        Input(request_id=conn.rid(), terminal=t, data=b"x"),
        Resize(request_id=conn.rid(), terminal=t, cols=80, rows=24),
        SendSignal(request_id=conn.rid(), terminal=t, signal=Signal.INT),
        Kill(request_id=conn.rid(), terminals=[t]),
        Subscribe(request_id=conn.rid(), terminal=t),
        MetaGet(request_id=conn.rid(), key="k", terminal=t),
        MetaSet(request_id=conn.rid(), key="k", value=b"v", terminal=t),
    ]
    for req in requests:
        check_error(conn.request(req), ErrorCode.TERMINAL_NOT_FOUND, req.request_id)
    req2 = Unsubscribe(request_id=conn.rid(), terminal=t)
    reply = conn.request(req2)
    assert isinstance(reply, Error) and reply.request_id == req2.request_id
    assert reply.code in (ErrorCode.TERMINAL_NOT_FOUND, ErrorCode.NOT_SUBSCRIBED)


@pytest.mark.clause("proto.md §5 one reply per request")
def test_pipelined_requests_each_get_exactly_one_reply(conn: Conn) -> None:
    ids = []
    for i in range(40):
        rid = conn.rid()
        ids.append(rid)
        if i % 2:
            conn.send(MetaSet(request_id=rid, key=f"conformance.pipe.{i}", value=b"%d" % i))
        else:
            conn.send(ListTerminals(request_id=rid))
    got = [conn.reply(rid) for rid in reversed(ids)]
    for i, frame in zip(reversed(range(40)), got, strict=True):
        assert isinstance(frame, Ok if i % 2 else TerminalList), frame
    # No second reply for any of them.
    conn.poll(0.2)
    assert not [f for f in conn.backlog if getattr(f, "request_id", None) in ids]
    value = conn.request(MetaGet(request_id=conn.rid(), key="conformance.pipe.39"))
    assert isinstance(value, MetadataValue) and value.value == b"39"


@pytest.mark.clause("proto.md §9 ending a connection")
def test_detach(conn: Conn) -> None:
    from .catalog import Detach

    conn.send(Detach())
    frames = conn.drain_until_closed()
    assert any(isinstance(f, Detached) and f.reason == DetachReason.REQUESTED for f in frames)


@pytest.mark.clause("proto.md §3.4 enumerations")
def test_unknown_role_is_invalid(conn: Conn) -> None:
    from .catalog import Spawn, TerminalSpawned

    t = conn.request(Spawn(request_id=conn.rid(), argv=["/bin/sh"]))
    assert isinstance(t, TerminalSpawned)
    try:
        rid = conn.rid()
        reply = conn.request(Subscribe(request_id=rid, terminal=t.terminal, role=7))
        check_error(reply, ErrorCode.INVALID_COMMAND, rid)
    finally:
        conn.request(Kill(request_id=conn.rid(), terminals=[t.terminal]))


@pytest.mark.parametrize(
    "frame",
    [ListTerminals(request_id=0), MetaGet(request_id=0, key="conf.zero")],
    ids=["list", "meta-get"],
)
@pytest.mark.clause("proto.md §5 request id 0")
def test_request_id_zero_is_refused(conn: Conn, frame: ListTerminals | MetaGet) -> None:
    # Id 0 is BOOTSTRAP_BEGIN's "nobody asked" (proto.md §5): a request may not use it.
    conn.send(frame)
    err = conn.expect_type(Error)
    assert err.code == ErrorCode.INVALID_COMMAND, err
    assert err.request_id == 0, err
    still_alive(conn)
    assert not [f for f in conn.backlog if isinstance(f, (TerminalList, MetadataValue))]


@pytest.mark.clause("proto.md §5 request id 0")
def test_subscribe_with_request_id_zero_starts_no_bootstrap(conn: Conn) -> None:
    conn.send(Subscribe(request_id=0, terminal=NO_SUCH_TERMINAL))
    err = conn.expect_type(Error)
    assert err.code == ErrorCode.INVALID_COMMAND, err


INPUT_FRAMING = 29
"""spec/input.md §3: what an INPUT's length field counts besides its data, at most."""


@pytest.mark.clause("input.md §3 size")
def test_an_input_of_max_frame_is_read(conn: Conn) -> None:
    """An INPUT with the largest request id and terminal, both flags and
    ``max_frame − 29`` bytes of data fills ``max_frame`` exactly and is read (here
    answered for its unknown terminal); one byte more is too large."""
    assert conn.hello_ok is not None
    max_frame = conn.hello_ok.max_frame
    rid = 0xFFFFFFFF

    def frame(size: int) -> bytes:
        data = b"x" * size
        return encode_frame(
            Input(request_id=rid, terminal=NO_SUCH_TERMINAL, data=data, more=True, urgent=True)
        )

    fits = frame(max_frame - INPUT_FRAMING)
    assert int.from_bytes(fits[:4], "big") == max_frame
    conn.send_raw(fits)
    check_error(conn.reply(rid), ErrorCode.TERMINAL_NOT_FOUND, rid)
    conn.send_raw(frame(max_frame - INPUT_FRAMING + 1))
    _closed_with_protocol_error(conn, ErrorCode.FRAME_TOO_LARGE)


_MALFORMED = json.loads(
    (Path(__file__).resolve().parents[1] / "spec/vectors/malformed.json").read_text()
)["vectors"]


@pytest.mark.parametrize(
    "vector", [v for v in _MALFORMED if v["server_code"]], ids=lambda v: v["name"]
)
@pytest.mark.clause("proto.md §2.1 order of checks", "proto.md §3.3 decoder rules")
def test_every_malformed_vector_is_answered_its_server_code(
    conn: Conn, vector: dict[str, Any]
) -> None:
    """spec/vectors/malformed.json, sent by a client: the ERROR its ``server_code``
    names, then the connection goes on, or closes when ``fatal``."""
    conn.send_raw(bytes.fromhex(vector["hex"]))
    code = ErrorCode[vector["server_code"]]
    if vector["fatal"]:
        _closed_with_protocol_error(conn, code)
        return
    assert connection_error(conn).code == code
    still_alive(conn)

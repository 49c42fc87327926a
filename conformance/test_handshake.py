"""Handshake (spec/proto.md §4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .catalog import (
    PROTOCOL_VERSION,
    Error,
    ErrorCode,
    Hello,
    HelloOk,
    ListTerminals,
    Ping,
    Pong,
    TerminalList,
)
from .wire_client import Conn

MAJOR, MINOR, PATCH = PROTOCOL_VERSION
Connect = Callable[..., Conn]


def hello(major: int = MAJOR, minor: int = MINOR, patch: int = PATCH, **kw: object) -> Hello:
    return Hello(client_name="conformance", major=major, minor=minor, patch=patch, **kw)  # type: ignore[arg-type]


@pytest.mark.clause("proto.md §4 rule 2 HELLO_OK")
def test_hello_ok_carries_version_and_limits(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(hello())
    ok = c.expect(lambda f: True)
    assert isinstance(ok, HelloOk)
    assert (ok.major, ok.minor) == (MAJOR, MINOR)
    assert ok.server_id
    assert ok.max_frame >= 1 << 20
    assert ok.max_metadata_value >= 1024
    assert ok.max_subscriptions >= 1
    rid = c.rid()
    assert isinstance(c.request(ListTerminals(request_id=rid)), TerminalList)


@pytest.mark.clause("proto.md §4 rule 1 PING before HELLO")
def test_ping_before_hello(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(Ping(token=0xDEADBEEF12345678))
    assert c.expect(lambda f: True) == Pong(token=0xDEADBEEF12345678)
    c.send(hello())
    assert isinstance(c.expect(lambda f: True), HelloOk)
    c.send(Ping(token=7))
    assert c.expect(lambda f: True) == Pong(token=7)


@pytest.mark.clause("proto.md §4 rule 3 version", "proto.md §4 rule 6 capabilities")
def test_patch_may_differ_and_unknown_capabilities_are_ignored(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(hello(patch=PATCH + 41, capabilities=["x-no-such-capability"]))
    assert isinstance(c.expect(lambda f: True), HelloOk)


def _refused(c: Conn, code: ErrorCode) -> None:
    frames = c.drain_until_closed()
    errors = [f for f in frames if isinstance(f, Error)]
    assert errors, f"expected ERROR {code.name} before close, got {frames}"
    assert errors[0].code == code, errors[0]
    assert errors[0].request_id is None


@pytest.mark.clause("proto.md §4 rule 3 version")
def test_major_mismatch_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(hello(major=MAJOR + 1))
    _refused(c, ErrorCode.VERSION_INCOMPATIBLE)


@pytest.mark.clause("proto.md §4 rule 3 version")
def test_a_newer_minor_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(hello(minor=MINOR + 1))
    _refused(c, ErrorCode.VERSION_INCOMPATIBLE)


@pytest.mark.clause("proto.md §4 rule 3 version")
def test_an_older_minor_is_accepted(connect: Connect) -> None:
    if MINOR == 0:
        pytest.skip("no minor older than 0")
    c = connect(hello=False)
    c.send(hello(minor=MINOR - 1))
    ok = c.expect(lambda f: True)
    assert isinstance(ok, HelloOk) and ok.major == MAJOR
    assert isinstance(c.request(ListTerminals(request_id=c.rid())), TerminalList)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_frame_before_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send(ListTerminals(request_id=1))
    _refused(c, ErrorCode.HANDSHAKE_REQUIRED)


@pytest.mark.clause("proto.md §4 rule 5 second HELLO")
def test_second_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect()
    c.send(hello())
    _refused(c, ErrorCode.DUPLICATE_HELLO)


# Before HELLO the handshake rule comes first (proto.md §4.4): whatever the
# frame is (an unknown type, a server-originated type, a body that does not
# decode, or a HELLO whose body does not decode) the answer is
# HANDSHAKE_REQUIRED and the connection closes; a later HELLO is never read.


def _refused_then_closed_for_good(c: Conn) -> None:
    _refused(c, ErrorCode.HANDSHAKE_REQUIRED)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_unknown_type_before_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send_raw(bytes.fromhex("00000001 70"))
    c.send(hello())
    _refused_then_closed_for_good(c)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_server_type_before_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send_raw(bytes.fromhex("00000001 c2"))  # OK with an empty (undecodable) body
    c.send(hello())
    _refused_then_closed_for_good(c)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_undecodable_frame_before_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send_raw(bytes.fromhex("00000001 30"))  # LIST_TERMINALS without its request_id
    c.send(hello())
    _refused_then_closed_for_good(c)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_undecodable_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send_raw(bytes.fromhex("00000001 01"))  # HELLO without any field
    c.send(hello())
    _refused_then_closed_for_good(c)


@pytest.mark.clause("proto.md §4 rule 4 before HELLO")
def test_undecodable_ping_before_hello_is_refused_and_closed(connect: Connect) -> None:
    c = connect(hello=False)
    c.send_raw(bytes.fromhex("00000007 7f 010003 000001"))  # PING whose u64 token has 3 bytes
    c.send(hello())
    _refused_then_closed_for_good(c)

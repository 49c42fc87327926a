"""Handshake rules, transport-free."""

from __future__ import annotations

from phux.wire import PROTOCOL_VERSION, ErrorCode, ServerHandshake, compatible
from phux.wire.frames import Hello, ListTerminals, Ping

MAJOR, MINOR, PATCH = PROTOCOL_VERSION


def hello(major: int = MAJOR, minor: int = MINOR, patch: int = PATCH) -> Hello:
    return Hello(client_name="t", major=major, minor=minor, patch=patch)


def test_hello_then_requests() -> None:
    hs = ServerHandshake()
    assert hs.check(hello()) is None
    assert hs.done and not hs.fatal
    assert hs.check(ListTerminals(request_id=1)) is None


def test_ping_before_hello_is_allowed() -> None:
    hs = ServerHandshake()
    assert hs.check(Ping(token=1)) is None
    assert not hs.done and not hs.fatal


def test_patch_may_differ() -> None:
    assert ServerHandshake().check(hello(patch=PATCH + 9)) is None
    assert compatible(MAJOR, MINOR)


def test_version_mismatch_is_fatal() -> None:
    for bad in (hello(major=MAJOR + 1), hello(minor=MINOR + 1)):
        hs = ServerHandshake()
        err = hs.check(bad)
        assert err is not None and err.code == ErrorCode.VERSION_INCOMPATIBLE
        assert hs.fatal and not hs.done


def test_frame_before_hello_is_fatal() -> None:
    hs = ServerHandshake()
    err = hs.check(ListTerminals(request_id=1))
    assert err is not None and err.code == ErrorCode.HANDSHAKE_REQUIRED
    assert hs.fatal


def test_duplicate_hello_is_fatal() -> None:
    hs = ServerHandshake()
    assert hs.check(hello()) is None
    err = hs.check(hello())
    assert err is not None and err.code == ErrorCode.DUPLICATE_HELLO
    assert hs.fatal


def test_an_older_minor_of_the_same_major_is_accepted() -> None:
    assert MINOR >= 1
    hs = ServerHandshake()
    assert hs.check(hello(minor=MINOR - 1)) is None
    assert hs.done and hs.minor == MINOR - 1
    assert compatible(MAJOR, 0)
    assert not compatible(MAJOR, MINOR + 1) and not compatible(MAJOR - 1, MINOR)


def test_the_handshake_remembers_the_clients_minor() -> None:
    hs = ServerHandshake()
    assert hs.check(hello()) is None
    assert hs.minor == MINOR

"""Handshake rules, malformed frames and abrupt disconnects never hurt other clients.

One server for the module: what each test does to its own connections must not hurt
the server's other clients, the later tests' included."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from phux.client.deadline import Deadline
from phux.wire import FrameReader, encode_frame
from phux.wire.errors import DetachReason, ErrorCode
from phux.wire.frames import (
    Detach,
    Detached,
    Error,
    Hello,
    Input,
    ListTerminals,
    MetaSet,
    MetaSubscribe,
    Ok,
    Output,
    Ping,
    Pong,
    Subscribe,
    TerminalList,
)

from .harness import RawClient, ServerProcess, running_server, spawn
from .test_flow import MB, follow_to_close, go, pattern, producer, started


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("robustness")) as srv:
        yield srv


def test_ping_before_hello_and_detach(server: ServerProcess) -> None:
    raw = RawClient(server.socket)
    try:
        raw.send(Ping(token=77))
        assert raw.recv() == Pong(token=77)
        raw.hello()
        raw.send(Detach())
        assert raw.recv() == Detached(reason=DetachReason.REQUESTED)
        assert raw.recv() is None
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("first", "code"),
    [
        (ListTerminals(request_id=1), ErrorCode.HANDSHAKE_REQUIRED),
        (Hello(client_name="x", major=2, minor=0, patch=0), ErrorCode.VERSION_INCOMPATIBLE),
        (Hello(client_name="x", major=1, minor=9, patch=0), ErrorCode.VERSION_INCOMPATIBLE),
    ],
)
def test_handshake_refusals_close(server: ServerProcess, first: object, code: int) -> None:
    raw = RawClient(server.socket)
    try:
        raw.send(first)  # type: ignore[arg-type]
        reply = raw.recv()
        assert isinstance(reply, Error) and reply.code == code
        assert raw.recv() is None
    finally:
        raw.close()


def test_duplicate_hello_closes_and_patch_may_differ(server: ServerProcess) -> None:
    raw = RawClient(server.socket)
    try:
        raw.send(Hello(client_name="x", major=1, minor=0, patch=9))
        raw.recv()
        raw.send(Hello(client_name="x", major=1, minor=0, patch=0))
        reply = raw.recv()
        assert isinstance(reply, Error) and reply.code == ErrorCode.DUPLICATE_HELLO
        assert raw.recv() is None
    finally:
        raw.close()


def frame_bytes(frame_type: int, body: bytes) -> bytes:
    return (1 + len(body)).to_bytes(4, "big") + bytes((frame_type,)) + body


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (frame_bytes(0x70, b""), ErrorCode.UNKNOWN_MESSAGE_TYPE),
        (frame_bytes(Input.TYPE, b"\xff\xff"), ErrorCode.MALFORMED_MESSAGE),
        (frame_bytes(Input.TYPE, b""), ErrorCode.MALFORMED_MESSAGE),
        (encode_frame(Output(terminal=1, seq=0, data=b"x")), ErrorCode.UNKNOWN_MESSAGE_TYPE),
    ],
)
def test_bad_frame_inside_framing_is_survivable(
    server: ServerProcess, data: bytes, code: int
) -> None:
    raw = RawClient(server.socket)
    try:
        raw.hello()
        raw.send(data)
        reply = raw.recv()
        assert isinstance(reply, Error) and reply.code == code and reply.request_id is None
        raw.send(ListTerminals(request_id=5))
        assert isinstance(raw.recv(), TerminalList)
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ((0).to_bytes(4, "big"), ErrorCode.MALFORMED_MESSAGE),
        ((64 << 20).to_bytes(4, "big") + b"\x13", ErrorCode.FRAME_TOO_LARGE),
    ],
)
def test_framing_error_detaches(server: ServerProcess, data: bytes, code: int) -> None:
    raw = RawClient(server.socket)
    try:
        raw.hello()
        raw.send(data)
        reply = raw.recv()
        assert isinstance(reply, Error) and reply.code == code
        detached = raw.recv()
        assert isinstance(detached, Detached) and detached.reason == DetachReason.PROTOCOL_ERROR
        assert raw.recv() is None
    finally:
        raw.close()


def test_abuse_and_abrupt_disconnects_do_not_affect_others(server: ServerProcess) -> None:
    total = 12 * MB
    with server.connect() as conn:
        tid = spawn(conn, producer(total, piece=65536, pause=0.002))
        stream = started(conn, tid)
        go(conn, tid)
        for i in range(12):
            raw = RawClient(server.socket)
            raw.hello()
            if i % 3 == 0:  # subscribe, read a little, vanish mid-stream
                raw.send(Subscribe(request_id=1, terminal=tid))
                raw.recv()
            elif i % 3 == 1:  # half a frame, then vanish
                raw.send(frame_bytes(Input.TYPE, b"\x01\x00\x04\x01")[:7])
            else:  # input that is still being written when we vanish
                raw.send(Input(request_id=2, terminal=tid, data=b""))
                raw.send((0).to_bytes(4, "big"))
            raw.close()
        digest, count = follow_to_close(conn, stream, timeout=60)
        assert (digest, count) == (hashlib.sha256(pattern(0, total)).hexdigest(), total)
    with server.connect() as again:
        again.call(
            lambda rid: ListTerminals(request_id=rid),
            Deadline.after(5),
        )


def test_input_ack_only_after_write(server: ServerProcess) -> None:
    raw = RawClient(server.socket)
    try:
        raw.hello()
        with server.connect() as conn:
            tid = spawn(conn, ["cat"])
        raw.send(Input(request_id=9, terminal=tid, data=b"x\n"))
        assert raw.recv() == Ok(request_id=9)
    finally:
        raw.close()


def test_client_that_never_reads_its_events_is_dropped(server: ServerProcess) -> None:
    deaf = RawClient(server.socket)
    try:
        deaf.hello()
        deaf.send(MetaSubscribe(request_id=1, prefix="flood"))
        value = b"v" * 65536
        with server.connect() as conn:
            # 80 MiB of METADATA_CHANGED for a client that reads none of it: over the
            # 64 MiB bound, the server drops it instead of buffering without end.
            ids = [
                conn.submit(lambda rid: MetaSet(request_id=rid, key="flood", value=value))
                for _ in range(1280)
            ]
            for rid in ids:
                conn.wait_reply(rid, Deadline.after(60))
            assert server.proc is not None
            with open(f"/proc/{server.proc.pid}/status") as status:
                rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
            assert rss < 200 * 1024
        deaf.sock.settimeout(10)
        received = 0
        frames = FrameReader()
        last: object = None
        while chunk := deaf.sock.recv(1 << 20):
            received += len(chunk)
            frames.feed(chunk)
            for frame in frames.frames():
                last = frame
        assert received < 70 << 20  # it got what was in flight, then the close
        # ... with a reason, not a silent EOF.
        assert isinstance(last, Detached) and last.reason == DetachReason.SLOW_CONSUMER, last
        assert "replies and events queued" in server.log.read_text()
    finally:
        deaf.close()

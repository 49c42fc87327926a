"""Malformed input: each case gives its own specific DecodeReason."""

from __future__ import annotations

import tracemalloc

import pytest

from phux.wire import (
    MAX_FRAME,
    DecodeReason,
    ErrorCode,
    FrameReader,
    WireError,
    decode_frame,
    encode_frame,
)
from phux.wire.frames import BootstrapReady, Kill, Ok, Output, Ping, Spawn, TerminalList
from phux.wire.tlv import WireType, decode_varint, encode_varint

U32_1 = (1).to_bytes(4, "big")
OK_BODY = bytes((1, WireType.UINT, 4)) + U32_1


def frame(frame_type: int, body: bytes) -> bytes:
    return (1 + len(body)).to_bytes(4, "big") + bytes((frame_type,)) + body


def field(field_id: int, wire_type: int, value: bytes) -> bytes:
    return encode_varint(field_id) + bytes((wire_type,)) + encode_varint(len(value)) + value


def reason_of(data: bytes) -> DecodeReason:
    with pytest.raises(WireError) as info:
        decode_frame(data)
    return info.value.reason


def test_truncated_frames() -> None:
    data = encode_frame(Spawn(request_id=1, argv=["a", "b"]))
    for cut in range(len(data)):
        assert reason_of(data[:cut]) is DecodeReason.TRUNCATED
    # Trailing bytes after one whole frame are not a frame.
    assert reason_of(data + b"\x00") is DecodeReason.TRUNCATED


def test_length_zero_is_fatal() -> None:
    reader = FrameReader()
    reader.feed(b"\x00\x00\x00\x00" + encode_frame(Ok(request_id=1)))
    with pytest.raises(WireError) as info:
        reader.next_frame()
    assert info.value.reason is DecodeReason.EMPTY_FRAME
    assert info.value.code is ErrorCode.MALFORMED_MESSAGE
    assert not info.value.recoverable
    # The reader stays broken: framing is lost.
    with pytest.raises(WireError):
        reader.next_frame()


def test_length_over_maximum_is_fatal_without_waiting_for_the_body() -> None:
    reader = FrameReader()
    reader.feed((MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(WireError) as info:
        reader.next_frame()
    assert info.value.reason is DecodeReason.FRAME_TOO_LARGE
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE
    assert not info.value.recoverable


def test_length_at_maximum_is_accepted_framing() -> None:
    reader = FrameReader()
    reader.feed(MAX_FRAME.to_bytes(4, "big") + b"\x90")
    assert reader.next_frame() is None  # waits for the body, no error


def test_encoder_refuses_oversized_frame() -> None:
    with pytest.raises(ValueError):
        encode_frame(Output(terminal=1, seq=0, data=bytes(MAX_FRAME)))


def test_unknown_frame_type_is_recoverable() -> None:
    reader = FrameReader()
    reader.feed(frame(0x70, b"\x01\x02") + encode_frame(Ok(request_id=1)))
    with pytest.raises(WireError) as info:
        reader.next_frame()
    assert info.value.reason is DecodeReason.UNKNOWN_FRAME_TYPE
    assert info.value.code is ErrorCode.UNKNOWN_MESSAGE_TYPE
    assert info.value.recoverable
    assert reader.next_frame() == Ok(request_id=1)


def test_malformed_body_is_recoverable() -> None:
    reader = FrameReader()
    reader.feed(frame(0xC2, b"") + encode_frame(Ping(token=3)))
    with pytest.raises(WireError) as info:
        reader.next_frame()
    assert info.value.reason is DecodeReason.MISSING_FIELD
    assert info.value.recoverable
    assert reader.next_frame() == Ping(token=3)


def test_unknown_field_ids_are_skipped() -> None:
    body = field(2, WireType.BYTES, b"zz") + OK_BODY + field(1000, WireType.STRUCT, b"\xff")
    assert decode_frame(frame(0xC2, body)) == Ok(request_id=1)
    # An unknown field is not parsed even when its value would be invalid for any type.
    body = OK_BODY + field(5, WireType.LIST, encode_varint(4_000_000_000))
    assert decode_frame(frame(0xC2, body)) == Ok(request_id=1)


def test_absent_fields_take_defaults() -> None:
    body = field(1, WireType.UINT, U32_1)
    assert decode_frame(frame(0x22, body)) == Spawn(request_id=1)
    assert decode_frame(frame(0x7F, b"")) == Ping(token=0)


@pytest.mark.parametrize(
    ("body", "frame_type", "reason"),
    [
        (b"", 0xC2, DecodeReason.MISSING_FIELD),
        (OK_BODY + OK_BODY, 0xC2, DecodeReason.DUPLICATE_FIELD),
        (b"\x81\x00" + bytes((WireType.UINT, 4)) + U32_1, 0xC2, DecodeReason.NON_MINIMAL_VARINT),
        (bytes((1, WireType.UINT, 0x84, 0x00)) + U32_1, 0xC2, DecodeReason.NON_MINIMAL_VARINT),
        (b"\x80" * 10 + b"\x01", 0xC2, DecodeReason.BAD_VARINT),
        (b"\xff" * 9 + b"\x02", 0xC2, DecodeReason.BAD_VARINT),
        (b"\x81", 0xC2, DecodeReason.TRUNCATED),
        (b"\x01", 0xC2, DecodeReason.TRUNCATED),
        (bytes((1, WireType.UINT)), 0xC2, DecodeReason.TRUNCATED),
        (bytes((1, WireType.UINT, 5)) + U32_1, 0xC2, DecodeReason.NESTED_OVERRUN),
        (bytes((1, WireType.UINT, 3)) + U32_1[:3], 0xC2, DecodeReason.BAD_INTEGER),
        (field(1, WireType.BYTES, U32_1), 0xC2, DecodeReason.WIRE_TYPE_MISMATCH),
        (field(1, 8, U32_1), 0xC2, DecodeReason.UNKNOWN_WIRE_TYPE),
        (OK_BODY + field(2, WireType.STRING, b"\xc3\x28"), 0xD1, DecodeReason.BAD_UTF8),
        (
            OK_BODY + field(2, WireType.UNION, b"\x09") + field(3, WireType.UINT, bytes(8)),
            0xA1,
            DecodeReason.UNKNOWN_UNION_TAG,
        ),
        # List: element overruns the list value; bytes left after the last element.
        (OK_BODY + field(2, WireType.LIST, b"\x01\x05" + U32_1), 0x25, DecodeReason.NESTED_OVERRUN),
        (
            OK_BODY + field(2, WireType.LIST, b"\x01\x04" + U32_1 + b"\x00"),
            0x25,
            DecodeReason.BAD_COUNT,
        ),
        # Nested struct: an inner field overruns the struct's own length.
        (
            OK_BODY
            + field(2, WireType.LIST, b"\x01\x05" + field(1, WireType.UINT, U32_1)[:4] + b"\x09"),
            0xC4,
            DecodeReason.NESTED_OVERRUN,
        ),
    ],
)
def test_specific_reasons(body: bytes, frame_type: int, reason: DecodeReason) -> None:
    assert reason_of(frame(frame_type, body)) is reason


def test_bool_must_be_zero_or_one() -> None:
    good = encode_frame(BootstrapReady(terminal=1, next_seq=0, cols=1, rows=1, alive=True))
    # The alive field is "05 02 01 01": make its value 2.
    idx = good.index(bytes((5, WireType.BOOL, 1, 1)))
    bad = bytearray(good)
    bad[idx + 3] = 2
    assert reason_of(bytes(bad)) is DecodeReason.BAD_BOOL


@pytest.mark.parametrize("count", [4_000_000_000, (1 << 64) - 1, 6])
def test_huge_declared_count_allocates_nothing(count: int) -> None:
    body = OK_BODY + field(2, WireType.LIST, encode_varint(count) + b"\x00" * 4)
    data = frame(0x25, body)
    tracemalloc.start()
    try:
        with pytest.raises(WireError) as info:
            decode_frame(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.reason is DecodeReason.BAD_COUNT
    assert peak < 64 * 1024


def test_huge_declared_length_allocates_nothing() -> None:
    body = field(1, WireType.UINT, U32_1)[:2] + encode_varint(4_000_000_000)
    data = frame(0xC2, body)
    tracemalloc.start()
    try:
        with pytest.raises(WireError) as info:
            decode_frame(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.reason is DecodeReason.NESTED_OVERRUN
    assert peak < 64 * 1024


def test_nested_list_of_structs_round_trips() -> None:
    tl = TerminalList(request_id=1)
    assert decode_frame(encode_frame(tl)) == tl
    assert decode_frame(encode_frame(Kill(request_id=1, terminals=[]))) == Kill(
        request_id=1, terminals=[]
    )


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16384, b"\x80\x80\x01"),
        ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_table(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0, len(encoded)) == (value, len(encoded))


def test_varint_out_of_range_refused_by_encoder() -> None:
    with pytest.raises(ValueError):
        encode_varint(-1)
    with pytest.raises(ValueError):
        encode_varint(1 << 64)


def test_integer_out_of_range_refused_by_encoder() -> None:
    with pytest.raises(ValueError):
        encode_frame(Ok(request_id=1 << 32))
    with pytest.raises(ValueError):
        encode_frame(Ok(request_id=-1))


def test_an_incomplete_frame_shows_its_size_and_request_id_before_it_is_whole() -> None:
    from phux.wire.frames import Input
    from phux.wire.framing import peek_request_id

    frame = encode_frame(Input(request_id=70000, terminal=3, data=b"d" * 100_000))
    reader = FrameReader()
    reader.feed(frame[:4])
    assert reader.incomplete() is None  # not even the type yet
    reader.feed(frame[4:40])
    head = reader.incomplete()
    assert head is not None
    kind, size, body = head
    assert (kind, size) == (Input.TYPE, len(frame))
    assert peek_request_id(kind, body) == 70000
    assert peek_request_id(kind, body[:5]) is None  # not all of it here yet
    assert peek_request_id(Ping.TYPE, encode_frame(Ping(token=5))[5:]) is None  # no request id
    reader.feed(frame[40:])
    assert reader.incomplete() is None
    assert reader.next_frame() == Input(request_id=70000, terminal=3, data=b"d" * 100_000)

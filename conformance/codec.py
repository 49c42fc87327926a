"""The conformance suite's own wire codec, written from spec/proto.md alone.

It needs nothing but the standard library and ``catalog.py`` (the frame
catalog as dataclasses), so the suite runs against a server of any
implementation without this repository's package. It is proven the way any
implementation is: tests/wire/test_conformance_codec.py feeds it every
vector of spec/vectors/.
"""

from __future__ import annotations

from typing import Any

from .catalog import (
    EXIT_STATUS_VARIANTS,
    FRAMES_BY_TYPE,
    MAX_FRAME,
    RECORDS_BY_NAME,
    DecodeReason,
    Frame,
    Record,
    WireType,
)

HEADER = 4
CLIENT_TYPES = range(0x00, 0x80)
_U64_MAX = (1 << 64) - 1
_INT_WIDTHS = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "i32": 4, "i64": 8}
_TAGS = {cls.TAG: cls for cls in EXIT_STATUS_VARIANTS}  # type: ignore[attr-defined]


class DecodeError(Exception):
    """A byte string that is not a valid frame; ``reason`` as spec/frames.md names it.

    ``recoverable``: the framing is intact and the stream can go on.
    """

    def __init__(self, reason: DecodeReason, detail: str = "", *, recoverable: bool = False):
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
        self.recoverable = recoverable


# ---------------------------------------------------------------- varints


def encode_varint(value: int) -> bytes:
    if not 0 <= value <= _U64_MAX:
        raise ValueError(f"varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise DecodeError(DecodeReason.TRUNCATED, "varint")
        if pos - start >= 10:
            raise DecodeError(DecodeReason.BAD_VARINT, "longer than 10 bytes")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    if value > _U64_MAX:
        raise DecodeError(DecodeReason.BAD_VARINT, "over 64 bits")
    if byte == 0 and pos - start > 1:
        raise DecodeError(DecodeReason.NON_MINIMAL_VARINT)
    return value, pos


# ---------------------------------------------------------------- values


def _wire_type(spec: str) -> WireType:
    if spec in _INT_WIDTHS:
        return WireType.SINT if spec[0] == "i" else WireType.UINT
    if spec.startswith("list<"):
        return WireType.LIST
    return {
        "bool": WireType.BOOL,
        "string": WireType.STRING,
        "bytes": WireType.BYTES,
        "ExitStatus": WireType.UNION,
    }.get(spec, WireType.STRUCT)


def encode_value(spec: str, value: Any) -> bytes:
    if spec in _INT_WIDTHS:
        return int(value).to_bytes(_INT_WIDTHS[spec], "big", signed=spec[0] == "i")
    if spec == "bool":
        return b"\x01" if value else b"\x00"
    if spec == "string":
        return str(value).encode("utf-8")
    if spec == "bytes":
        return bytes(value)
    if spec.startswith("list<"):
        item = spec[5:-1]
        out = [encode_varint(len(value))]
        for element in value:
            data = encode_value(item, element)
            out += [encode_varint(len(data)), data]
        return b"".join(out)
    if spec == "ExitStatus":
        return encode_varint(type(value).TAG) + encode_record(value)
    return encode_record(value)


def decode_value(spec: str, buf: bytes, start: int, end: int) -> Any:
    size = end - start
    if spec in _INT_WIDTHS:
        if size != _INT_WIDTHS[spec]:
            raise DecodeError(DecodeReason.BAD_INTEGER, f"{spec} in {size} bytes")
        return int.from_bytes(buf[start:end], "big", signed=spec[0] == "i")
    if spec == "bool":
        if size != 1 or buf[start] > 1:
            raise DecodeError(DecodeReason.BAD_BOOL)
        return buf[start] == 1
    if spec == "string":
        try:
            return bytes(buf[start:end]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(DecodeReason.BAD_UTF8, str(exc)) from None
    if spec == "bytes":
        return bytes(buf[start:end])
    if spec.startswith("list<"):
        item = spec[5:-1]
        count, pos = decode_varint(buf, start, end)
        if count > end - pos:
            raise DecodeError(DecodeReason.BAD_COUNT, f"{count} elements in {end - pos} bytes")
        items = []
        for _ in range(count):
            length, pos = decode_varint(buf, pos, end)
            if length > end - pos:
                raise DecodeError(DecodeReason.NESTED_OVERRUN, "list element")
            items.append(decode_value(item, buf, pos, pos + length))
            pos += length
        if pos != end:
            raise DecodeError(DecodeReason.BAD_COUNT, "bytes after the last element")
        return items
    if spec == "ExitStatus":
        tag, pos = decode_varint(buf, start, end)
        if tag not in _TAGS:
            raise DecodeError(DecodeReason.UNKNOWN_UNION_TAG, f"tag {tag}")
        return decode_record(_TAGS[tag], buf, pos, end)
    return decode_record(RECORDS_BY_NAME[spec], buf, start, end)


# ---------------------------------------------------------------- records


def encode_record(record: Record) -> bytes:
    out = []
    for field_id, name, spec in record.FIELDS:
        value = getattr(record, name)
        if value is None:
            continue
        data = encode_value(spec, value)
        out += [encode_varint(field_id), bytes((_wire_type(spec),)), encode_varint(len(data)), data]
    return b"".join(out)


def decode_record(cls: type[Record], buf: bytes, start: int, end: int) -> Any:
    by_id = {field_id: (name, spec) for field_id, name, spec in cls.FIELDS}
    values: dict[str, Any] = {}
    pos = start
    while pos < end:
        field_id, pos = decode_varint(buf, pos, end)
        if pos >= end:
            raise DecodeError(DecodeReason.TRUNCATED, "wire type")
        wire_type = buf[pos]
        pos += 1
        if wire_type > max(WireType):
            raise DecodeError(DecodeReason.UNKNOWN_WIRE_TYPE, f"field {field_id}: {wire_type}")
        length, pos = decode_varint(buf, pos, end)
        if length > end - pos:
            raise DecodeError(DecodeReason.NESTED_OVERRUN, f"field {field_id}")
        known = by_id.get(field_id)
        if known is not None:
            name, spec = known
            if name in values:
                raise DecodeError(DecodeReason.DUPLICATE_FIELD, name)
            if wire_type != _wire_type(spec):
                raise DecodeError(DecodeReason.WIRE_TYPE_MISMATCH, name)
            values[name] = decode_value(spec, buf, pos, pos + length)
        pos += length
    try:
        return cls(**values)
    except TypeError as exc:  # a required field (no default) is absent
        raise DecodeError(DecodeReason.MISSING_FIELD, f"{cls.__name__}: {exc}") from None


# ---------------------------------------------------------------- frames


def encode_frame(frame: Frame) -> bytes:
    body = encode_record(frame)
    return (1 + len(body)).to_bytes(4, "big") + bytes((frame.TYPE,)) + body


class FrameReader:
    """Feed bytes in any split; take whole frames back (``next_frame`` is None when short)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._broken: DecodeError | None = None

    def feed(self, data: bytes) -> None:
        if self._broken is None:
            self._buf += data

    def next_frame(self) -> Frame | None:
        if self._broken is not None:
            raise self._broken
        if len(self._buf) < HEADER:
            return None
        length = int.from_bytes(self._buf[:HEADER], "big")
        if length == 0 or length > self._max:
            reason = DecodeReason.EMPTY_FRAME if length == 0 else DecodeReason.FRAME_TOO_LARGE
            self._broken = DecodeError(reason, f"length {length}")
            raise self._broken
        if len(self._buf) < HEADER + length:
            return None
        frame_type = self._buf[HEADER]
        body = bytes(self._buf[HEADER + 1 : HEADER + length])
        del self._buf[: HEADER + length]
        cls = FRAMES_BY_TYPE.get(frame_type)
        if cls is None:
            raise DecodeError(
                DecodeReason.UNKNOWN_FRAME_TYPE, f"0x{frame_type:02X}", recoverable=True
            )
        try:
            frame: Frame = decode_record(cls, body, 0, len(body))
        except DecodeError as exc:
            exc.recoverable = True
            raise
        return frame

    def frames(self) -> list[Frame]:
        """Every whole frame buffered so far (raises on the first bad one)."""
        out = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out

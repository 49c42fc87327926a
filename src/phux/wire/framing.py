"""Framing: ``u32 BE length | type u8 | body``, and an incremental reader."""

from __future__ import annotations

from phux.record import fields
from phux.wire.errors import DecodeReason, WireError
from phux.wire.frames import FRAMES_BY_TYPE, Frame
from phux.wire.tlv import WireType, decode_struct, encode_struct, item_budget, spec_name

MAX_FRAME = 16 * 1024 * 1024
"""Largest allowed length field (type byte plus body)."""

HEADER = 4

CLIENT_TYPES = range(0x00, 0x80)
"""Frame types a client sends (spec/proto.md §2); servers send 0x80-0xFF."""


def encode_frame(frame: Frame) -> bytes:
    body = encode_struct(frame)
    length = 1 + len(body)
    if length > MAX_FRAME:
        raise ValueError(f"{type(frame).__name__} of {length} bytes exceeds {MAX_FRAME}")
    return length.to_bytes(4, "big") + bytes((frame.TYPE,)) + body


def decode_body(frame_type: int, buf: bytes, start: int, end: int) -> Frame:
    cls = FRAMES_BY_TYPE.get(frame_type)
    if cls is None:
        raise WireError(DecodeReason.UNKNOWN_FRAME_TYPE, f"0x{frame_type:02X}", recoverable=True)
    try:
        return decode_struct(cls, buf, start, end)
    except WireError as exc:
        raise WireError(exc.reason, exc.detail, recoverable=True) from None


def decode_frame(data: bytes) -> Frame:
    """Decode exactly one whole frame; anything short, long or malformed raises WireError."""
    reader = FrameReader()
    reader.feed(data)
    frame = reader.next_frame()
    if frame is None:
        raise WireError(DecodeReason.TRUNCATED, f"{len(data)} bytes")
    if reader.buffered:
        raise WireError(DecodeReason.TRUNCATED, f"{reader.buffered} bytes after the frame")
    return frame


class FrameReader:
    """Feed it bytes in any split; take whole frames back.

    A framing error (length 0 or over the maximum) is not recoverable: the
    reader stays broken and every later call raises it again. A bad frame
    inside intact framing (unknown type, malformed body) is consumed and
    raised once with ``recoverable=True``; the next frames decode normally.

    ``peer_types`` is the range of types the peer may send (a server reads
    ``CLIENT_TYPES``): any other type is an unknown frame type, decided from
    the type byte before the body is looked at (spec/proto.md §2.1).
    """

    def __init__(
        self,
        max_frame: int = MAX_FRAME,
        *,
        peer_types: range | None = None,
        max_items: int | None = None,
    ) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._items = max_items
        self._broken: WireError | None = None
        self._peer_types = peer_types

    @property
    def max_frame(self) -> int:
        """The largest length accepted from now on (a server raises it after HELLO)."""
        return self._max

    @max_frame.setter
    def max_frame(self, value: int) -> None:
        self._max = value

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def incomplete(self, prefix: int = 16) -> tuple[int, int, bytes] | None:
        """The frame at the front while only part of it is here, as (type, the bytes
        the whole frame takes, up to ``prefix`` bytes of its body); None when no
        frame is started, or it is whole (or its length is bad: next_frame raises).

        A server uses it to refuse a large frame before holding it: the size is
        known from the first five bytes, the request id from the body's first.
        """
        buf = self._buf
        if self._broken is not None or len(buf) <= HEADER:
            return None
        length = int.from_bytes(buf[:4], "big")
        if length == 0 or length > self._max or len(buf) >= HEADER + length:
            return None
        return buf[HEADER], HEADER + length, bytes(buf[HEADER + 1 : HEADER + 1 + prefix])

    def feed(self, data: bytes) -> None:
        if self._broken is None:
            self._buf += data

    def next_frame(self) -> Frame | None:
        if self._broken is not None:
            raise self._broken
        buf = self._buf
        if len(buf) < HEADER:
            return None
        length = int.from_bytes(buf[:4], "big")
        if length == 0 or length > self._max:
            reason = DecodeReason.EMPTY_FRAME if length == 0 else DecodeReason.FRAME_TOO_LARGE
            self._broken = WireError(reason, f"length {length}")
            self._buf = bytearray()
            raise self._broken
        if len(buf) < HEADER + length:
            return None
        frame_type = buf[4]
        if self._peer_types is not None and frame_type not in self._peer_types:
            del buf[: HEADER + length]
            raise _wrong_direction(frame_type)
        body = bytes(buf[HEADER + 1 : HEADER + length])
        del buf[: HEADER + length]
        if self._items is None:
            return decode_body(frame_type, body, 0, len(body))
        with item_budget(self._items):
            return decode_body(frame_type, body, 0, len(body))

    def frames(self) -> list[Frame]:
        """Every whole frame buffered so far (raises on the first bad one)."""
        out = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out


def peek_request_id(frame_type: int, body: bytes) -> int | None:
    """The request id of a frame of ``frame_type`` whose body starts with ``body``,
    when the type has one as its first field and ``body`` holds it (spec/proto.md:
    field 1, wire type UINT, then its length and big-endian value)."""
    cls = FRAMES_BY_TYPE.get(frame_type)
    if cls is None:
        return None
    first = fields(cls)
    if not first or first[0].name != "request_id":
        return None
    if len(body) < 3 or body[0] != 1 or body[1] != WireType.UINT or body[2] > 8:
        return None
    size = body[2]
    if len(body) < 3 + size:
        return None
    return int.from_bytes(body[3 : 3 + size], "big")


def _wrong_direction(frame_type: int) -> WireError:
    cls = FRAMES_BY_TYPE.get(frame_type)
    detail = f"0x{frame_type:02X}"
    if cls is not None:
        detail = f"{spec_name(cls)} ({detail}) is sent by servers only"
    return WireError(DecodeReason.UNKNOWN_FRAME_TYPE, detail, recoverable=True)

"""The sans-I/O wire codec: framing, TLV bodies, the frame catalog, handshake rules.

No sockets, no trio, no pyte: bytes in, frames out, and back. The names below
are loaded on first use (PEP 562), so ``import phux.wire.errors`` does not
build the frame catalog.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.wire.errors import DecodeReason, DetachReason, ErrorCode, WireError
    from phux.wire.frames import ALL_FRAMES, CLIENT_FRAMES, FRAMES_BY_TYPE, SERVER_FRAMES, Frame
    from phux.wire.framing import MAX_FRAME, FrameReader, decode_frame, encode_frame
    from phux.wire.handshake import PROTOCOL_VERSION, ServerHandshake, compatible

_WHERE: dict[str, str] = {
    "DecodeReason": "errors",
    "DetachReason": "errors",
    "ErrorCode": "errors",
    "WireError": "errors",
    "ALL_FRAMES": "frames",
    "CLIENT_FRAMES": "frames",
    "FRAMES_BY_TYPE": "frames",
    "SERVER_FRAMES": "frames",
    "Frame": "frames",
    "MAX_FRAME": "framing",
    "FrameReader": "framing",
    "decode_frame": "framing",
    "encode_frame": "framing",
    "PROTOCOL_VERSION": "handshake",
    "ServerHandshake": "handshake",
    "compatible": "handshake",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"phux.wire.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ALL_FRAMES",
    "CLIENT_FRAMES",
    "FRAMES_BY_TYPE",
    "MAX_FRAME",
    "PROTOCOL_VERSION",
    "SERVER_FRAMES",
    "DecodeReason",
    "DetachReason",
    "ErrorCode",
    "Frame",
    "FrameReader",
    "ServerHandshake",
    "WireError",
    "compatible",
    "decode_frame",
    "encode_frame",
]

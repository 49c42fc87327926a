"""The sans-I/O wire codec: framing, TLV bodies, the frame catalog, handshake rules.

No sockets, no trio, no pyte: bytes in, frames out, and back.
"""

from phux.wire.errors import DecodeReason, DetachReason, ErrorCode, WireError
from phux.wire.frames import ALL_FRAMES, CLIENT_FRAMES, FRAMES_BY_TYPE, SERVER_FRAMES, Frame
from phux.wire.framing import MAX_FRAME, FrameReader, decode_frame, encode_frame
from phux.wire.handshake import PROTOCOL_VERSION, ServerHandshake, compatible

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

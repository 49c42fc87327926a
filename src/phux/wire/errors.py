"""The codec's exception, and the numeric tables the wire shares with its peers."""

from __future__ import annotations

import enum
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from enum import Enum as _EnumBody
    from enum import IntEnum as _IntEnumBody
    from typing import Any, TypeVar

    E = TypeVar("E")

    def enum_of(base: type[enum.Enum]) -> Callable[[E], E]: ...

else:
    # At run time the class statement builds a plain class; enum_of makes it the enum.
    _EnumBody = _IntEnumBody = object

    def enum_of(base: type[enum.Enum]) -> Callable[[type], type[enum.Enum]]:
        """Turn a plain class body into a ``base`` enum, the way the standard library
        declares its own (``enum._simple_enum``: http.HTTPStatus, re.RegexFlag...).

        An ``enum.IntEnum`` class statement costs about twice as much, ~30 us a
        member on a slow machine, and the wire declares seven enums that every
        one-shot verb imports. Where that private helper is missing, the class is
        built by ``base``'s metaclass as usual.
        """
        simple = getattr(enum, "_simple_enum", None)
        if simple is None:
            return lambda body: _rebuild_enum(body, base)
        convert: Callable[[type], type[enum.Enum]] = simple(base)

        def make(body: type) -> type[enum.Enum]:
            made = convert(body)
            if body.__doc__ is None:  # as a class statement leaves it, not "An enumeration."
                made.__doc__ = None
            return made

        return make


def _rebuild_enum(body: type, base: type[enum.Enum]) -> Any:
    """The enum a class statement deriving from ``base`` with ``body``'s namespace makes."""
    meta: Any = type(base)
    namespace = meta.__prepare__(body.__name__, (base,))
    for key, value in vars(body).items():
        if key not in ("__dict__", "__weakref__"):
            namespace[key] = value
    return meta(body.__name__, (base,), namespace)


@enum_of(enum.IntEnum)
class ErrorCode(_IntEnumBody):
    """Codes carried by the ERROR frame (spec/proto.md, "Error codes")."""

    VERSION_INCOMPATIBLE = 1
    UNKNOWN_MESSAGE_TYPE = 2
    MALFORMED_MESSAGE = 3
    FRAME_TOO_LARGE = 4
    HANDSHAKE_REQUIRED = 5
    DUPLICATE_HELLO = 6
    TERMINAL_NOT_FOUND = 104
    TERMINAL_EXITED = 105
    SPAWN_FAILED = 106
    UNIQUE_CONFLICT = 107
    NOT_SUBSCRIBED = 108
    INPUT_CANCELLED = 109
    INVALID_COMMAND = 200
    PERMISSION_DENIED = 201
    RESOURCE_EXHAUSTED = 202
    INTERNAL_ERROR = 65535


@enum_of(enum.IntEnum)
class DetachReason(_IntEnumBody):
    """Why the server ends a connection (DETACHED frame)."""

    REQUESTED = 0
    SERVER_SHUTDOWN = 1
    SESSION_KILLED = 2
    REPLACED = 3
    PROTOCOL_ERROR = 4
    PERMISSION_DENIED = 5
    SLOW_CONSUMER = 6
    """The client did not read: what the server queued for it passed a limit."""
    IDLE = 7
    """The server was at its connection limit and this connection was idle, holding
    nothing: it made room for a new client (since 1.3)."""
    INTERNAL_ERROR = 255


@enum_of(enum.Enum)
class DecodeReason(_EnumBody):
    """Why a byte string is not a valid frame. Each maps to one wire ErrorCode."""

    TRUNCATED = "truncated"
    EMPTY_FRAME = "empty frame"
    FRAME_TOO_LARGE = "frame too large"
    BAD_VARINT = "bad varint"
    NON_MINIMAL_VARINT = "non-minimal varint"
    UNKNOWN_FRAME_TYPE = "unknown frame type"
    MISSING_FIELD = "missing field"
    DUPLICATE_FIELD = "duplicate field"
    WIRE_TYPE_MISMATCH = "wire type mismatch"
    NESTED_OVERRUN = "nested length overrun"
    BAD_INTEGER = "bad integer"
    BAD_BOOL = "bad bool"
    BAD_UTF8 = "bad utf-8"
    BAD_COUNT = "bad count"
    UNKNOWN_UNION_TAG = "unknown union tag"
    UNKNOWN_WIRE_TYPE = "unknown wire type"
    TOO_MANY_ITEMS = "too many fields"

    @property
    def code(self) -> ErrorCode:
        if self is DecodeReason.UNKNOWN_FRAME_TYPE:
            return ErrorCode.UNKNOWN_MESSAGE_TYPE
        if self is DecodeReason.FRAME_TOO_LARGE:
            return ErrorCode.FRAME_TOO_LARGE
        return ErrorCode.MALFORMED_MESSAGE


class WireError(Exception):
    """Any failure to decode (or encode) a frame.

    ``recoverable`` is true when the frame boundary is intact, so the reader
    has consumed the bad frame and the stream can go on (an unknown frame
    type, a malformed body); false when framing itself is broken and the
    connection must be closed.
    """

    def __init__(self, reason: DecodeReason, detail: str = "", *, recoverable: bool = False):
        self.reason = reason
        self.detail = detail
        self.recoverable = recoverable
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)

    @property
    def code(self) -> ErrorCode:
        return self.reason.code

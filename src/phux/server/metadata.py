"""L3 metadata: opaque values under UTF-8 keys, global or per terminal, with subscriptions.

The store does not interpret values; the conventions built on it (sessions,
windows, panes, focus) live in spec/L3.md and in the clients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phux.wire.errors import ErrorCode
from phux.wire.frames import MetaEntry

MAX_KEY_BYTES = 256


class RequestError(Exception):
    """A request cannot be carried out; becomes ERROR(code, message) for its request id."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_key(key: str) -> None:
    size = len(key.encode("utf-8", "surrogatepass"))
    if not 1 <= size <= MAX_KEY_BYTES:
        raise RequestError(
            ErrorCode.INVALID_COMMAND,
            f"metadata key must be 1..{MAX_KEY_BYTES} bytes of UTF-8, got {size}",
        )


def check_value(key: str, value: bytes, limit: int) -> None:
    if len(value) > limit:
        raise RequestError(
            ErrorCode.RESOURCE_EXHAUSTED,
            f"value of {key!r} is {len(value)} bytes, over the limit of {limit}",
        )


def entries(scope: dict[str, bytes], prefix: str = "") -> list[MetaEntry]:
    return [MetaEntry(key=k, value=scope[k]) for k in sorted(scope) if k.startswith(prefix)]


@dataclass(eq=False)
class MetaSubscription:
    sub_id: int
    prefix: str
    deliver: Callable[[int, str, int | None, bytes | None], None]
    """``deliver(sub_id, key, terminal, value)``; value None means deleted."""


class MetadataHub:
    """The global scope and the subscriptions; terminal scopes live on the terminals."""

    def __init__(self) -> None:
        self.global_scope: dict[str, bytes] = {}
        self.subscriptions: set[MetaSubscription] = set()

    def changed(self, key: str, terminal: int | None, value: bytes | None) -> None:
        for sub in list(self.subscriptions):
            if key.startswith(sub.prefix):
                sub.deliver(sub.sub_id, key, terminal, value)

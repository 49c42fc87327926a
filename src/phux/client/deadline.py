"""One absolute deadline per verb, covering connect, handshake and the work."""

from __future__ import annotations

import time

from phux.client.errors import DeadlineExceeded
from phux.record import Record


class Deadline(Record):
    """An absolute point on the monotonic clock, or never (``at`` is None)."""

    at: float | None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        return cls(at=None if seconds is None else time.monotonic() + seconds)

    @classmethod
    def never(cls) -> Deadline:
        return cls(at=None)

    def remaining(self) -> float | None:
        """Seconds left (None for never); raises DeadlineExceeded once past."""
        if self.at is None:
            return None
        left = self.at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("deadline exceeded")
        return left

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def earliest(self, other: Deadline) -> Deadline:
        if self.at is None:
            return other
        if other.at is None:
            return self
        return self if self.at <= other.at else other

"""The engine's one native pass (``_strip.c``), if this install built it: else None.

setup.py builds it where a compiler is, and only there (it is optional). Each user
keeps a pure-Python path, which is also the oracle the native pass is tested against
(tests/engine/test_bulk.py, tests/client/test_line_scan.py); they read ``strip`` here at
each use, so that :func:`pure_path` can take it away."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator


class Strip(Protocol):
    def __call__(self, data: bytes, finals: bytes = ..., /) -> bytes | None: ...


strip: Strip | None
try:
    from phux.engine._strip import strip
except ImportError:  # not built: no compiler at install
    strip = None


@contextmanager
def pure_path() -> Iterator[None]:
    """The pure-Python path for a while, as an install without a compiler runs: the
    tests hold the two paths equal with it, the engine bench measures the fallback."""
    global strip
    saved = strip
    strip = None
    try:
        yield
    finally:
        strip = saved

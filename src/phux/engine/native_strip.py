"""The engine's one native pass (``_strip.c``), if this install built it: else None.

setup.py builds it where a compiler is, and only there (it is optional). Each user
keeps a pure-Python path, which is also the oracle the native pass is tested against
(tests/engine/test_bulk.py, tests/client/test_line_scan.py); they read ``strip`` here at
each use, so that a test can take it away and run the pure path."""

from __future__ import annotations

from typing import Protocol


class Strip(Protocol):
    def __call__(self, data: bytes, finals: bytes = ..., /) -> bytes | None: ...


strip: Strip | None
try:
    from phux.engine._strip import strip
except ImportError:  # not built: no compiler at install
    strip = None

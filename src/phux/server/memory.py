"""Giving freed heap back to the system once a burst is over.

After a burst (thousands of connections, a flood through many queues) the
interpreter frees its objects, but glibc keeps the freed heap mapped: the
server's RSS stayed at 300 MB after the load of issue 15 was gone. When the
RSS has grown since the last look and the server is between bursts, one
``malloc_trim(0)`` returns the free pages (it walks the free chunks; about a
millisecond per hundred MB). Measured by tools/bench/bench_limits.py ("server
RSS 12 s after N connections left").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import trio

from phux.server.log import log

MiB = 1024 * 1024
GROWTH = 16 * MiB
"""Trim only when RSS grew at least this much since the last trim (or the start)."""


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)``, or None where there is no such function (musl, macOS)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c") or "libc.so.6"
    with contextlib.suppress(OSError, AttributeError):
        trim = ctypes.CDLL(name).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return lambda: trim(0)
    return None


async def return_freed_memory(interval_s: float) -> None:
    """Every ``interval_s``, if RSS grew by GROWTH since the last trim, trim."""
    trim = malloc_trim()
    if trim is None:
        return
    mark = rss_bytes()
    while True:
        await trio.sleep(interval_s)
        rss = rss_bytes()
        if rss < mark + GROWTH:
            mark = min(mark, rss)
            continue
        trim()
        after = rss_bytes()
        if rss - after >= MiB:
            log.info(
                "returned %d MiB of freed memory (RSS %d MiB)", (rss - after) // MiB, after // MiB
            )
        mark = after

"""Giving freed heap back to the system once a burst is over.

After a burst (thousands of connections, a flood through many queues) the
interpreter frees its objects, but glibc keeps the freed heap mapped: the
server's RSS stayed at 300 MB after the load of issue 15 was gone. When the
heap holds 16 MiB more freed bytes than at its lowest since the last trim
(glibc's ``mallinfo2``; RSS growth where that is missing), one
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


def rss_bytes(pid: int | None = None) -> int:
    """Resident memory of this process (or of ``pid``), 0 if unknown."""
    try:
        with open(f"/proc/{'self' if pid is None else pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


PUBLISH_STEP = MiB
"""A memory fact is published again once it moved this much (or 1/32 of itself)."""


class MemoryFacts:
    """The server's and its replica helpers' resident memory as the facts
    ``rss_bytes`` and ``replica_rss_bytes`` (spec/L3.md §3), published when they
    moved: so that a client on another machine (``phux status --host``), which
    cannot read this one's /proc, sees them."""

    def __init__(
        self, publish: Callable[[str, str], None], helpers: Callable[[], list[int]]
    ) -> None:
        self._publish = publish
        self._helpers = helpers
        self._shown: dict[str, int] = {}

    def look(self) -> None:
        pids = self._helpers()
        now = {"rss_bytes": rss_bytes()}
        if pids or "replica_rss_bytes" in self._shown:  # (0 once an idle helper was let go)
            now["replica_rss_bytes"] = sum(rss_bytes(pid) for pid in pids)
        for name, value in now.items():
            last = self._shown.get(name)
            if last is None or abs(value - last) >= max(PUBLISH_STEP, last >> 5):
                self._shown[name] = value
                self._publish(name, str(value))

    async def run(self, interval_s: float) -> None:
        while True:
            self.look()
            await trio.sleep(interval_s)


class _Allocator:
    """glibc's ``malloc_trim(0)`` and the free bytes its arenas hold (``mallinfo2``)."""

    def __init__(self, trim: Callable[[], object], free: Callable[[], int] | None) -> None:
        self.trim = trim
        self.free = free


def glibc_allocator() -> _Allocator | None:
    """glibc's allocator calls, or None where there is no ``malloc_trim`` (musl, macOS)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c") or "libc.so.6"
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        free: Callable[[], int] | None = None
        with contextlib.suppress(AttributeError):  # glibc 2.33+

            class Mallinfo2(ctypes.Structure):
                _fields_ = [
                    (field, ctypes.c_size_t)
                    for field in (
                        "arena",
                        "ordblks",
                        "smblks",
                        "hblks",
                        "hblkhd",
                        "usmblks",
                        "fsmblks",
                        "uordblks",
                        "fordblks",
                        "keepcost",
                    )
                ]

            info = libc.mallinfo2
            info.argtypes = []
            info.restype = Mallinfo2

            def free() -> int:
                return int(info().fordblks)

        return _Allocator(lambda: trim(0), free)
    return None


async def return_freed_memory(interval_s: float) -> None:
    """Every ``interval_s``, trim if the heap holds ``GROWTH`` more freed bytes than at
    its lowest since the last trim (or, without ``mallinfo2``, if RSS grew by that).

    Freed bytes, not RSS, are the signal: a trim while a burst is still growing
    leaves RSS at the peak, and the memory freed after it does not lower RSS
    (that is the point of trimming), so RSS alone never asked again and a burst
    could leave its heap mapped for good.
    """
    allocator = glibc_allocator()
    if allocator is None:
        return
    measure = allocator.free or rss_bytes
    low = measure()
    while True:
        await trio.sleep(interval_s)
        now = measure()
        if now < low + GROWTH:
            low = min(low, now)
            continue
        rss = rss_bytes()
        allocator.trim()
        after = rss_bytes()
        if rss - after >= MiB:
            log.info(
                "returned %d MiB of freed memory (RSS %d MiB)", (rss - after) // MiB, after // MiB
            )
        low = measure()

"""The input audit's cost: how fast a server takes many small INPUTs with and without it.

- **input with audit**: the wall time for one connection to have 5000
  one-byte INPUTs (1000 with --quick), pipelined 100 at a time, written to a
  ``cat`` terminal and acknowledged, on a server keeping the audit (one JSON
  line and a SHA-256 per INPUT, appended from the event loop). Baseline: the
  same on a server started with ``--no-audit``, in the same run, alternated
  over several rounds (medians). Target: ~1.0x (keystroke-sized input does
  not feel the audit).
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import Input, Ok, Spawn, TerminalSpawned
from tools.bench.bench_server import phux_server
from tools.bench.harness import Measurement

BENCH = "audit"
WINDOW = 100


@contextlib.contextmanager
def server(directory: Path, *args: str) -> Iterator[Path]:
    with phux_server(directory, *args, "--replicas", "off") as (sock, _):
        yield sock


def inputs_seconds(sock: Path, count: int) -> float:
    with Connection.open(sock, Deadline.after(10), "bench") as conn:
        deadline = Deadline.after(120)
        tid = conn.call_expect(
            lambda rid: Spawn(request_id=rid, argv=["cat"]), TerminalSpawned, deadline
        ).terminal
        start = time.perf_counter()
        sent = 0
        while sent < count:
            rids = [
                conn.submit(lambda rid: Input(request_id=rid, terminal=tid, data=b"x"))
                for _ in range(min(WINDOW, count - sent))
            ]
            for rid in rids:
                assert isinstance(conn.wait_reply(rid, deadline), Ok)
            sent += len(rids)
        return time.perf_counter() - start


def run(quick: bool) -> list[Measurement]:
    count = 1000 if quick else 5000
    rounds = 3 if quick else 7
    with_audit: list[float] = []
    without: list[float] = []
    with tempfile.TemporaryDirectory(prefix="phux-bench-", dir="/tmp") as tmp:
        on_dir, off_dir = Path(tmp, "on"), Path(tmp, "off")
        on_dir.mkdir()
        off_dir.mkdir()
        with server(on_dir) as on, server(off_dir, "--no-audit") as off:
            inputs_seconds(on, WINDOW)  # warm both
            inputs_seconds(off, WINDOW)
            for _ in range(rounds):
                with_audit.append(inputs_seconds(on, count))
                without.append(inputs_seconds(off, count))
    on_rate = count / statistics.median(with_audit)
    off_rate = count / statistics.median(without)
    return [
        Measurement(
            BENCH,
            f"{count} one-byte INPUTs, audit on",
            "INPUT/s",
            on_rate,
            "same, --no-audit",
            off_rate,
            higher_is_better=True,
            target="~1.0x",
        )
    ]

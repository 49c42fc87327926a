"""The input audit's cost: how fast a server takes many small INPUTs with and without it.

- **input with audit**: the wall time for one connection to have 5000
  one-byte INPUTs (1000 with --quick), pipelined 100 at a time, written to a
  ``cat`` terminal and acknowledged, on a server keeping the audit (one JSON
  line and a SHA-256 per INPUT, appended from the event loop). Baseline: the
  same on a server started with ``--no-audit``, in the same run, alternated
  over several rounds (medians). Target: ~1.0x (keystroke-sized input does
  not feel the audit).
- **input with an input subscriber**: the same INPUTs on the ``--no-audit``
  server while a second connection follows the terminal with SUBSCRIBE
  ``input`` (what ``phux record --input`` does), reading every INPUT_WRITTEN
  and echo. Baseline: the same with a plain subscriber (output only), same
  server, alternated. Target: ~1.0x (one more small frame per write).
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ConnectionLost, DeadlineExceeded
from phux.wire.frames import Input, Ok, Spawn, Subscribe, TerminalSpawned
from tools.bench.bench_server import phux_server
from tools.bench.harness import Measurement

BENCH = "audit"
WINDOW = 100


@contextlib.contextmanager
def server(directory: Path, *args: str) -> Iterator[Path]:
    with phux_server(directory, *args, "--replicas", "off") as (sock, _):
        yield sock


@contextlib.contextmanager
def follower(sock: Path, terminal: int, *, with_input: bool) -> Iterator[None]:
    """A second connection subscribed to ``terminal``, read by a thread until the end."""
    stop = threading.Event()
    conn = Connection.open(sock, Deadline.after(10), "bench-follower")
    conn.send(Subscribe(request_id=conn.new_request_id(), terminal=terminal, input=with_input))

    def drain() -> None:
        with contextlib.suppress(ConnectionLost):
            while not stop.is_set():
                with contextlib.suppress(DeadlineExceeded):
                    conn.receive(Deadline.after(0.1))

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
        conn.close()


def inputs_seconds(sock: Path, count: int, follow: bool | None = None) -> float:
    """``follow``: None no subscriber, False a plain one, True one with input events."""
    with Connection.open(sock, Deadline.after(10), "bench") as conn:
        deadline = Deadline.after(120)
        tid = conn.call_expect(
            lambda rid: Spawn(request_id=rid, argv=["cat"]), TerminalSpawned, deadline
        ).terminal
        if follow is None:
            return _type(conn, tid, count, deadline)
        with follower(sock, tid, with_input=follow):
            return _type(conn, tid, count, deadline)


def _type(conn: Connection, tid: int, count: int, deadline: Deadline) -> float:
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
    watched: list[float] = []
    plain: list[float] = []
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
                watched.append(inputs_seconds(off, count, follow=True))
                plain.append(inputs_seconds(off, count, follow=False))
    on_rate = count / statistics.median(with_audit)
    off_rate = count / statistics.median(without)
    return [
        Measurement(
            BENCH,
            f"{count} one-byte INPUTs, an input subscriber (record --input)",
            "INPUT/s",
            count / statistics.median(watched),
            "same, a plain subscriber",
            count / statistics.median(plain),
            higher_is_better=True,
            target="~1.0x",
        ),
        Measurement(
            BENCH,
            f"{count} one-byte INPUTs, audit on",
            "INPUT/s",
            on_rate,
            "same, --no-audit",
            off_rate,
            higher_is_better=True,
            target="~1.0x",
        ),
    ]

"""Replica benchmarks: snapshot of a terminal with a long past, relay and loop latency.

- **snapshot after 50 MB**: a terminal ``cat``s 50 MB (12 MB with --quick) of
  coloured log lines, then idles; the median wall time of ``phux snapshot
  --json @N`` (a fresh CLI process each time: connect, bootstrap, replay,
  project) and the bootstrap bytes a new client receives. Baseline: the same
  with replicas off (the bootstrap is the last 4 MiB of output, replayed).
  Target: under 150 ms.
- **floods** (issue 17): a terminal ``cat``s 50 MB (12 MB with --quick) of
  base64 lines wider than the pane (``base64 -w 120`` on 80 columns), and
  then of bench engine's ``ls --color``-like lines (six coloured names a line,
  tools/bench/bench_engine.py). Of each, with the default replicas ("auto":
  a thread, then a process as soon as output is heavy): the median wall time
  of ``phux snapshot --json`` from 1 s after its last byte went out, against
  replicas off (target: under 150 ms), and against an idle, empty terminal's;
  the replica's lag at its end: the output the server sent its replica and
  the replica had not reported parsed
  (``phux.server.replica_behind``, spec/L3.md §3, as last published: the
  server publishes it at most every 50 ms while output flows, so it can be
  that much of the flood old), against the flood's bytes; how long after its
  end the replica had parsed all of it (a listing shows all of it and
  ``replica_behind`` 0), against the flood's own length; and its relay rate
  (its bytes over the time from its first to its last byte, as listings of
  the terminal polled every 5 ms saw them), against replicas off, to read the
  lag against. Also printed, the journal bytes a bootstrap carried after the
  newest checkpoint at the flood's end. ``python -m
  tools.bench.bench_replica [--quick] --floods`` runs only these.
- **snapshot of top**: ``top -d 0.05`` running for 60 s (15 s with --quick; as
  many refreshes as 10 minutes of ``top -d 0.5``), measured the same way.
  ``PHUX_BENCH_TOP_SECONDS=600`` runs it for the issue's full 10 minutes.

The snapshots run the ``phux`` console script of a fresh venv holding phux as
a user installs it (tools/bench/installed.py), against servers with the
default replicas ("auto").
- **relay** and **loop latency** (tools/bench/bench_server.py's figures) with
  replicas in a thread, in a process and "auto" (the default: a thread, a
  process while output is heavy), against replicas off; relay also against tmux.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    ListTerminals,
    Subscribe,
    TerminalList,
)
from tools.bench import bench_server as bs
from tools.bench.harness import Measurement, median_seconds
from tools.bench.installed import installed_bin

BENCH = "replica"
MB = 1_000_000


def make_log(path: Path, size: int) -> None:
    rng = random.Random(5)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"error", b"warn", b"info", b"ok"]
    with path.open("wb") as f:
        written = 0
        n = 0
        while written < size:
            lines = []
            for _ in range(1000):
                n += 1
                body = b" ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
                lines.append(b"\x1b[3%dm%08d\x1b[0m %s\n" % (n % 8, n, body))
            block = b"".join(lines)
            f.write(block)
            written += len(block)


def make_base64(path: Path, size: int, width: int = 120) -> int:
    """``base64 -w WIDTH /dev/urandom | head -c SIZE``; the number of line feeds."""
    rng = random.Random(9)
    feeds = 0
    with path.open("wb") as f:
        written = 0
        while written < size:
            raw = base64.b64encode(rng.randbytes(width * 3 // 4 * 1000))
            block = b"".join(raw[i : i + width] + b"\n" for i in range(0, len(raw), width))
            block = block[: size - written]
            f.write(block)
            written += len(block)
            feeds += block.count(b"\n")
    return feeds


def make_ls_color(path: Path, size: int) -> int:
    """bench engine's ``ls --color``-like lines (tools/bench/bench_engine.py), ended by
    a bare LF as ``ls`` writes them: the PTY turns each into CR LF, so the replica
    parses the very bytes bench engine feeds its engine. The number of line feeds."""
    # Imported here: bench_engine brings pyte and phux.engine, ~50 ms this module
    # (and its --relay runs) would otherwise pay for one generator.
    from tools.bench.bench_engine import _ls_color

    data = _ls_color(size).replace(b"\r\n", b"\n")
    path.write_bytes(data)
    return data.count(b"\n")


def _listing(conn: Connection, tid: int) -> tuple[int, int | None]:
    """The terminal's next seq, and the server's ``phux.server.replica_behind`` (the
    output its replicas have not reported parsed; None: not published)."""
    reply = conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
    )
    seq = next(t.next_seq for t in reply.terminals if t.terminal == tid)
    facts = {e.key: e.value for e in reply.global_metadata}
    behind = facts.get("phux.server.replica_behind")
    return seq, None if behind is None else int(behind)


class Flood(NamedTuple):
    """What :func:`after_flood` measured."""

    snapshot_ms: float
    """Median ``phux snapshot --json`` from 1 s after the flood's last byte."""
    tail: int
    """Journal bytes after the newest checkpoint in a bootstrap taken at its end."""
    lag: int | None
    """``phux.server.replica_behind`` at its end (None: not published, replicas off)."""
    caught_up: float | None
    """Seconds from its end until the replica had parsed all of it (None: never, or
    no replica)."""
    seconds: float
    """From its first byte to its last, as listings of the terminal saw them."""
    relay_mbs: float
    """Its bytes over those seconds."""


def after_flood(path: Path, feeds: int, mode: str, repeat: int, phux: list[str]) -> Flood:
    """A terminal ``cat``s ``path`` (``feeds`` line feeds) on a server with replicas
    ``mode``: the flood's relay rate, the replica's lag at its end and when it
    caught up, the bootstrap then, and ``phux snapshot --json`` from 1 s after it.

    The flood's first and last byte are when a listing of the terminal (polled)
    first showed output and showed all of it; its lag is the
    ``phux.server.replica_behind`` the listing that saw its end carried (output
    sent to the replica that it has not reported parsed), and it has caught up
    when a listing shows all of it and nothing behind (:func:`_caught_up`)."""
    # The PTY turns each LF into CR LF: the flood ends at this seq.
    total = path.stat().st_size + feeds
    os.environ["PHUX_REPLICAS"] = mode
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="phux-bench-"))
        sock, _proc = stack.enter_context(bs.phux_server(Path(tmp)))
        os.environ.pop("PHUX_REPLICAS", None)
        conn = stack.enter_context(bs.connect(sock))
        tid = bs.spawn(conn, ["sh", "-c", f"cat {path}; exec sleep 3600"])
        deadline = time.monotonic() + 300
        first: tuple[float, int] | None = None
        seen = -1
        stable = 0.0
        while True:
            seq, behind = _listing(conn, tid)
            now = time.monotonic()
            if first is None and seq > 0:
                first = (now, seq)
            if seq >= total or (seq == seen and now > stable + 0.5):
                break  # (or no CR LF translation: output stopped growing)
            if seq != seen:
                seen, stable = seq, now
            if now > deadline:
                raise RuntimeError(f"the flood did not end: {seq} of {total} bytes")
            time.sleep(0.005)
        end = now
        start, start_seq = first or (end, seq)
        seconds = end - start
        caught: list[float | None] = []
        watcher = threading.Thread(
            target=lambda: caught.append(_caught_up(sock, tid, seq, end)), daemon=True
        )
        if behind is not None:
            watcher.start()
        _checkpoint, tail = bootstrap_bytes(sock, tid)
        time.sleep(max(0.0, end + 1.0 - time.monotonic()))
        env = {**os.environ, "PHUX_SOCKET": str(sock)}
        cmd = [*phux, "snapshot", "--json", f"@{tid}"]
        samples = []
        for _ in range(repeat):
            begin = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True, timeout=60)
            samples.append(time.perf_counter() - begin)
        if behind is not None:
            watcher.join()
    return Flood(
        snapshot_ms=statistics.median(samples) * 1000,
        tail=tail,
        lag=behind,
        caught_up=caught[0] if caught else None,
        seconds=seconds,
        relay_mbs=(seq - start_seq) / MB / seconds if seconds > 0 else float("inf"),
    )


def _caught_up(sock: Path, tid: int, seq: int, end: float, limit: float = 60) -> float | None:
    """Seconds after ``end`` until a listing shows the terminal's output to ``seq`` and
    ``phux.server.replica_behind`` 0: the replica had parsed all of it (None: not
    within ``limit`` seconds). Polled: the server publishes 0 at once, but during a
    flood it may touch 0 between reads, so only a listing that also shows the
    flood's end tells."""
    with bs.connect(sock) as conn:
        while time.monotonic() < end + limit:
            now_seq, behind = _listing(conn, tid)
            if now_seq >= seq and behind == 0:
                return time.monotonic() - end
            time.sleep(0.005)
    return None


def bootstrap_bytes(sock: Path, tid: int) -> tuple[int, int]:
    """A new viewer's bootstrap: checkpoint bytes and journal bytes."""
    with bs.connect(sock) as conn:
        conn.submit(lambda rid: Subscribe(request_id=rid, terminal=tid))
        deadline = Deadline.after(30)
        checkpoint = journal = 0
        while True:
            frame = conn.receive(deadline)
            if isinstance(frame, BootstrapBegin):
                checkpoint = journal = 0
            elif isinstance(frame, BootstrapChunk) and frame.terminal == tid:
                if frame.checkpoint:
                    checkpoint += len(frame.data)
                else:
                    journal += len(frame.data)
            elif isinstance(frame, BootstrapReady) and frame.terminal == tid:
                return checkpoint, journal


def settle(sock: Path, tid: int, replicas: bool, timeout: float = 180) -> int:
    """Wait until the replica has caught up (a checkpoint and a tail under 128 KiB);
    the bootstrap's size then."""
    deadline = time.monotonic() + timeout
    while True:
        checkpoint, journal = bootstrap_bytes(sock, tid)
        if not replicas or (checkpoint and journal < 128 * 1024):
            return checkpoint + journal
        if time.monotonic() > deadline:
            raise RuntimeError(f"replica did not catch up: {checkpoint} + {journal} bytes")
        time.sleep(0.5)


def snapshot_pair(
    argv: list[str], run_s: float, repeat: int, phux: list[str]
) -> tuple[tuple[float, int], tuple[float, int]]:
    """``(median ms, bootstrap bytes)`` of ``phux snapshot --json`` with replicas
    on (the default, a process) and off: two servers run ``argv`` side by side
    for ``run_s`` seconds, then are snapshotted round-robin, so the load of this
    shared machine (and a 10-minute run's wall time) falls on both alike."""
    with contextlib.ExitStack() as stack:
        cases = []
        for mode in ("process", "off"):
            os.environ["PHUX_REPLICAS"] = mode
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="phux-bench-"))
            sock, _proc = stack.enter_context(bs.phux_server(Path(tmp)))
            with bs.connect(sock) as conn:
                tid = bs.spawn(conn, argv)
            cases.append((mode, sock, tid))
        os.environ.pop("PHUX_REPLICAS", None)
        time.sleep(run_s)
        sizes = [settle(sock, tid, replicas=mode != "off") for mode, sock, tid in cases]
        calls = []
        for _mode, sock, tid in cases:
            env = {**os.environ, "PHUX_SOCKET": str(sock)}
            cmd = [*phux, "snapshot", "--json", f"@{tid}"]
            calls.append((cmd, env))
        samples: list[list[float]] = [[], []]
        for cmd, env in calls:  # warm-up: bytecode caches, page cache
            subprocess.run(cmd, env=env, capture_output=True, check=True, timeout=60)
        for _ in range(repeat):
            for i, (cmd, env) in enumerate(calls):
                start = time.perf_counter()
                subprocess.run(cmd, env=env, capture_output=True, check=True, timeout=60)
                samples[i].append(time.perf_counter() - start)
        on, off = (statistics.median(x) * 1000 for x in samples)
        return (on, sizes[0]), (off, sizes[1])


def run(quick: bool, only_floods: bool = False) -> list[Measurement]:
    """Every figure (``only_floods``: only issue 17's floods)."""
    results: list[Measurement] = []
    big = (12 if quick else 50) * MB
    top_s = float(os.environ.get("PHUX_BENCH_TOP_SECONDS", 15.0 if quick else 60.0))
    repeat = 7 if quick else 15
    with tempfile.TemporaryDirectory(prefix="phux-bench-") as tmp:
        bindir = installed_bin(Path(tmp))
        phux = [str(bindir / "phux")] if bindir else [sys.executable, "-m", "phux"]
        if not only_floods:
            log = Path(tmp) / "log.txt"
            make_log(log, big)
            cat = ["sh", "-c", f"cat {log}; exec sleep 3600"]
            # Give the replica time to get through the file.
            results.append(_pair_row(f"after {big // MB} MB", cat, 3.0, repeat, phux))
        results.extend(floods(Path(tmp), big, repeat, phux))
        if not only_floods:
            top = ["top", "-d", "0.05"]
            results.append(_pair_row(f"of top after {top_s:.0f} s", top, top_s, repeat, phux))
    if not only_floods:
        results.extend(relay_and_latency(quick))
    return results


def _pair_row(
    what: str, argv: list[str], run_s: float, repeat: int, phux: list[str]
) -> Measurement:
    """:func:`snapshot_pair`'s figure, printed and as a row."""
    (on_ms, on_bytes), (off_ms, off_bytes) = snapshot_pair(argv, run_s, repeat, phux)
    print(f"# {what}: bootstrap {on_bytes} bytes (replicas off: {off_bytes})", file=sys.stderr)
    return Measurement(
        BENCH,
        f"snapshot --json {what} (bootstrap {on_bytes // 1024} KiB)",
        "ms",
        on_ms,
        f"replicas off (bootstrap {off_bytes // 1024} KiB)",
        off_ms,
        higher_is_better=False,
        target="< 150 ms",
    )


FLOODS: list[tuple[str, Callable[[Path, int], int]]] = [
    ("base64", make_base64),
    ("ls --color", make_ls_color),
]
"""Issue 17's floods: name, and the function writing SIZE bytes of it to a file
(returning its line feeds)."""


def floods(directory: Path, size: int, repeat: int, phux: list[str]) -> list[Measurement]:
    """Each of :data:`FLOODS` (``size`` bytes) through :func:`after_flood`, with the
    default (process) replicas and with replicas off."""
    results: list[Measurement] = []
    measured: list[tuple[str, Flood]] = []
    for name, make in FLOODS:
        path = directory / "flood.txt"
        feeds = make(path, size)
        on = after_flood(path, feeds, "process", repeat, phux)
        off = after_flood(path, feeds, "off", repeat, phux)
        relayed = path.stat().st_size + feeds  # (the PTY's CR LF)
        path.unlink()
        measured.append((name, on))
        caught = "never" if on.caught_up is None else f"{on.caught_up:.2f} s after it"
        print(
            f"# {name} flood: relay {on.relay_mbs:.1f} MB/s over {on.seconds:.2f} s"
            f" (replicas off: {off.relay_mbs:.1f} MB/s over {off.seconds:.2f} s);"
            f" replica lag at its end {on.lag} bytes (journal tail after the newest"
            f" checkpoint {on.tail} bytes), caught up {caught}",
            file=sys.stderr,
        )
        flood = f"a {size // MB} MB {name} flood"
        results += [
            Measurement(
                BENCH,
                f"snapshot --json from 1 s after {flood}",
                "ms",
                on.snapshot_ms,
                "replicas off",
                off.snapshot_ms,
                higher_is_better=False,
                target="< 150 ms",
            ),
            Measurement(
                BENCH,
                f"replica lag at the end of {flood}",
                "bytes",
                -1 if on.lag is None else on.lag,
                "bytes in the flood",
                relayed,
                higher_is_better=False,
            ),
            Measurement(
                BENCH,
                f"replica caught up after the end of {flood}",
                "s",
                -1 if on.caught_up is None else on.caught_up,
                "the flood's first to last byte",
                on.seconds,
                higher_is_better=False,
            ),
            Measurement(
                BENCH, f"relay of {flood}", "MB/s", on.relay_mbs, "replicas off", off.relay_mbs
            ),
        ]
    floor = snapshot_floor(repeat, phux)
    print(f"# snapshot --json of an idle, empty terminal: {floor:.0f} ms", file=sys.stderr)
    for name, on in measured:
        results.append(
            Measurement(
                BENCH,
                f"snapshot --json from 1 s after a {size // MB} MB {name} flood",
                "ms",
                on.snapshot_ms,
                "snapshot of an idle, empty terminal",
                floor,
                higher_is_better=False,
            )
        )
    return results


def snapshot_floor(repeat: int, phux: list[str]) -> float:
    """The CLI's own cost: ``phux snapshot --json`` of an empty terminal."""
    with (
        tempfile.TemporaryDirectory(prefix="phux-bench-") as tmp,
        bs.phux_server(Path(tmp)) as (
            sock,
            _proc,
        ),
    ):
        with bs.connect(sock) as conn:
            tid = bs.spawn(conn, ["sleep", "3600"])
        env = {**os.environ, "PHUX_SOCKET": str(sock)}
        cmd = [*phux, "snapshot", "--json", f"@{tid}"]

        def snap() -> None:
            subprocess.run(cmd, env=env, capture_output=True, check=True, timeout=60)

        return median_seconds(snap, repeat=repeat) * 1000


def relay_and_latency(quick: bool) -> list[Measurement]:
    size = (16 if quick else 64) * MB
    samples = 60 if quick else 300
    figures: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="phux-bench-") as tmp:
        directory = Path(tmp)
        data = directory / "data.txt"
        bs.make_file(data, size)
        size = data.stat().st_size
        for mode in ("off", "thread", "process", "auto"):
            os.environ["PHUX_REPLICAS"] = mode
            with bs.phux_server(directory) as (sock, _proc):
                seconds, _received, _tombstones = bs.relay_phux(sock, data)
                busy_p99, _idle = bs.loop_latency(sock, samples)
            figures[mode] = (size / MB / seconds, busy_p99)
            print(
                f"# {mode}: relay {figures[mode][0]:.1f} MB/s, p99 {busy_p99:.1f} ms",
                file=sys.stderr,
            )
        tmux_mbs = size / MB / bs.relay_tmux(directory, data)
    os.environ.pop("PHUX_REPLICAS", None)
    out = []
    for mode in ("thread", "process", "auto"):
        mbs, p99 = figures[mode]
        where = "auto" if mode == "auto" else f"in a {mode}"
        out.append(
            Measurement(
                BENCH,
                f"relay, replicas {where}",
                "MB/s",
                mbs,
                "replicas off",
                figures["off"][0],
            )
        )
        out.append(Measurement(BENCH, f"relay, replicas {where}", "MB/s", mbs, "tmux", tmux_mbs))
        out.append(
            Measurement(
                BENCH,
                f"echo p99 under flood, replicas {where}",
                "ms",
                p99,
                "replicas off",
                figures["off"][1],
                higher_is_better=False,
                target="< 50 ms absolute",
            )
        )
    return out


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tools.bench.harness import format_table

    if "--relay" in sys.argv:
        print(format_table(relay_and_latency("--quick" in sys.argv)))
    elif "--floods" in sys.argv:  # only issue 17's floods: a few minutes, not ten
        print(format_table(run("--quick" in sys.argv, only_floods=True)))
    else:
        print(format_table(run("--quick" in sys.argv)))

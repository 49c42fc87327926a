"""Drawing in the multiplexer: a person types into one pane while four others flood.

One window of five panes: pane 0 runs ``cat`` (the kernel echoes each typed
letter at once), panes 1-4 print a text file over and over. The person's
terminal is a PTY this bench drives (``tools.bench.bench_attach``'s): one
letter at a time, at most one every TYPING_INTERVAL (a person's pace), the
time until it shows in what the attach wrote (escape sequences removed). The
same window in ``tmux attach`` (its status line on), in the same run, is the
baseline. Also: frames per second the attach drew (synchronized updates; the
cap is one per 16 ms over time, a key's echo may use a frame it has in hand),
bytes per second written to the person's terminal, the CPU of the
multiplexer's processes (attach, server and its replica helper; tmux: its
server and client) during the flood, each process's share printed, and the
CPU an attached client uses over IDLE_SECONDS with nothing changing.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tools.bench.bench_attach import _ESCAPES, _Pty
from tools.bench.harness import Measurement, OtherLoad, percentile, phux_server

BENCH = "mux"
TMUX = shutil.which("tmux")
FLOODERS = 4
IDLE_SECONDS = 10.0
SETTLE_SECONDS = 5.0
"""Seconds after the attach started before typing: the figures are the steady state."""
SYNC = b"\x1b[?2026h"
TYPING_INTERVAL = float(os.environ.get("PHUX_BENCH_TYPING_INTERVAL", "0.05"))
"""Seconds from one key to the next at least: a fast typist's 20 keys a second
(``$PHUX_BENCH_TYPING_INTERVAL``; 0: the next key as soon as the echo shows, which
measures the frame cap more than the echo, the attach drawing at most one frame per
16 ms over time)."""
KEYS = b"~^`{}&@"
"""Typed one at a time: in neither the flood (capitals and digits) nor a status line."""


def _flood_file(root: Path) -> Path:
    path = root / "flood.txt"
    path.write_text(
        "".join(
            f"LINE {i:06d} OF THE FLOOD 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
            for i in range(20000)
        )
    )
    return path


def _cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _helpers(pid: int) -> list[int]:
    """The server's replica helper processes (its children running phux.server.replica)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        return []
    found = []
    for child in children:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"phux.server.replica" in f.read():
                    found.append(child)
        except OSError:
            continue
    return found


class _Reader:
    """Reads what the attach writes in the background of the typing: counts bytes
    and synchronized updates, and says when a letter showed."""

    def __init__(self, term: _Pty) -> None:
        self.term = term
        self.bytes = 0
        self.frames = 0
        self.tail = b""
        self.seen = b""  # since the last ``until`` began

    def pump(self, timeout: float) -> None:
        if select.select([self.term.fd], [], [], timeout)[0]:
            try:
                chunk = os.read(self.term.fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                raise RuntimeError("the attached process ended")
            self.bytes += len(chunk)
            self.frames += (self.tail[-8:] + chunk).count(SYNC)
            self.tail = (self.tail + chunk)[-4096:]
            self.seen += chunk

    def until(self, letter: bytes, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        self.seen = b""
        while letter not in _ESCAPES.sub(b"", self.seen):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no echo of {letter!r}")
            self.pump(0.05)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.pump(min(0.02, left))

    def started(self, seconds: float = 30.0) -> None:
        """Until the attach took the terminal (raw mode, the alternate screen)."""
        deadline = time.monotonic() + seconds
        while b"\x1b[?1049h" not in self.tail:
            if time.monotonic() > deadline:
                raise RuntimeError("the attach did not start")
            self.pump(0.05)

    def settle(self, quiet: float = 0.5, seconds: float = 20.0) -> None:
        """Until nothing was written for ``quiet`` seconds (the attach started and drew)."""
        deadline = time.monotonic() + seconds
        last = self.bytes
        while time.monotonic() < deadline:
            self.drain(quiet)
            if self.bytes == last:
                return
            last = self.bytes


def _type(reader: _Reader, count: int, warmup: int) -> list[float]:
    samples: list[float] = []
    for i in range(warmup + count):
        if i and i % 40 == 0:
            os.write(reader.term.fd, b"\r")
        letter = KEYS[i % len(KEYS) : i % len(KEYS) + 1]
        start = time.perf_counter()
        os.write(reader.term.fd, letter)
        reader.until(letter, 10.0)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
        reader.drain(start + TYPING_INTERVAL - time.perf_counter())
    return samples


class Figures:
    def __init__(self) -> None:
        self.echo: list[float] = []
        self.fps = 0.0
        self.bytes_per_s = 0.0
        self.cpu = 0.0
        self.cpu_parts: dict[str, float] = {}
        self.idle_cpu = 0.0


def _measure(
    term: _Pty,
    pids: dict[str, list[int]] | Callable[[], dict[str, list[int]]],
    count: int,
    warmup: int,
    figures: Figures,
) -> None:
    """``pids``: the processes whose CPU is counted, by name (or a function giving
    them once the attach has started: the server's helpers start with it)."""
    reader = _Reader(term)
    reader.started()
    reader.drain(SETTLE_SECONDS)  # the panes' bootstraps (megabytes of journal each)
    named = pids() if callable(pids) else pids
    cpu0 = {name: _cpu_seconds(ids) for name, ids in named.items()}
    b0, f0, t0 = reader.bytes, reader.frames, time.monotonic()
    figures.echo = _type(reader, count, warmup)
    reader.drain(1.0)
    wall = time.monotonic() - t0
    figures.cpu_parts = {
        name: (_cpu_seconds(ids) - cpu0[name]) / wall for name, ids in named.items()
    }
    figures.cpu = sum(figures.cpu_parts.values())
    figures.bytes_per_s = (reader.bytes - b0) / wall
    figures.fps = (reader.frames - f0) / wall


def _idle(term: _Pty, pids: list[int], seconds: float) -> float:
    reader = _Reader(term)
    reader.started()
    reader.settle()
    cpu0 = _cpu_seconds(pids)
    reader.drain(seconds)
    return (_cpu_seconds(pids) - cpu0) / seconds


def _phux(root: Path, flood: Path, count: int, warmup: int, idle: float) -> Figures:
    sock = root / "s"
    env = dict(os.environ, PHUX_SOCKET=str(sock), TERM="xterm-256color")
    for var in ("PHUX_TERMINAL", "TMUX"):
        env.pop(var, None)
    figures = Figures()
    term: _Pty | None = None

    def phux(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "phux", *args],
            env=env,
            check=True,
            capture_output=True,
            timeout=30,
        )

    with phux_server(sock, env) as server:
        try:
            phux("new", "-s", "quiet", "--", "cat")
            phux("split", "quiet", "--", "cat")
            term = _Pty([sys.executable, "-m", "phux", "attach", "quiet"], env)
            figures.idle_cpu = _idle(term, [term.pid], idle)
            term.close()
            phux("new", "-s", "bench", "--", "cat")
            for _ in range(FLOODERS):
                phux("split", "bench:0.0", "--", "sh", "-c", f"while :; do cat {flood}; done")
            term = _Pty([sys.executable, "-m", "phux", "attach", "bench:0.0"], env)
            attach = term.pid
            _measure(
                term,
                lambda: {
                    "attach": [attach],
                    "server": [server.pid],
                    "replicas": _helpers(server.pid),
                },
                count,
                warmup,
                figures,
            )
            return figures
        finally:
            if term is not None:
                term.close()


def _tmux(root: Path, flood: Path, count: int, warmup: int, idle: float) -> Figures:
    assert TMUX is not None
    sock = root / "t.sock"
    env = dict(os.environ, TERM="xterm-256color", SHELL="/bin/sh")
    env.pop("TMUX", None)
    base = [TMUX, "-S", str(sock), "-f", "/dev/null"]

    def tmux(*args: str) -> str:
        return subprocess.run(
            [*base, *args], env=env, check=True, capture_output=True, text=True, timeout=10
        ).stdout

    figures = Figures()
    term: _Pty | None = None
    try:
        tmux("new-session", "-d", "-s", "quiet", "cat")
        tmux("split-window", "-h", "-t", "quiet", "cat")
        server_pid = int(tmux("display-message", "-p", "#{pid}").strip())
        term = _Pty([*base, "attach", "-t", "quiet"], env)
        figures.idle_cpu = _idle(term, [term.pid, server_pid], idle)
        term.close()
        tmux("new-session", "-d", "-s", "bench", "cat")
        for _ in range(FLOODERS):
            tmux("split-window", "-d", "-t", "bench:0.0", f"while :; do cat {flood}; done")
            tmux("select-layout", "-t", "bench", "tiled")
        term = _Pty([*base, "attach", "-t", "bench"], env)
        _measure(term, {"client": [term.pid], "server": [server_pid]}, count, warmup, figures)
        return figures
    finally:
        if term is not None:
            term.close()
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, timeout=10)


def _pace() -> str:
    return f"{1 / TYPING_INTERVAL:.0f} keys/s" if TYPING_INTERVAL > 0 else "keys back to back"


def run(quick: bool) -> list[Measurement]:
    if TMUX is None:
        print("# mux: tmux is not installed; skipped", file=sys.stderr)
        return []
    count, warmup = (60, 5) if quick else (300, 20)
    idle = 2.0 if quick else IDLE_SECONDS
    root = Path(tempfile.mkdtemp(prefix="phux-bm-", dir="/tmp"))
    try:
        flood = _flood_file(root)
        loadavg = os.getloadavg()
        with OtherLoad() as load:
            phux = _phux(root, flood, count, warmup, idle)
            tmux = _tmux(root, flood, count, warmup, idle)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    now = os.getloadavg()
    print(
        f"# mux: other load {load.cpus:.2f} CPUs; load average {loadavg[0]:.2f} before,"
        f" {now[0]:.2f} after",
        file=sys.stderr,
    )
    for name, figures in (("phux", phux), ("tmux", tmux)):
        parts = ", ".join(f"{k} {v:.2f}" for k, v in figures.cpu_parts.items())
        print(f"# mux: {name} CPU while flooding: {parts}", file=sys.stderr)
    ms = 1000.0
    return [
        Measurement(
            BENCH,
            f"echo p99, 4 panes flooding, {_pace()}",
            "ms",
            percentile(phux.echo, 99) * ms,
            "tmux attach",
            percentile(tmux.echo, 99) * ms,
            False,
            "< 50 ms",
        ),
        Measurement(
            BENCH,
            f"echo median, 4 panes flooding, {_pace()}",
            "ms",
            percentile(phux.echo, 50) * ms,
            "tmux attach",
            percentile(tmux.echo, 50) * ms,
            False,
        ),
        Measurement(
            BENCH,
            "frames per second drawn (cap 62.5)",
            "fps",
            phux.fps,
            "the cap",
            1 / 0.016,
            False,
            "<= 62.5",
        ),
        Measurement(
            BENCH,
            "bytes/s to the person's terminal",
            "B/s",
            phux.bytes_per_s,
            "tmux attach",
            tmux.bytes_per_s,
            False,
        ),
        Measurement(
            BENCH,
            "CPU while flooding (client+server+replicas)",
            "CPUs",
            phux.cpu,
            "tmux server+client",
            tmux.cpu,
            False,
        ),
        Measurement(
            BENCH,
            "idle CPU of an attached client, 2 panes",
            "CPUs",
            max(phux.idle_cpu, 1e-4),
            "tmux server+client",
            max(tmux.idle_cpu, 1e-4),
            False,
        ),
    ]

"""The harness every benchmark plugs into.

A bench module is ``tools/bench/bench_<name>.py`` defining
``run(quick: bool) -> list[Measurement]``. Each Measurement pairs a figure
with a baseline measured in the same run, because these machines are too
noisy for absolute numbers to mean much on their own; the ratio is what we
compare across runs and against targets.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measurement:
    """One figure against one baseline. ``ratio`` > 1 always means phux did better."""

    bench: str
    name: str
    unit: str
    value: float
    baseline_name: str
    baseline: float
    higher_is_better: bool = True
    target: str = ""
    # The (lowest, highest) of the runs whose median ``value`` / ``baseline`` is,
    # where a bench reports a median of several runs.
    spread: tuple[float, float] | None = None
    baseline_spread: tuple[float, float] | None = None

    @property
    def ratio(self) -> float:
        if self.higher_is_better:
            return self.value / self.baseline if self.baseline else float("inf")
        return self.baseline / self.value if self.value else float("inf")


@contextmanager
def phux_server(sock: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A phux server on ``sock`` with ``env``, listening when this yields, stopped
    after. A bench's first CLI call must not come before: it would start a daemon of
    its own on the socket, whose CPU the figures miss and which nothing stops."""
    server = subprocess.Popen(
        [sys.executable, "-m", "phux", "server", "--socket", str(sock)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the phux server did not start")
            time.sleep(0.02)
        yield server
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)


def median_seconds(fn: Callable[[], object], *, repeat: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` over ``repeat`` calls, after ``warmup`` discarded calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_silently(argv: Sequence[str], env: dict[str, str], *, timeout: float = 60.0) -> int:
    """Run ``argv`` to its end with its output discarded; its exit status.

    For timing whole processes. Not ``subprocess.run(..., timeout=...)``: with
    no pipe to read, ``Popen.wait(timeout)`` polls with sleeps that double from
    0.5 ms to 50 ms, so every time it measures is rounded up to the next of
    ~31.5, 63.5, 113.5, 163.5 ms... (a 20 ms process reads as 32 ms). This waits
    in ``waitpid``; a watchdog kills a process still running after ``timeout``.
    """
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        return proc.wait()
    finally:
        watchdog.cancel()


def percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("no samples")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


class OtherLoad:
    """The CPU other processes use while a block runs, in CPUs (``cpus`` after the
    block): read from /proc/stat's busy time less this process's and its children's.

    Some same-run baselines do not cancel other load, they move against the
    figure: a PTY is read faster when other work keeps the CPUs from idling
    between wake-ups, while the engine gets less CPU. Benches print this so that
    a run on a busy machine is told apart."""

    def __enter__(self) -> OtherLoad:
        self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())
        return self

    def __exit__(self, *exc: object) -> None:
        wall0, busy0, own0 = self._start
        wall = time.perf_counter() - wall0
        other = (_busy_seconds() - busy0) - (_own_seconds() - own0)
        self.cpus = max(0.0, other / wall) if wall > 0 else 0.0


def _busy_seconds() -> float:
    """Seconds all CPUs spent busy since boot (0 where /proc/stat is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return 0.0
    ticks = [int(x) for x in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def format_table(measurements: Sequence[Measurement]) -> str:
    rows = [("bench", "figure", "value", "baseline", "base value", "ratio", "target")]
    for m in measurements:
        rows.append(
            (
                m.bench,
                m.name,
                _figure(m.value, m.unit, m.spread),
                m.baseline_name,
                _figure(m.baseline, m.unit, m.baseline_spread),
                f"{m.ratio:.2f}x",
                m.target,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _figure(value: float, unit: str, spread: tuple[float, float] | None) -> str:
    if spread is None:
        return f"{value:.4g} {unit}"
    return f"{value:.4g} {unit} ({spread[0]:.3g}-{spread[1]:.3g})"


def discover() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        info.name.removeprefix("bench_")
        for info in pkgutil.iter_modules([str(here)])
        if info.name.startswith("bench_")
    )


def run_benches(names: Sequence[str], quick: bool) -> list[Measurement]:
    results: list[Measurement] = []
    for name in names:
        module = importlib.import_module(f"tools.bench.bench_{name}")
        print(f"# running {name} ...", file=sys.stderr, flush=True)
        results.extend(module.run(quick))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run phux benchmarks (all, or the named ones).")
    parser.add_argument("names", nargs="*", help=f"benches to run (default: all of {discover()})")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, for smoke runs")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    names = args.names or discover()
    unknown = sorted(set(names) - set(discover()))
    if unknown:
        parser.error(f"unknown bench(es): {', '.join(unknown)}")
    results = run_benches(names, args.quick)
    if args.json:
        print(json.dumps([asdict(m) | {"ratio": m.ratio} for m in results], indent=2))
    else:
        print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

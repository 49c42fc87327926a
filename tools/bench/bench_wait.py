"""``wait --until`` on a flooding pane: the CPU its client spends per 50 MB (issue 28).

One server, one pane (80x24) whose shell-less loop prints a flood file, then a marker
line, each time a line is typed into it. A client waits for the marker while the
flood comes, in this process (its thread's CPU time, no interpreter start-up), two
ways alternating run by run, in the same run:

* **scan** (as shipped): plain output is searched as lines as it comes
  (``phux.client.line_scan``), and the mirror feeds the engine 16 MiB at a time, of
  which it draws only the rows its history keeps;
* **per batch** (the baseline: how every wait read a flood before): the scan is
  switched off, so the engine is looked at after every batch that arrives, and each
  batch is a feed that draws every row.

Floods: plain text lines (``cat`` of a log), ``ls --color``-style lines (80 columns:
they wrap), and one endless base64 line. Each figure is the median of ``--repeat``
runs (default 5) with the spread, in CPU seconds per 50 MB; besides, the server's
replica helper's CPU for the same flood (the replica skips in the same way; its
figure is the server side's cost), and what the mirror took against what it fed its
engine (bytes and feeds).
``python -m tools.bench.bench_wait [--quick] [--repeat=N] [--only=TEXT]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from phux.client import Client, Deadline, line_scan
from tools.bench.bench_engine import _endless_line, _ls_color, _plain
from tools.bench.bench_mux import _cpu_seconds, _helpers
from tools.bench.harness import Measurement, OtherLoad, format_table, phux_server

BENCH = "wait"
PER = 50_000_000
"""Figures are per this many bytes of flood."""
FLOODS: list[tuple[str, Callable[[int], bytes]]] = [
    ("plain text", _plain),
    ("ls --color (80 columns: its lines wrap)", _ls_color),
    ("base64 -w 0 (one endless line)", _endless_line),
]
# The pane's program: each line typed prints the flood, then the marker with that line.
LOOP = 'while read n; do cat "$1"; printf \'\\nDONE-%s-MARK\\n\' "$n"; done'


@contextmanager
def _server(root: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    sock = root / "s"
    env = dict(os.environ)
    for var in ("PHUX_SOCKET", "PHUX_TERMINAL", "TMUX"):
        env.pop(var, None)
    env["XDG_STATE_HOME"] = str(root / "state")
    # The replica helper stays between runs (an idle one is let go, and its CPU with it).
    env["PHUX_REPLICA_IDLE_S"] = "3600"
    with phux_server(sock, env) as server:
        yield sock, server


class _Run:
    """One wait for one flood: the waiting thread's CPU, what the mirror took and fed."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.received = 0
        self.feeds = 0
        self.replica = 0.0


def _wait_once(sock: Path, server: int, name: str, token: str, scan: bool) -> _Run:
    run = _Run()
    start = line_scan.LineScan.start
    if not scan:  # the baseline: the engine looked at after every batch
        line_scan.LineScan.start = lambda self, prefix: start(self, None)  # type: ignore[method-assign]
    try:
        with Client(sock, env={}, keep_warm=1) as client, Client(sock, env={}) as other:
            pane = client.resolve(name, Deadline.after(10))

            def trigger() -> None:  # once the wait has subscribed
                deadline = Deadline.after(30)
                while other.list_terminals(deadline).by_id[pane.terminal].viewers < 1:
                    time.sleep(0.01)
                other.send_keys(name, [token, "Enter"], Deadline.after(10))

            thread = threading.Thread(target=trigger)
            replica = _cpu_seconds(_helpers(server))
            cpu = time.thread_time()
            thread.start()
            try:
                result = client.wait(
                    name, until=f"DONE-{token}-MARK", timeout=300, deadline=Deadline.after(310)
                )
            finally:
                thread.join(30)
            run.cpu = time.thread_time() - cpu
            run.replica = _cpu_seconds(_helpers(server)) - replica
            if not result.met:
                raise RuntimeError("the marker was not seen")
            mirror = client._mirrors[pane.terminal]
            run.received, run.feeds = mirror.received, mirror.feeds
    finally:
        line_scan.LineScan.start = start  # type: ignore[method-assign]
    return run


def _median(values: list[float]) -> tuple[float, tuple[float, float]]:
    return statistics.median(values), (min(values), max(values))


def _flood(
    sock: Path, server: int, root: Path, what: str, data: bytes, repeat: int
) -> list[Measurement]:
    path = root / f"flood{abs(hash(what))}"
    path.write_bytes(data.replace(b"\r\n", b"\n"))  # (the tty makes the CR LFs)
    name = f"w{abs(hash(what)) % 10_000}"
    with Client(sock, env={}) as client:
        client.new(name, command=["sh", "-c", LOOP, "sh", str(path)], deadline=Deadline.after(10))
    runs: dict[bool, list[_Run]] = {True: [], False: []}
    for i in range(repeat):
        for scan in (True, False):
            runs[scan].append(_wait_once(sock, server, name, f"{i}{int(scan)}", scan))
    scale = PER / len(data)
    shipped, _ = _median([r.cpu for r in runs[True]])
    base, _ = _median([r.cpu for r in runs[False]])
    value, spread = _median([r.cpu * scale for r in runs[True]])
    base_value, base_spread = _median([r.cpu * scale for r in runs[False]])
    replica, replica_spread = _median([r.replica * scale for r in runs[True] + runs[False]])
    for scan in (True, False):
        mb = statistics.median(r.received for r in runs[scan]) / 1e6
        feeds = statistics.median(r.feeds for r in runs[scan])
        print(
            f"# wait, {what}, {'scan' if scan else 'per batch'}: the mirror took {mb:.1f} MB"
            f" of {len(data) / 1e6:.1f} MB (tombstones re-send some) in {feeds:.0f} engine feeds",
            file=sys.stderr,
        )
    print(
        f"# wait, {what}: the replica helper's CPU for the same flood: {replica:.2f} s per"
        f" 50 MB ({replica_spread[0]:.2f}-{replica_spread[1]:.2f}); the wait's median"
        f" {shipped:.2f} s against {base:.2f} s per batch",
        file=sys.stderr,
    )
    return [
        Measurement(
            BENCH,
            f"wait --until on a flood of {what}, CPU per 50 MB",
            "s",
            value,
            f"the same wait with the engine looked at per batch, median of {repeat}",
            base_value,
            higher_is_better=False,
            spread=spread,
            baseline_spread=base_spread,
        )
    ]


def run(quick: bool, only: str = "", repeat: int = 0) -> list[Measurement]:
    size = 8_000_000 if quick else 20_000_000
    repeat = repeat or (3 if quick else 5)
    root = Path(tempfile.mkdtemp(prefix="phux-bw-", dir="/tmp"))
    out: list[Measurement] = []
    try:
        with OtherLoad() as load, _server(root) as (sock, server):
            for what, make in FLOODS:
                if only in what:
                    out.extend(_flood(sock, server.pid, root, what, make(size), repeat))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"# wait: other processes kept {load.cpus:.2f} of {os.cpu_count()} CPUs busy,"
        f" load average {os.getloadavg()[0]:.2f} at the end",
        file=sys.stderr,
    )
    return out


if __name__ == "__main__":

    def _flag(name: str) -> str:
        return next((a.split("=", 1)[1] for a in sys.argv if a.startswith(f"{name}=")), "")

    print(format_table(run("--quick" in sys.argv, _flag("--only"), int(_flag("--repeat") or 0))))

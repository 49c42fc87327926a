"""Memory per idle terminal, per row of history, fixed cost and fds, against tmux (issue 28).

Each run starts a phux server and a tmux server and gives both the same work;
every figure is the median of ``RUNS`` runs, with its spread (min..max)
printed on stderr:

- **per idle terminal**: the RSS of the server and its replica helper together,
  as the slope from 1 to N idle ``sh`` shells (N = 1000; 100 with --quick):
  (RSS with N - RSS with 1) / (N - 1). tmux: N windows running ``sh``.
- **fixed cost, idle**: that RSS with one terminal (tmux: its server with one window).
- **fixed cost, active**: one ``sh`` that keeps printing a little (``tick`` every
  0.5 s), the server and its replicas (with the default replicas, "auto", in a
  thread of the server; with ``PHUX_REPLICAS=process`` also measured, the helper
  process): the median of ``_READINGS`` readings a second apart, of the RSS and of
  the PSS (``/proc/PID/smaps_rollup``: a page shared by the server and its helper,
  libpython's, counts once in the sum, not twice as in the RSS; it also splits the
  pages shared with other processes of the same interpreter, so it moves with what
  else runs). tmux: its server, its window printing the same.
- **fds per terminal**: the slope of the open fds of the server and its helper.
- **per row of history**: K shells (100x30; K = 20, 5 with --quick) each ``cat``
  2 000 lines of 100 columns of text (random words), idle afterwards:
  (RSS after - RSS before) / (K x 2 000). tmux: ``history-limit`` 2 000 (phux's
  ``history_lines`` is 2 000 too), windows of 100x30.

The idle figures are taken once both servers are idle: their CPU time has
stopped moving for a second, then again after ``_LINGER_S`` (long enough for the
replica to put its idle terminals' engines away: ``ServerConfig.replica_idle_s``).

``python -m tools.bench.harness memory`` (or ``bash tools/bench.sh memory``).

Measured on the shared 2-core machine (median of 5, spreads in ARCHITECTURE.md;
tmux 3.3a): before issue 28's work / at session 13's start / now / tmux:

    RSS per idle terminal (1..1000)  44.98 / 8.20 / 8.75 / 6.20 KiB
    RSS per history row              1166 / 147 / 238 / 554 B
    RSS with one idle terminal       59.1 / 30.8 / 31.1 / 3.7 MiB
    RSS with one active terminal     - / 46.9 / 31.0 / 3.7 MiB
    PSS with one active terminal     - / 34.5 / 22.3 / 2.0 MiB
    the same, replicas in a process  now RSS 43.0, PSS 28.3 MiB
    fds per terminal                 2 / 2 / 2 / 1

Where the bytes go: ARCHITECTURE.md, "Memory".
"""

from __future__ import annotations

import contextlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import Spawn, TerminalSpawned
from tools.bench.bench_limits import _fds, _helper, _raise_nofile, _status
from tools.bench.bench_server import Tmux, phux_server, send
from tools.bench.harness import Measurement

BENCH = "memory"
RUNS = 5
HISTORY_ROWS = 2000
COLS, ROWS = 100, 30
_LINGER_S = 7.0
"""Past the replica's idle time (5 s by default) plus a margin."""
ACTIVE = "while :; do echo tick; sleep 0.5; done"
"""An active terminal's program: it keeps printing a little."""
_ACTIVE_SETTLE_S = 3.0
_READINGS = 5


# ---------------------------------------------------------------- probes


def _pids(pid: int) -> list[int]:
    helper = _helper(pid)
    return [pid, helper] if helper else [pid]


def _rss(pids: list[int]) -> int:
    return sum(_status(p, "VmRSS") for p in pids)


def _pss(pids: list[int]) -> int:
    """The PSS of ``pids`` in KiB (``smaps_rollup``)."""
    total = 0
    for p in pids:
        with contextlib.suppress(OSError), open(f"/proc/{p}/smaps_rollup") as f:
            total += next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
    return total


def _readings(pids: Callable[[], list[int]]) -> dict[str, float]:
    """The median RSS and PSS (MiB) of ``_READINGS`` readings a second apart."""
    rss: list[float] = []
    pss: list[float] = []
    for _ in range(_READINGS):
        time.sleep(1.0)
        now = pids()
        rss.append(_rss(now) / 1024)
        pss.append(_pss(now) / 1024)
    return {"rss": statistics.median(rss), "pss": statistics.median(pss)}


def _nfds(pids: list[int]) -> int:
    return sum(_fds(p) for p in pids)


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError), open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _quiet(pids: Callable[[], list[int]], *, linger: float, limit: float = 300.0) -> None:
    """Wait until the processes are idle: no CPU tick for a second, then ``linger``
    seconds more, then idle again (whatever they put away when idle, put away)."""
    deadline = time.monotonic() + limit
    for pause in (linger, 0.0):
        last = _cpu_ticks(pids())
        while True:
            time.sleep(1.0)
            now = _cpu_ticks(pids())
            if now - last <= 1 or time.monotonic() > deadline:
                break
            last = now
        time.sleep(pause)


def _text(path: Path) -> None:
    rng = random.Random(28)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(500)
    ]
    lines = []
    for _ in range(HISTORY_ROWS):
        line = ""
        while len(line) < COLS:
            line += rng.choice(words) + " "
        lines.append(line[:COLS])
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- phux


@contextlib.contextmanager
def _phux(directory: Path, **env: str) -> Iterator[tuple[Connection, int]]:
    with phux_server(directory, "--max-connections", "100000", extra_env=env) as (sock, proc):
        conn = Connection.open(sock, Deadline.after(20), client_name="bench")
        with conn:
            yield conn, proc.pid


def _spawn(conn: Connection, cols: int = 80, rows: int = 24) -> int:
    reply = conn.call_expect(
        lambda rid: Spawn(request_id=rid, argv=["sh"], cols=cols, rows=rows),
        TerminalSpawned,
        Deadline.after(30),
    )
    return reply.terminal


def idle_phux(directory: Path, n: int) -> dict[str, float]:
    with _phux(directory) as (conn, pid):
        _spawn(conn)
        _quiet(lambda: _pids(pid), linger=_LINGER_S)
        one = _pids(pid)
        rss1, fds1 = _rss(one), _nfds(one)
        for _ in range(n - 1):
            _spawn(conn)
        _quiet(lambda: _pids(pid), linger=_LINGER_S)
        many = _pids(pid)
        return {
            "fixed": rss1 / 1024,
            "per": (_rss(many) - rss1) / (n - 1),
            "fds": (_nfds(many) - fds1) / (n - 1),
        }


def active_phux(directory: Path, **env: str) -> dict[str, float]:
    with _phux(directory, **env) as (conn, pid):
        tid = _spawn(conn)
        send(conn, tid, f"{ACTIVE}\n".encode())
        time.sleep(_ACTIVE_SETTLE_S)
        return _readings(lambda: _pids(pid))


def history_phux(directory: Path, k: int, text: Path) -> float:
    with _phux(directory) as (conn, pid):
        ids = [_spawn(conn, COLS, ROWS) for _ in range(k)]
        _quiet(lambda: _pids(pid), linger=_LINGER_S)
        before = _rss(_pids(pid))
        for tid in ids:
            send(conn, tid, f"cat {text}\n".encode())
        _quiet(lambda: _pids(pid), linger=_LINGER_S)
        return (_rss(_pids(pid)) - before) * 1024 / (k * HISTORY_ROWS)


# ---------------------------------------------------------------- tmux


@contextlib.contextmanager
def _tmux(directory: Path, name: str) -> Iterator[tuple[Tmux, int]]:
    tmux = Tmux(directory, name)
    try:
        tmux("new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "-s", "m", "sh")
        tmux("set-option", "-g", "default-size", f"{COLS}x{ROWS}")
        tmux("set-option", "-g", "history-limit", str(HISTORY_ROWS))
        yield tmux, tmux.server_pid()
    finally:
        tmux.kill()


def idle_tmux(directory: Path, n: int) -> dict[str, float]:
    with _tmux(directory, "idle") as (tmux, pid):
        _quiet(lambda: [pid], linger=1.0)
        rss1, fds1 = _rss([pid]), _nfds([pid])
        for _ in range(n - 1):
            tmux("new-window", "-d", "-t", "m:", "sh")
        _quiet(lambda: [pid], linger=1.0)
        return {
            "fixed": rss1 / 1024,
            "per": (_rss([pid]) - rss1) / (n - 1),
            "fds": (_nfds([pid]) - fds1) / (n - 1),
        }


def active_tmux(directory: Path) -> dict[str, float]:
    with _tmux(directory, "active") as (tmux, pid):
        tmux("send-keys", "-t", "m:0", ACTIVE, "Enter")
        time.sleep(_ACTIVE_SETTLE_S)
        return _readings(lambda: [pid])


def history_tmux(directory: Path, k: int, text: Path) -> float:
    with _tmux(directory, "hist") as (tmux, pid):
        for _ in range(k - 1):
            tmux("new-window", "-d", "-t", "m:", "sh")
        _quiet(lambda: [pid], linger=1.0)
        before = _rss([pid])
        for i in range(k):
            tmux("send-keys", "-t", f"m:{i}", f"cat {text}", "Enter")
        _quiet(lambda: [pid], linger=1.0)
        return (_rss([pid]) - before) * 1024 / (k * HISTORY_ROWS)


# ---------------------------------------------------------------- entry point


def _spread(label: str, unit: str, phux: list[float], tmux: list[float]) -> None:
    def show(xs: list[float]) -> str:
        return f"{statistics.median(xs):.4g} ({min(xs):.4g}..{max(xs):.4g})"

    print(f"# {label}: phux {show(phux)} {unit}, tmux {show(tmux)} {unit}", file=sys.stderr)


def run(quick: bool) -> list[Measurement]:
    _raise_nofile()
    n = 100 if quick else 1000
    k = 5 if quick else 20
    samples: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    with tempfile.TemporaryDirectory(prefix="phux-bench-memory-") as tmp:
        root = Path(tmp)
        text = root / "text.txt"
        _text(text)
        for run_no in range(RUNS):
            idle = idle_phux(root / f"i{run_no}", n)
            tidle = idle_tmux(root, n)
            for key in ("fixed", "per", "fds"):
                note(key, idle[key])
                note("t" + key, tidle[key])
            note("row", history_phux(root / f"h{run_no}", k, text))
            note("trow", history_tmux(root, k, text))
            active = active_phux(root / f"a{run_no}")
            helper = active_phux(root / f"p{run_no}", PHUX_REPLICAS="process")
            tactive = active_tmux(root)
            for key in ("rss", "pss"):
                note("active_" + key, active[key])
                note("helper_" + key, helper[key])
                note("tactive_" + key, tactive[key])
                note("thelper_" + key, tactive[key])
            print(
                f"# run {run_no + 1}: per terminal {idle['per']:.1f} / {tidle['per']:.1f} KiB, "
                f"per row {samples['row'][-1]:.0f} / {samples['trow'][-1]:.0f} B, "
                f"fixed {idle['fixed']:.1f} / {tidle['fixed']:.1f} MiB, "
                f"fds {idle['fds']:.2f} / {tidle['fds']:.2f}, "
                f"active {active['rss']:.1f} / {tactive['rss']:.1f} MiB "
                f"(PSS {active['pss']:.1f} / {tactive['pss']:.1f}; "
                f"helper process: {helper['rss']:.1f}, PSS {helper['pss']:.1f})",
                file=sys.stderr,
            )
    _spread("RSS per idle terminal", "KiB", samples["per"], samples["tper"])
    _spread("RSS per history row", "B", samples["row"], samples["trow"])
    _spread("RSS with one idle terminal", "MiB", samples["fixed"], samples["tfixed"])
    _spread("RSS, one active terminal", "MiB", samples["active_rss"], samples["tactive_rss"])
    _spread("PSS, one active terminal", "MiB", samples["active_pss"], samples["tactive_pss"])
    _spread("RSS, one active, helper", "MiB", samples["helper_rss"], samples["thelper_rss"])
    _spread("PSS, one active, helper", "MiB", samples["helper_pss"], samples["thelper_pss"])
    _spread("fds per terminal", "", samples["fds"], samples["tfds"])
    med = {key: statistics.median(xs) for key, xs in samples.items()}

    def figure(name: str, unit: str, key: str, target: str) -> Measurement:
        return Measurement(
            BENCH,
            name,
            unit,
            med[key],
            "tmux",
            med["t" + key],
            higher_is_better=False,
            target=target,
        )

    return [
        figure(f"RSS per idle terminal, slope 1..{n} sh (server+replica)", "KiB", "per", ">= 0.5x"),
        figure(
            f"RSS per history row, {k} x {HISTORY_ROWS} rows of {COLS} cols", "B", "row", ">= 0.67x"
        ),
        figure("RSS with one idle terminal (server+replica)", "MiB", "fixed", "<= 35 MiB"),
        figure("RSS with one active terminal (server+replicas)", "MiB", "active_rss", "<= 35 MiB"),
        figure("PSS with one active terminal (server+replicas)", "MiB", "active_pss", "<= 35 MiB"),
        figure(
            "RSS with one active terminal, replicas in the helper process", "MiB", "helper_rss", ""
        ),
        figure(
            "PSS with one active terminal, replicas in the helper process", "MiB", "helper_pss", ""
        ),
        figure("fds per terminal (server+replica)", "fds", "fds", "<= 2"),
    ]

"""Server benchmarks: relay throughput, loop responsiveness, memory per idle terminal.

- **relay**: ``cat`` of a file (64 MB; 16 MB with --quick) of base64 text lines
  inside a terminal, timed from the input that starts it until a subscriber
  has every byte up to the terminal's exit (TERMINAL_CLOSED). Baseline: the
  same file ``cat`` in a tmux pane, timed until ``tmux wait-for`` returns
  after it (tmux parses everything into its grid; no client attached).
  Target: phux no slower than tmux.
- **relay, state followed**: the server's CPU time (its main process: the
  loop) for the same relay by a subscriber that also follows TERMINAL_STATE
  (protocol 1.1 and SUBSCRIBE_EVENTS: the server checks the PTY's foreground
  after output), against the same subscriber speaking protocol 1.0 (no
  checks); medians of several rounds alternated in one server. CPU time, not
  wall time: on a shared machine the wall time of a sub-second relay varies
  by tens of percent from run to run. Target: no measurable cost (~1.0x).
- **loop latency**: the p99 round trip of one INPUT byte to its echo on a
  terminal running ``cat``, while another terminal floods output to a
  subscriber; baseline: the same round trip with nothing flooding.
  Target: p99 under 50 ms.
- **memory**: the server's RSS growth per idle terminal (``sleep``) and its
  total RSS with 200 of them; baseline: a tmux server with as many windows.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    BootstrapChunk,
    BootstrapReady,
    Input,
    Output,
    Shutdown,
    Spawn,
    Subscribe,
    SubscribeEvents,
    TerminalClosed,
    TerminalSpawned,
    Tombstone,
)
from tools.bench.harness import Measurement, percentile

BENCH = "server"
MB = 1_000_000


# ---------------------------------------------------------------- processes


@contextlib.contextmanager
def phux_server(
    directory: Path, *args: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """``phux server`` (with ``args``) on ``directory/phux.sock``; shut down on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    sock = directory / "phux.sock"
    argv = [sys.executable, "-m", "phux", "server", "--socket", str(sock), *args]
    argv += ["--log-file", str(directory / "server.log")]
    env = {**os.environ, "SHELL": "/bin/sh", **(extra_env or {})}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not _accepts(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("phux server did not start")
            time.sleep(0.02)
        yield sock, proc
    finally:
        with contextlib.suppress(Exception), connect(sock) as conn:
            conn.call(lambda rid: Shutdown(request_id=rid), Deadline.after(5))
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _accepts(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def connect(sock: Path, minor: int | None = None) -> Connection:
    return Connection.open(sock, Deadline.after(10), client_name="bench", minor=minor)


class Tmux:
    def __init__(self, directory: Path, name: str) -> None:
        self.base = ["tmux", "-S", str(directory / f"tmux-{name}.sock"), "-f", "/dev/null"]

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=300, check=True
        )
        return done.stdout

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30, check=False)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.base[2])

    def server_pid(self) -> int:
        return int(self("display-message", "-p", "#{pid}").strip())


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def spawn(conn: Connection, argv: list[str]) -> int:
    reply = conn.call_expect(
        lambda rid: Spawn(request_id=rid, argv=argv), TerminalSpawned, Deadline.after(10)
    )
    return reply.terminal


def send(conn: Connection, terminal: int, data: bytes) -> None:
    conn.call(lambda rid: Input(request_id=rid, terminal=terminal, data=data), Deadline.after(30))


def subscribe_ready(conn: Connection, terminal: int) -> int:
    """Subscribe and read the bootstrap; return next_seq."""
    conn.submit(lambda rid: Subscribe(request_id=rid, terminal=terminal))
    deadline = Deadline.after(10)
    while True:
        frame = conn.receive(deadline)
        if isinstance(frame, BootstrapReady) and frame.terminal == terminal:
            return frame.next_seq


# ---------------------------------------------------------------- relay


def make_file(path: Path, size: int) -> None:
    rng = random.Random(7)
    line_raw = 57  # 76 base64 characters per line, like base64(1)
    with path.open("wb") as f:
        written = 0
        while written < size:
            block = base64.encodebytes(rng.randbytes(line_raw * 4096))
            f.write(block)
            written += len(block)


def relay_phux(
    sock: Path, path: Path, *, minor: int | None = None, events: bool = False
) -> tuple[float, int, int]:
    """Seconds until a subscriber has all of ``cat FILE``; bytes received; tombstones.

    ``minor`` 0 speaks protocol 1.0 (the server checks no foreground for it);
    ``events`` also follows SUBSCRIBE_EVENTS.
    """
    with connect(sock, minor) as conn:
        if events:
            conn.call(lambda rid: SubscribeEvents(request_id=rid), Deadline.after(10))
        tid = spawn(conn, ["sh"])
        next_seq = subscribe_ready(conn, tid)
        time.sleep(0.2)  # let the shell print its prompt before timing
        while (frame := conn.poll()) is not None:
            if isinstance(frame, Output):
                next_seq = frame.seq + len(frame.data)
        start_seq = next_seq
        tombstones = 0
        start = time.perf_counter()
        send(conn, tid, f"exec cat {path}\n".encode())
        deadline = Deadline.after(300)
        while True:
            frame = conn.receive(deadline)
            if isinstance(frame, Output | BootstrapChunk) and frame.terminal == tid:
                next_seq = frame.seq + len(frame.data)
            elif isinstance(frame, Tombstone):
                tombstones += 1
            elif isinstance(frame, TerminalClosed) and frame.terminal == tid:
                assert next_seq == frame.final_seq
                return time.perf_counter() - start, next_seq - start_seq, tombstones


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (its own threads, not its children)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def relay_state_cost(sock: Path, pid: int, path: Path, rounds: int) -> tuple[float, float]:
    """Median server CPU seconds of the relay followed by a 1.1 client with events, and
    by a 1.0 client, alternated so that both see the same machine."""
    followed: list[float] = []
    plain: list[float] = []
    for i in range(rounds):
        runs = [(plain, 0, False), (followed, None, True)]
        for into, minor, events in runs if i % 2 else runs[::-1]:
            before = cpu_seconds(pid)
            relay_phux(sock, path, minor=minor, events=events)
            into.append(cpu_seconds(pid) - before)
    return sorted(followed)[rounds // 2], sorted(plain)[rounds // 2]


def relay_tmux(directory: Path, path: Path) -> float:
    tmux = Tmux(directory, "relay")
    try:
        tmux("new-session", "-d", "-x", "80", "-y", "24", "-s", "bench", "/bin/sh")
        time.sleep(0.2)
        start = time.perf_counter()
        tmux(
            "send-keys",
            "-t",
            "bench",
            f"cat {path}; {' '.join(tmux.base)} wait-for -S done",
            "Enter",
        )
        tmux("wait-for", "done")
        return time.perf_counter() - start
    finally:
        tmux.kill()


# ---------------------------------------------------------------- loop latency


def echo_round_trips(conn: Connection, tid: int, samples: int) -> list[float]:
    out: list[float] = []
    deadline = Deadline.after(120)
    for i in range(samples):
        token = b"abcdefghij"[i % 10 : i % 10 + 1]
        start = time.perf_counter()

        def make(rid: int, token: bytes = token) -> Input:
            return Input(request_id=rid, terminal=tid, data=token)

        rid = conn.submit(make)
        while True:
            frame = conn.receive(deadline)
            if isinstance(frame, Output) and frame.terminal == tid and token in frame.data:
                break
        out.append(time.perf_counter() - start)
        conn.wait_reply(rid, deadline)
        time.sleep(0.005)
    return out


FLOOD_READER = """
import sys
from pathlib import Path
from phux.client.deadline import Deadline
from tools.bench.bench_server import connect, spawn, subscribe_ready
with connect(Path(sys.argv[1])) as conn:
    tid = spawn(conn, ["sh", "-c", "exec base64 /dev/urandom"])
    subscribe_ready(conn, tid)
    print("flooding", flush=True)
    while True:
        conn.receive(Deadline.after(60))
"""


def loop_latency(sock: Path, samples: int) -> tuple[float, float]:
    with connect(sock) as conn:
        echo = spawn(conn, ["sh", "-c", "stty raw; exec cat"])
        subscribe_ready(conn, echo)
        time.sleep(0.2)
        idle = echo_round_trips(conn, echo, samples)
        # The flood's subscriber is another process, so it does not compete with
        # this one for the GIL and the figure is the server's, not ours.
        flood = subprocess.Popen(
            [sys.executable, "-c", FLOOD_READER, str(sock)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert flood.stdout is not None
            flood.stdout.readline()  # subscribed and flooding
            time.sleep(0.5)
            busy = echo_round_trips(conn, echo, samples)
        finally:
            flood.kill()
            flood.wait(10)
    return percentile(busy, 99) * 1000, percentile(idle, 99) * 1000


# ---------------------------------------------------------------- memory


def phux_memory(sock: Path, pid: int, count: int) -> tuple[float, float]:
    with connect(sock) as conn:
        time.sleep(0.2)
        before = rss_kib(pid)
        ids = [spawn(conn, ["sleep", "3600"]) for _ in range(count)]
        time.sleep(0.5)
        after = rss_kib(pid)
        from phux.wire.frames import Kill

        conn.call(lambda rid: Kill(request_id=rid, terminals=ids), Deadline.after(30))
    return (after - before) / count, after / 1024


def tmux_memory(directory: Path, count: int) -> tuple[float, float]:
    tmux = Tmux(directory, "memory")
    try:
        tmux("new-session", "-d", "-s", "mem", "sleep 3600")
        pid = tmux.server_pid()
        time.sleep(0.2)
        before = rss_kib(pid)
        for _ in range(count - 1):
            tmux("new-window", "-d", "-t", "mem:", "sleep 3600")  # "mem:": next free index
        time.sleep(0.5)
        after = rss_kib(pid)
        return (after - before) / (count - 1), after / 1024
    finally:
        tmux.kill()


# ---------------------------------------------------------------- entry point


def run(quick: bool) -> list[Measurement]:
    if shutil.which("tmux") is None:
        raise RuntimeError("bench_server needs tmux for its baselines")
    size = (16 if quick else 64) * MB
    samples = 60 if quick else 300
    count = 50 if quick else 200
    results: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="phux-bench-") as tmp:
        directory = Path(tmp)
        data = directory / "data.txt"
        make_file(data, size)
        size = data.stat().st_size
        with phux_server(directory) as (sock, proc):
            phux_s, received, tombstones = relay_phux(sock, data)
            followed_cpu, plain_cpu = relay_state_cost(sock, proc.pid, data, 3 if quick else 5)
            busy_p99, idle_p99 = loop_latency(sock, samples)
        # Memory in a server of its own: one that has just relayed a flood keeps
        # the heap its replica backlog (up to replica_lag_bytes) grew to.
        (directory / "memory").mkdir()
        with phux_server(directory / "memory") as (sock, proc):
            per_term, total = phux_memory(sock, proc.pid, count)
        tmux_s = relay_tmux(directory, data)
        tmux_per, tmux_total = tmux_memory(directory, count)
    note = f"{received / MB:.0f} MB relayed (onlcr), {tombstones} tombstones"
    print(f"# relay: {note}", file=sys.stderr)
    results.append(
        Measurement(
            BENCH,
            f"relay cat {size // MB} MB",
            "MB/s",
            size / MB / phux_s,
            "tmux pane + wait-for",
            size / MB / tmux_s,
            higher_is_better=True,
            target=">= 1.0x (no slower than tmux)",
        )
    )
    results.append(
        Measurement(
            BENCH,
            f"server CPU, relay {size // MB} MB, state followed",
            "s",
            followed_cpu,
            "same relay, a 1.0 client (no foreground checks)",
            plain_cpu,
            higher_is_better=False,
            target="~1.0x (the checks cost nothing measurable)",
        )
    )
    results.append(
        Measurement(
            BENCH,
            "echo p99 while another terminal floods",
            "ms",
            busy_p99,
            "echo p99, nothing flooding",
            idle_p99,
            higher_is_better=False,
            target="< 50 ms absolute",
        )
    )
    results.append(
        Measurement(
            BENCH,
            "RSS per idle terminal",
            "KiB",
            per_term,
            "tmux RSS per idle window",
            tmux_per,
            higher_is_better=False,
        )
    )
    results.append(
        Measurement(
            BENCH,
            f"server RSS with {count} idle terminals",
            "MiB",
            total,
            f"tmux RSS with {count} windows",
            tmux_total,
            higher_is_better=False,
        )
    )
    return results


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tools.bench.harness import format_table

    print(format_table(run("--quick" in sys.argv)))

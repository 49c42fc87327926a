"""Server memory and file descriptors under the load shapes of issue 15, against tmux.

Each shape runs in a server of its own (so a peak is that shape's), and in a
tmux server doing the same work where tmux has the same work to do:

- **idle connections**: N clients connected and past the handshake, idle
  (tmux: N sockets connected to its server, idle). RSS and open fds.
- **after load**: the server's RSS 12 s after those N clients left, against
  its RSS before they came and against a server run with
  ``PHUX_TRIM_INTERVAL=0`` (no tmux baseline: it is phux against itself); the
  server hands freed heap back to the system when it is idle after a burst.
- **non-reading subscribers**: K subscribers to a terminal that ``cat``s a
  file, none of them reading, plus one that reads it all (tmux: K control-mode
  clients attached that never read). Peak RSS.
- **flood**: ``cat`` of a 200 MB file of base64 lines (32 MB with --quick) to
  one subscriber (tmux: the same file in a pane). Peak RSS of the server and
  its replica helper together.
- **partial frames**: P clients past HELLO, each holding 15 MiB of a 16 MiB
  frame, against a server without the bound on incomplete frames. RSS.
- **idle terminals**: M terminals running ``sleep`` (tmux: M windows): RSS of
  the server and its replica helper together, per terminal and in all, and fds.

``python -m tools.bench.harness limits`` (or ``bash tools/bench.sh limits``);
``--quick`` shrinks every shape.

Measured once on the shared 2-core machine (figure / tmux or same-run baseline):

    RSS, 900 idle connections                 42.4 / 62.7 MiB
    RSS, 40 clients each holding 15 MiB of a 16 MiB frame
                                              277 / 636 MiB with no bound (the bound: 256 MiB)
    fds, 900 idle connections                  911 / 907
    RSS 12 s after they left                  45.3 / 29.3 MiB before them, 46.0 never trimmed
    RSS 12 s after 16 MB to 5 deaf subscribers  37.2 / 46.0 MiB never trimmed (--quick)
    peak RSS, 200 MB flood (server+replica)  114.6 / 4.5 MiB
    seconds, 200 MB flood                    188.4 / 13.1 s (the reader waits for the
                                             replica past 32 MiB: engine speed, ~1 MB/s here;
                                             3.9 / 6.5 s merged with flood17's bulk path)
    peak RSS, 20 non-reading subscribers     108.6 / 47.1 MiB (tmux stalls the pane instead)
    RSS per idle terminal (server+replica)    33.8 / 5.1 KiB
    RSS, 1000 idle terminals                  91.7 / 8.6 MiB
    fds, 1000 idle terminals                  2019 / 1007 (a pidfd per terminal)
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire import encode_frame
from phux.wire.frames import (
    Hello,
    Input,
    Kill,
    Output,
    Subscribe,
    TerminalClosed,
)
from tools.bench.bench_server import (
    Tmux,
    make_file,
    phux_server,
    send,
    spawn,
    subscribe_ready,
)
from tools.bench.harness import Measurement

BENCH = "limits"
MB = 1_000_000


def _raise_nofile() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _status(pid: int, key: str) -> int:
    """A /proc/PID/status field in KiB (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def _helper(pid: int) -> int:
    """The server's replica helper process (0 if none)."""
    for child in _children(pid):
        with contextlib.suppress(OSError), open(f"/proc/{child}/cmdline", "rb") as f:
            if b"phux.server.replica" in f.read():
                return child
    return 0


def _with_helper(pid: int, key: str) -> int:
    helper = _helper(pid)
    return _status(pid, key) + (_status(helper, key) if helper else 0)


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def _phux(directory: Path, **extra_env: str) -> Iterator[tuple[Path, int]]:
    with phux_server(directory, "--max-connections", "100000", extra_env=extra_env) as (
        sock,
        proc,
    ):
        time.sleep(0.3)  # the replica helper starts with the first terminal; settle
        yield sock, proc.pid


def _connect(sock: Path) -> Connection:
    return Connection.open(sock, Deadline.after(20), client_name="bench")


def _raw(path: Path, hello: bool) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.fspath(path))
    if hello:
        sock.sendall(encode_frame(Hello(client_name="idle", major=1, minor=0, patch=0)))
    return sock


# ---------------------------------------------------------------- shapes


def idle_connections(directory: Path, n: int, **env: str) -> dict[str, float]:
    with _phux(directory, **env) as (sock, pid):
        before = _status(pid, "VmRSS")
        held = [_raw(sock, hello=True) for _ in range(n)]
        time.sleep(1.0)
        out = {"rss": _status(pid, "VmRSS") / 1024, "fds": _fds(pid), "before": before / 1024}
        for s in held:
            s.close()
        time.sleep(12.0)  # idle after the burst
        out["after"] = _status(pid, "VmRSS") / 1024
    return out


def partial_frames(directory: Path, n: int, **env: str) -> dict[str, float]:
    """N clients past HELLO, each holding 15 MiB of a 16 MiB frame (no tmux baseline:
    its protocol has no such frame; the baseline is a server without the bound)."""
    frame = encode_frame(Input(request_id=1, terminal=0, data=b"p" * (16 * 2**20 - 64)))
    with _phux(directory, **env) as (sock, pid):
        before = _status(pid, "VmRSS")
        held = []
        for _ in range(n):
            s = _raw(sock, hello=True)
            held.append(s)
            s.settimeout(10)
            with contextlib.suppress(OSError):  # the ones over the bound are closed
                s.sendall(frame[: 15 * 2**20])
        time.sleep(1.0)
        out = {"rss": _status(pid, "VmRSS") / 1024, "before": before / 1024}
        for s in held:
            s.close()
    return out


def idle_connections_tmux(directory: Path, n: int) -> dict[str, float]:
    tmux = Tmux(directory, "conns")
    try:
        tmux("new-session", "-d", "-s", "c", "sleep 3600")
        pid = tmux.server_pid()
        path = Path(tmux.base[2])
        held = [_raw(path, hello=False) for _ in range(n)]
        time.sleep(1.0)
        out = {"rss": _status(pid, "VmRSS") / 1024, "fds": _fds(pid)}
        for s in held:
            s.close()
        return out
    finally:
        tmux.kill()


def flood(directory: Path, data: Path, deaf: int, **env: str) -> dict[str, float]:
    """Peak RSS (server + helper) while ``cat`` of ``data`` reaches one reader, with
    ``deaf`` subscribers that never read; and the server's RSS 12 s after."""
    with _phux(directory, **env) as (sock, pid), _connect(sock) as conn:
        tid = spawn(conn, ["sh"])
        subscribe_ready(conn, tid)
        deaf_socks = []
        for i in range(deaf):
            s = _raw(sock, hello=True)
            s.sendall(encode_frame(Subscribe(request_id=i + 1, terminal=tid)))
            deaf_socks.append(s)
        time.sleep(0.3)
        peak = 0
        start = time.perf_counter()
        send(conn, tid, f"exec cat {data}\n".encode())
        deadline = Deadline.after(600)
        polled = 0.0
        while True:
            frame = conn.receive(deadline)
            now = time.perf_counter()
            if now - polled > 0.05:
                peak = max(peak, _with_helper(pid, "VmRSS"))
                polled = now
            if isinstance(frame, TerminalClosed) and frame.terminal == tid:
                break
            if isinstance(frame, Output):
                continue
        seconds = time.perf_counter() - start
        peak = max(peak, _with_helper(pid, "VmRSS"))
        for s in deaf_socks:
            s.close()
        time.sleep(12.0)
        return {"peak": peak / 1024, "seconds": seconds, "after": _status(pid, "VmRSS") / 1024}


def flood_tmux(directory: Path, data: Path, deaf: int, limit_s: float = 600) -> dict[str, float]:
    tmux = Tmux(directory, "flood")
    clients: list[subprocess.Popen[bytes]] = []
    try:
        tmux("new-session", "-d", "-x", "80", "-y", "24", "-s", "f", "/bin/sh")
        pid = tmux.server_pid()
        for _ in range(deaf):  # control-mode clients that never read their stdout
            clients.append(
                subprocess.Popen(
                    [*tmux.base, "-C", "attach", "-t", "f"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            )
        time.sleep(0.5)
        waiter = subprocess.Popen([*tmux.base, "wait-for", "done"])
        start = time.perf_counter()
        tmux("send-keys", "-t", "f", f"cat {data}; {' '.join(tmux.base)} wait-for -S done", "Enter")
        peak = 0
        # tmux stops reading the pane while a control client does not read: the cat
        # never ends. Its peak until then is still its memory for this shape.
        while waiter.poll() is None and time.perf_counter() - start < limit_s:
            peak = max(peak, _status(pid, "VmRSS"))
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        if waiter.poll() is None:
            print(f"# tmux: the cat did not finish in {limit_s:.0f}s", file=sys.stderr)
            waiter.kill()
            waiter.wait(5)
        return {"peak": max(peak, _status(pid, "VmRSS")) / 1024, "seconds": seconds}
    finally:
        for c in clients:
            c.kill()
            c.wait(5)
        tmux.kill()


def idle_terminals(directory: Path, m: int) -> dict[str, float]:
    with _phux(directory) as (sock, pid), _connect(sock) as conn:
        spawn(conn, ["sleep", "3600"])  # starts the replica helper
        time.sleep(0.5)
        before = _with_helper(pid, "VmRSS")
        ids = [spawn(conn, ["sleep", "3600"]) for _ in range(m)]
        time.sleep(1.0)
        after = _with_helper(pid, "VmRSS")
        out = {
            "per": (after - before) / m,
            "total": after / 1024,
            "fds": _fds(pid) + (_fds(_helper(pid)) if _helper(pid) else 0),
        }
        conn.call(lambda rid: Kill(request_id=rid, terminals=ids), Deadline.after(60))
        return out


def idle_terminals_tmux(directory: Path, m: int) -> dict[str, float]:
    tmux = Tmux(directory, "terms")
    try:
        tmux("new-session", "-d", "-s", "t", "sleep 3600")
        pid = tmux.server_pid()
        time.sleep(0.3)
        before = _status(pid, "VmRSS")
        for _ in range(m):
            tmux("new-window", "-d", "-t", "t:", "sleep 3600")  # "t:": the next free index
        time.sleep(1.0)
        after = _status(pid, "VmRSS")
        return {"per": (after - before) / m, "total": after / 1024, "fds": _fds(pid)}
    finally:
        tmux.kill()


# ---------------------------------------------------------------- entry point


def run(quick: bool) -> list[Measurement]:
    _raise_nofile()
    n = 200 if quick else 900  # under the default --max-connections of 1000
    k = 5 if quick else 20
    m = 200 if quick else 1000
    flood_size = (32 if quick else 200) * MB
    deaf_size = (16 if quick else 32) * MB
    results: list[Measurement] = []

    def add(name: str, unit: str, value: float, base_name: str, base: float) -> None:
        results.append(Measurement(BENCH, name, unit, value, base_name, base, False))

    with tempfile.TemporaryDirectory(prefix="phux-bench-") as tmp:
        root = Path(tmp)
        conns = idle_connections(root / "a", n)
        untrimmed = idle_connections(root / "a0", n, PHUX_TRIM_INTERVAL="0")
        tconns = idle_connections_tmux(root, n)
        add(f"server RSS, {n} idle connections", "MiB", conns["rss"], "tmux", tconns["rss"])
        add(f"server fds, {n} idle connections", "fds", conns["fds"], "tmux", tconns["fds"])
        add(
            f"server RSS 12 s after {n} connections left",
            "MiB",
            conns["after"],
            "same server before they came",
            conns["before"],
        )
        add(
            f"server RSS 12 s after {n} connections left",
            "MiB",
            conns["after"],
            "a server that never trims",
            untrimmed["after"],
        )
        p = 10 if quick else 40
        part = partial_frames(root / "p", p)
        unbounded = partial_frames(root / "p0", p, PHUX_MAX_PARTIAL_FRAMES=str(2**40))
        add(
            f"server RSS, {p} clients holding 15 MiB of a 16 MiB frame",
            "MiB",
            part["rss"],
            "no bound on incomplete frames",
            unbounded["rss"],
        )
        big = root / "flood.txt"
        make_file(big, flood_size)
        size = big.stat().st_size // MB
        fl = flood(root / "b", big, 0)
        tfl = flood_tmux(root, big, 0)
        add(f"peak RSS (server+replica), {size} MB flood", "MiB", fl["peak"], "tmux", tfl["peak"])
        add(f"seconds, {size} MB flood to one reader", "s", fl["seconds"], "tmux", tfl["seconds"])
        small = root / "deaf.txt"
        make_file(small, deaf_size)
        size = small.stat().st_size // MB
        dl = flood(root / "c", small, k)
        dl0 = flood(root / "c0", small, k, PHUX_TRIM_INTERVAL="0")
        add(
            f"server RSS 12 s after {size} MB to {k} non-reading subscribers",
            "MiB",
            dl["after"],
            "a server that never trims",
            dl0["after"],
        )
        tdl = flood_tmux(root, small, k, limit_s=max(30.0, 3 * dl["seconds"]))
        print(
            f"# {k} non-reading subscribers: phux {dl['seconds']:.1f}s, tmux {tdl['seconds']:.1f}s",
            file=sys.stderr,
        )
        add(
            f"peak RSS, {k} non-reading subscribers, {size} MB",
            "MiB",
            dl["peak"],
            f"tmux, {k} control clients not reading",
            tdl["peak"],
        )
        terms = idle_terminals(root / "d", m)
        tterms = idle_terminals_tmux(root, m)
        add(
            "RSS per idle terminal (server+replica)",
            "KiB",
            terms["per"],
            "tmux per window",
            tterms["per"],
        )
        add(
            f"RSS with {m} idle terminals (server+replica)",
            "MiB",
            terms["total"],
            "tmux",
            tterms["total"],
        )
        add(f"fds with {m} idle terminals", "fds", terms["fds"], "tmux", tterms["fds"])
    return results

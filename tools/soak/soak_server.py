"""A longer soak of a live server under the attacks of issue 15, run by hand.

    .venv/bin/python -m tools.soak.soak_server [--minutes 10] [--connections 20000]

It starts a server on a temp socket (default limits, so this is also a check
of the defaults) and, in rounds until the time is up, runs every attack of
tests/attack/ at full size: a crowd of idle connections that never say HELLO
(more than the connection limit), connect/close cycles, fuzzed frames, a
16 MiB frame of empty unknown fields, 40 clients holding 15 MiB of a 16 MiB
frame each (past the bound on incomplete frames), clients that never read their replies,
non-reading subscribers of a flooding terminal, input for a program that never
reads, and ``kill -9`` of the replica helper. Throughout, a probe pings the
server and a reference terminal (a header painted once, then a row-10 flood)
is checked: its header must survive every snapshot. It prints the worst ping,
the server's RSS and fd count per round, and exits 1 on the first failure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from phux.client import Client, Deadline
from phux.client.connection import Connection
from phux.client.errors import ServerError
from phux.wire import encode_frame
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
    Hello,
    Input,
    ListTerminals,
    MetaGet,
    MetaSet,
    Shutdown,
    Spawn,
    Subscribe,
    TerminalSpawned,
)

HEADER_PROGRAM = """
import os, time
def w(b):
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
w(b"\\x1b[H\\x1b[2J== SOAK HEADER ==")
i = 0
while True:
    w(b"\\x1b[10;1H\\x1b[2K%08d" % i)
    i += 1
    if i % 100000 == 0:
        time.sleep(0.5)
"""


class Failure(Exception):
    pass


def _raw(path: Path, hello: bool = True) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.fspath(path))
    if hello:
        s.sendall(encode_frame(Hello(client_name="soak", major=1, minor=0, patch=0)))
    return s


def _rss_fds(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return rss // 1024, len(os.listdir(f"/proc/{pid}/fd"))


def _replica_pid(pid: int) -> int:
    for task in Path(f"/proc/{pid}/task").iterdir():  # any thread may have started it
        with contextlib.suppress(OSError):
            for child in map(int, (task / "children").read_text().split()):
                with contextlib.suppress(OSError), open(f"/proc/{child}/cmdline", "rb") as c:
                    if b"phux.server.replica" in c.read():
                        return child
    return 0


PARTIAL_FRAME = encode_frame(Input(request_id=1, terminal=0, data=b"p" * (16 * 1024 * 1024 - 64)))
PARTIAL_SENT = 15 * 1024 * 1024


def _admitted(sock: Path, timeout: float = 30.0) -> Connection:
    """A connection, retried while the server is at its connection limit."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Connection.open(sock, Deadline.after(10), client_name="soak")
        except ServerError as exc:
            if exc.wire_code != ErrorCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Prober(threading.Thread):
    def __init__(self, sock: Path) -> None:
        super().__init__(daemon=True)
        self.sock = sock
        self.worst = 0.0
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with Connection.open(self.sock, Deadline.after(10), client_name="probe") as conn:
            while not self.stop.is_set():
                start = time.monotonic()
                try:
                    conn.call(lambda rid: ListTerminals(request_id=rid), Deadline.after(10))
                except Exception as exc:
                    self.errors.append(repr(exc))
                    return
                self.worst = max(self.worst, time.monotonic() - start)
                self.stop.wait(0.05)


def attack_round(sock: Path, pid: int, crowd: int, rng: random.Random) -> None:
    # Clients that announce a 16 MiB frame and send most of it, more of them than the
    # bound on incomplete frames holds: the ones over it are refused and closed.
    partial = []
    for _ in range(40):
        with contextlib.suppress(OSError):
            s = _raw(sock)
            partial.append(s)
            s.settimeout(5)
            s.sendall(PARTIAL_FRAME[:PARTIAL_SENT])
    # Idle connections that never say HELLO, past the connection limit.
    idle = []
    for _ in range(crowd):
        try:
            idle.append(_raw(sock, hello=False))
        except OSError:
            break
    # Connect/close cycles.
    for _ in range(500):
        with contextlib.suppress(OSError):
            _raw(sock).close()
    # Fuzzed frames (each on a fresh connection).
    for _ in range(300):
        with contextlib.suppress(OSError):
            s = _raw(sock)
            s.sendall(rng.randbytes(rng.randrange(1, 2000)))
            s.close()
    # A 16 MiB frame of empty unknown fields.
    with contextlib.suppress(OSError):
        s = _raw(sock)
        head = encode_frame(ListTerminals(request_id=1))
        body = head[5:] + b"\x63\x04\x00" * 5_500_000
        s.sendall((len(body) + 1).to_bytes(4, "big") + head[4:5] + body)
        s.close()
    # Clients that never read their replies.
    deaf = []
    for _ in range(5):
        s = _raw(sock)
        s.sendall(
            encode_frame(MetaSet(request_id=1, terminal=None, key="soak", value=b"x" * 60000))
        )
        burst = b"".join(
            encode_frame(MetaGet(request_id=i, terminal=None, key="soak")) for i in range(2, 400)
        )
        with contextlib.suppress(OSError):
            s.setblocking(False)
            s.send(burst)
        deaf.append(s)
    # Input for a program that never reads (once the crowd's HELLO deadline let us in).
    with _admitted(sock) as conn:
        reply = conn.call(
            lambda rid: Spawn(
                request_id=rid,
                argv=["python3", "-c", "import time, tty; tty.setraw(0); time.sleep(30)"],
            ),
            Deadline.after(10),
        )
        assert isinstance(reply, TerminalSpawned)
        # 320 MB for it from one raw client: the server stops reading that client at
        # its input backlog, so the send times out; memory stays bounded.
        paster = _raw(sock)
        paster.settimeout(5)
        paste = b"y" * 8_000_000
        with contextlib.suppress(OSError):
            for rid in range(1, 41):
                paster.sendall(
                    encode_frame(Input(request_id=rid, terminal=reply.terminal, data=paste))
                )
        deaf.append(paster)
    # kill -9 of the replica helper.
    helper = _replica_pid(pid)
    if helper:
        os.kill(helper, signal.SIGKILL)
    time.sleep(2.0)
    for s in idle + deaf + partial:
        s.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=20000)
    args = parser.parse_args(argv)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rng = random.Random(15)
    with tempfile.TemporaryDirectory(prefix="phux-soak-") as tmp:
        sock = Path(tmp) / "s"
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "phux",
                "server",
                "--socket",
                str(sock),
                "--log-file",
                str(Path(tmp) / "server.log"),
            ],
            env={**os.environ, "SHELL": "/bin/sh"},
        )
        try:
            deadline = time.monotonic() + 20
            while not sock.exists():
                if time.monotonic() > deadline:
                    raise Failure("server did not start")
                time.sleep(0.05)
            time.sleep(0.5)
            with Client(sock, env={}) as client:
                conn = Connection.open(sock, Deadline.after(10), client_name="soak")
                ref = conn.call(
                    lambda rid: Spawn(request_id=rid, argv=["python3", "-c", HEADER_PROGRAM]),
                    Deadline.after(10),
                )
                assert isinstance(ref, TerminalSpawned)
                conn.submit(lambda rid: Subscribe(request_id=rid, terminal=ref.terminal))
                prober = Prober(sock)
                prober.start()
                end = time.monotonic() + args.minutes * 60
                n = 0
                while time.monotonic() < end:
                    n += 1
                    attack_round(sock, server.pid, args.connections, rng)
                    state = client.snapshot(f"@{ref.terminal}", deadline=Deadline.after(60))
                    if not state.lines[0].startswith("== SOAK HEADER =="):
                        raise Failure(f"round {n}: header lost: {state.lines[:3]}")
                    if prober.errors:
                        raise Failure(f"round {n}: probe failed: {prober.errors}")
                    rss, fds = _rss_fds(server.pid)
                    print(
                        f"round {n}: worst probe {prober.worst * 1000:.0f} ms, "
                        f"server RSS {rss} MiB, {fds} fds",
                        flush=True,
                    )
                prober.stop.set()
                with contextlib.suppress(Exception):
                    conn.call(lambda rid: Shutdown(request_id=rid), Deadline.after(10))
                conn.close()
        except Failure as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
        finally:
            with contextlib.suppress(Exception):
                server.send_signal(signal.SIGTERM)
                server.wait(15)
            if server.poll() is None:
                server.kill()
    print("soak passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

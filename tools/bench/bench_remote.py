"""The wire over ssh: what the link costs, against the local socket and ssh itself.

A real sshd on 127.0.0.1 (tools/sshd_loopback.py) whose sessions use one phux
server; the same server is also reached through its local socket.

- **snapshot --json** and **run true**: median wall time of the whole
  ``phux`` process with ``--host`` against the same command on the local
  socket (lower is better; the ratio is local / remote).
- **relay**: a pane prints a file of base64 lines with ``cat``; seconds until
  a subscriber over the link has every byte, against ``ssh HOST cat FILE`` of
  the same file (the transport's own limit). 64 MB (8 MB with --quick).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import BootstrapChunk, Output, TerminalClosed
from tools.bench.bench_server import send, spawn, subscribe_ready
from tools.bench.harness import Measurement, median_seconds, run_silently
from tools.sshd_loopback import running_sshd

BENCH = "remote"


def run(quick: bool) -> list[Measurement]:
    root = Path(tempfile.mkdtemp(prefix="phux-bench-remote-", dir="/tmp"))
    sock = root / "server" / "s"
    sock.parent.mkdir(mode=0o700)
    far = {"PHUX_SOCKET": str(sock), "XDG_STATE_HOME": str(root / "state")}
    with running_sshd(root / "sshd", alias="bench-host", env=far) as sshd:
        env = {
            **os.environ,
            "PHUX_SSH": sshd.ssh_command(),
            "PHUX_REMOTE_PHUX": f"{sys.executable} -m phux",
            "SHELL": "/bin/sh",
        }
        env.pop("PHUX_HOST", None)
        local = {**env, "PHUX_SOCKET": str(sock)}
        remote = {**env, "PHUX_HOST": sshd.alias}
        phux = [sys.executable, "-m", "phux"]
        try:
            made = subprocess.run(
                [*phux, "new", "--json", "-s", "bench"],
                env=remote,
                capture_output=True,
                timeout=60,
                check=True,
            )
            assert made.returncode == 0
            subprocess.run(
                [*phux, "wait", "--idle", "300", "--timeout", "20", "bench"],
                env=local,
                capture_output=True,
                timeout=60,
                check=False,
            )
            repeat = 5 if quick else 15
            out: list[Measurement] = []
            for figure, argv in (
                ("snapshot --json", [*phux, "snapshot", "--json", "bench"]),
                ("run true", [*phux, "run", "bench", "true"]),
            ):
                near_s = median_seconds(partial(run_silently, argv, local), repeat=repeat)
                far_s = median_seconds(partial(run_silently, argv, remote), repeat=repeat)
                out.append(
                    Measurement(
                        BENCH,
                        f"{figure} over ssh",
                        "ms",
                        far_s * 1000,
                        "the local socket",
                        near_s * 1000,
                        higher_is_better=False,
                    )
                )
            size = (8 if quick else 64) * 1024 * 1024
            data = root / "payload"
            with open(data, "wb") as f:  # what `base64 FILE` prints: 76-column lines
                f.write(base64.encodebytes(os.urandom(size * 3 // 4))[:size])
            over_link = _relay(sshd.alias, env, data)
            start = time.perf_counter()
            subprocess.run(
                [*sshd.ssh_command().split(), sshd.alias, "cat", str(data)],
                stdout=subprocess.DEVNULL,
                timeout=600,
                check=True,
            )
            ssh_cat = time.perf_counter() - start
            mb = size / 1e6
            out.append(
                Measurement(
                    BENCH,
                    f"relay of {mb:.0f} MB over ssh",
                    "MB/s",
                    mb / over_link,
                    "ssh HOST cat",
                    mb / ssh_cat,
                )
            )
            return out
        finally:
            subprocess.run(
                [*phux, "kill", "--server", "--socket", str(sock)],
                capture_output=True,
                timeout=30,
                check=False,
            )


def _relay(host: str, env: dict[str, str], path: Path) -> float:
    """Seconds until a subscriber over the link has all of ``cat FILE``."""
    conn = Connection.open_host(host, None, Deadline.after(30), env, client_name="bench")
    try:
        tid = spawn(conn, ["sh"])
        next_seq = subscribe_ready(conn, tid)
        start = time.perf_counter()
        send(conn, tid, f"exec cat {path}\n".encode())
        deadline = Deadline.after(600)
        while True:
            frame = conn.receive(deadline)
            if isinstance(frame, Output | BootstrapChunk) and frame.terminal == tid:
                next_seq = frame.seq + len(frame.data)
            elif isinstance(frame, TerminalClosed) and frame.terminal == tid:
                assert next_seq == frame.final_seq
                return time.perf_counter() - start
    finally:
        conn.close()

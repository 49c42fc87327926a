"""Start and stop this repository's server for the suite (when no socket is given)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0


@dataclass
class Server:
    socket_path: str
    proc: subprocess.Popen[bytes] | None
    log: Path | None

    def log_tail(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")[-3000:]


def _connectable(path: str) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(path)
        return True
    except OSError:
        return False
    finally:
        sock.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT; always reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT)


@contextlib.contextmanager
def local_server(*extra_args: str) -> Iterator[Server]:
    """``python -m phux server --socket <tmpdir>/s [extra_args]`` in the foreground,
    stopped on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="phux-conf-"))
    path = str(tmp / "s")
    log = tmp / "server.log"
    env = dict(os.environ)
    env.pop("PHUX_SOCKET", None)
    env["XDG_STATE_HOME"] = str(tmp / "state")
    env["XDG_RUNTIME_DIR"] = str(tmp)
    env.setdefault("SHELL", "/bin/sh")
    with open(tmp / "stdio.log", "wb") as stdio:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "phux",
                "server",
                "--socket",
                path,
                "--log-file",
                str(log),
                *extra_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=stdio,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(tmp),
        )
    server = Server(socket_path=path, proc=proc, log=tmp / "stdio.log")
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _connectable(path):
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not accepting after {START_TIMEOUT}s")
            time.sleep(0.02)
        yield server
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)

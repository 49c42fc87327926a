"""A real server in a private temp dir, and programs that read their terminal in
controlled ways, for the input attacks (atomicity, cancellation, interrupts)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from phux.client import Client, Deadline
from phux.client.connection import Connection
from phux.client.errors import NoServer


@contextlib.contextmanager
def running_server(**extra_env: str) -> Iterator[Path]:
    """A server on a socket in a fresh private directory (``extra_env`` in its
    environment); yields the socket path."""
    directory = Path(tempfile.mkdtemp(prefix="phux-in-", dir="/tmp"))  # short: sun_path
    sock = directory / "s"
    env = {k: v for k, v in os.environ.items() if k not in ("PHUX_SOCKET", "PHUX_TERMINAL")}
    env.update(extra_env)
    argv = [sys.executable, "-m", "phux", "server", "--socket", str(sock)]
    with open(directory / "server.err", "wb") as err:
        proc = subprocess.Popen(
            [*argv, "--log-file", str(directory / "log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    try:
        end = time.monotonic() + 15
        while True:
            assert proc.poll() is None, (directory / "server.err").read_text()
            try:
                Connection.open(sock, Deadline.after(2)).close()
                break
            except NoServer:
                assert time.monotonic() < end, "the server did not start"
                time.sleep(0.02)
        yield sock
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        shutil.rmtree(directory, ignore_errors=True)


def wait_for(what: str, check: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def start(client: Client, name: str, script: str, *args: str) -> None:
    """A session running ``python -c script args...``."""
    client.new(
        name,
        command=[sys.executable, "-c", script, *args],
        env={"TERM": "xterm-256color"},
        cwd="/",
        deadline=Deadline.after(10),
    )


# Reads its terminal in raw mode (no ISIG), only once GATE exists, appending what it
# reads to OUT; leaves OUT.full once its line discipline holds 4 KiB (input behind waits).
GATED_READER = r"""
import fcntl, os, struct, sys, termios, time, tty
gate, out = sys.argv[1], sys.argv[2]
tty.setraw(0)
open(out + ".ready", "w").close()
while not os.path.exists(gate):
    if struct.unpack("i", fcntl.ioctl(0, termios.FIONREAD, bytes(4)))[0] >= 4000:
        open(out + ".full", "w").close()
    time.sleep(0.005)
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
while True:
    data = os.read(0, 65536)
    if not data:
        break
    os.write(fd, data)
"""

# Reads its terminal in raw mode, slowly (64 KiB every 10 ms), appending to OUT.
SLOW_RAW_READER = r"""
import os, sys, time, tty
out = sys.argv[1]
tty.setraw(0)
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
open(out + ".ready", "w").close()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    os.write(fd, data)
    time.sleep(0.01)
"""

# Cooked mode (so C-c is SIGINT), no echo; leaves OUT.ready, and OUT.sigint when interrupted.
_INTERRUPTIBLE = r"""
import os, signal, sys, termios, time
out = sys.argv[1]
def interrupted(signum, frame):
    open(out + ".sigint", "w").close()
    os._exit(0)
signal.signal(signal.SIGINT, interrupted)
attrs = termios.tcgetattr(0)
attrs[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, attrs)
open(out + ".ready", "w").close()
"""

# One line per read, slowly.
SLOW_LINE_READER = (
    _INTERRUPTIBLE
    + r"""
while True:
    data = os.read(0, 4096)
    if not data:
        break
    time.sleep(0.002)
"""
)

# Never reads its terminal.
DEAF_TO_INPUT = _INTERRUPTIBLE + "\nwhile True:\n    time.sleep(1)\n"

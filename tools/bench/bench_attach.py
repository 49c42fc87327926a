"""Keystroke-to-echo latency through ``phux attach``, against ``tmux attach``.

Both run in a PTY this bench drives (it plays the person's terminal). The
attached terminal runs ``cat`` in cooked mode, so the kernel echoes each
typed character at once: the figure is the path through the multiplexer,
not a program's reaction time. One keystroke at a time: write one letter to
the PTY master, read until that letter shows up in the output (escape
sequences removed first), record the time. Every 40 keystrokes a carriage
return ends the line and the output is drained before the next sample.

phux path: PTY -> ``phux attach`` -> socket -> server -> terminal PTY ->
echo -> server -> socket -> attach -> PTY. tmux path: PTY -> tmux client ->
tmux server -> pane PTY -> echo -> tmux server (redraw) -> PTY (the tmux
server writes to the client's tty directly). A third figure is the same echo
over a bare client connection (INPUT -> OUTPUT, no attach process, no outer
PTY): the share of the phux figure that is the server's and the wire's.
Both on private servers (phux: a tmp socket; tmux: ``-S`` in the same tmp
dir, no config, status line off), measured in the same run.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

from phux.wire.frames import Frame, Input
from tools.bench.harness import Measurement, percentile, phux_server

BENCH = "attach"
TMUX = shutil.which("tmux")
LETTERS = b"abefgiopsuvwxyz"  # letters that are not common escape-sequence finals
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78M]"
)
COLS, ROWS = 100, 30


class _Pty:
    """A child process on a fresh PTY of COLS x ROWS, driven through the master."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        import fcntl
        import struct

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        os.kill(pid, signal.SIGWINCH)

    def read_until(self, want: bytes, seconds: float) -> bytes:
        deadline = time.monotonic() + seconds
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"timed out waiting for {want!r}; got {buf[-300:]!r}")
            if select.select([self.fd], [], [], left)[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise RuntimeError(f"the attached process ended; got {buf[-300:]!r}")
                buf += chunk
                if want in _ESCAPES.sub(b"", buf):
                    return buf

    def drain(self, quiet: float = 0.05, seconds: float = 2.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not select.select([self.fd], [], [], quiet)[0]:
                return
            try:
                if not os.read(self.fd, 65536):
                    return
            except OSError:
                return

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _keystrokes(term: _Pty, count: int, warmup: int) -> list[float]:
    samples: list[float] = []
    for i in range(warmup + count):
        if i and i % 40 == 0:
            os.write(term.fd, b"\r")
            term.drain()
        letter = LETTERS[i % len(LETTERS) : i % len(LETTERS) + 1]
        start = time.perf_counter()
        os.write(term.fd, letter)
        term.read_until(letter, 10.0)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return samples


def _readable(fd: int, timeout: float) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


def _input(terminal: int, data: bytes) -> Callable[[int], Frame]:
    return lambda rid: Input(request_id=rid, terminal=terminal, data=data)


def _wire(sock: Path, count: int, warmup: int) -> list[float]:
    """The same echo over a bare client connection (INPUT -> OUTPUT): the part of
    the attach figure that is the server's and the wire's, not attach's."""
    from phux.client.connection import Connection
    from phux.client.deadline import Deadline
    from phux.wire.frames import BootstrapReady, Output, Role, Subscribe

    conn = Connection.open(sock, Deadline.after(10))
    try:
        tid = 1
        conn.submit(lambda r: Subscribe(request_id=r, terminal=tid, role=Role.VIEWER))
        while not isinstance(conn.receive(Deadline.after(10)), BootstrapReady):
            pass
        samples: list[float] = []
        for i in range(warmup + count):
            if i and i % 40 == 0:
                conn.submit(_input(tid, b"\r"))
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline and _readable(conn.fileno(), 0.05):
                    while conn.poll() is not None:
                        pass
            letter = LETTERS[i % len(LETTERS) : i % len(LETTERS) + 1]
            start = time.perf_counter()
            conn.submit(_input(tid, letter))
            while True:
                frame = conn.receive(Deadline.after(10))
                if isinstance(frame, Output) and letter in frame.data:
                    break
            if i >= warmup:
                samples.append(time.perf_counter() - start)
        return samples
    finally:
        conn.close()


def _phux(root: Path, count: int, warmup: int) -> tuple[list[float], list[float]]:
    sock = root / "s"
    env = dict(os.environ, PHUX_SOCKET=str(sock), TERM="xterm-256color")
    for var in ("PHUX_TERMINAL", "TMUX"):
        env.pop(var, None)
    term: _Pty | None = None
    with phux_server(sock, env):
        try:
            subprocess.run(
                [sys.executable, "-m", "phux", "new", "--json", "-s", "bench", "--", "cat"],
                env=env,
                check=True,
                capture_output=True,
                timeout=30,
            )
            term = _Pty([sys.executable, "-m", "phux", "attach", "bench"], env)
            term.drain(quiet=0.3, seconds=5.0)
            through_attach = _keystrokes(term, count, warmup)
            return through_attach, _wire(sock, count, warmup)
        finally:
            if term is not None:
                term.close()


def _tmux(root: Path, count: int, warmup: int) -> list[float]:
    assert TMUX is not None
    sock = root / "t.sock"
    env = dict(os.environ, TERM="xterm-256color", SHELL="/bin/sh")
    env.pop("TMUX", None)
    base = [TMUX, "-S", str(sock), "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "cat"],
        env=env,
        check=True,
        timeout=10,
    )
    term: _Pty | None = None
    try:
        subprocess.run([*base, "set-option", "-g", "status", "off"], env=env, check=True)
        term = _Pty([*base, "attach"], env)
        term.drain(quiet=0.3, seconds=5.0)
        return _keystrokes(term, count, warmup)
    finally:
        if term is not None:
            term.close()
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, timeout=10)


def run(quick: bool) -> list[Measurement]:
    if TMUX is None:
        print("# attach: tmux is not installed; skipped", file=sys.stderr)
        return []
    count, warmup = (100, 10) if quick else (600, 30)
    root = Path(tempfile.mkdtemp(prefix="phux-ba-", dir="/tmp"))
    try:
        phux, wire = _phux(root, count, warmup)
        tmux = _tmux(root, count, warmup)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ms = 1000.0
    return [
        Measurement(
            bench=BENCH,
            name="keystroke->echo median",
            unit="ms",
            value=statistics.median(phux) * ms,
            baseline_name="tmux attach",
            baseline=statistics.median(tmux) * ms,
            higher_is_better=False,
        ),
        Measurement(
            bench=BENCH,
            name="INPUT->OUTPUT echo median (bare wire, no attach)",
            unit="ms",
            value=statistics.median(wire) * ms,
            baseline_name="tmux attach",
            baseline=statistics.median(tmux) * ms,
            higher_is_better=False,
        ),
        Measurement(
            bench=BENCH,
            name="keystroke->echo p99",
            unit="ms",
            value=percentile(phux, 99) * ms,
            baseline_name="tmux attach",
            baseline=percentile(tmux, 99) * ms,
            higher_is_better=False,
        ),
    ]

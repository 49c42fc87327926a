"""Helpers for driving ``phux attach`` inside a private tmux server.

tmux plays the person: ``send-keys`` types, ``capture-pane`` is what they
see. Every wait polls with a deadline; every phux server and tmux server a
test starts is stopped in a ``finally``; sockets live in short tmp dirs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phux.client import Client, Deadline, NoServer
from phux.client.connection import Connection

START_TIMEOUT = 15.0
WAIT = 10.0
BASH = ["bash", "--norc", "--noprofile"]
SHELL_ENV = {"PS1": "$ ", "PS2": "> ", "HISTFILE": "/dev/null", "TERM": "xterm-256color"}

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def short_tmpdir() -> Path:
    # Unix socket paths are limited to 107 bytes: keep them out of pytest's long tmp paths.
    return Path(tempfile.mkdtemp(prefix="phux-t-", dir="/tmp"))


def clean_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("PHUX_SOCKET", "PHUX_TERMINAL", "PHUX_DETACH_KEY", "TMUX", "TMUX_PANE"):
        env.pop(var, None)
    env.update(extra)
    return env


class PhuxServer:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "s"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phux", "server", "--socket", str(self.socket), *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "server.err", "wb"),  # noqa: SIM115
            env=clean_env(XDG_STATE_HOME=str(self.dir / "state"), SHELL="/bin/sh"),
        )
        deadline = Deadline.after(START_TIMEOUT)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                Connection.open(self.socket, Deadline.after(2.0)).close()
                return
            except NoServer:
                pass
            if deadline.expired():
                raise RuntimeError("server did not start")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def client(self) -> Client:
        return Client(self.socket, env={})

    def new(self, name: str, command: list[str] | None = None) -> int:
        with self.client() as c:
            result = c.new(
                name,
                command=BASH if command is None else command,
                env=SHELL_ENV,
                cwd="/tmp",
                deadline=Deadline.after(10),
            )
            if command is None:  # ready once the shell reads input
                c.run(name, "true", timeout=15, deadline=Deadline.after(20))
        return result.terminal_id

    def phux(self, *args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "phux", *args],
            env=clean_env(PHUX_SOCKET=str(self.socket)),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def running_server(**env: str) -> Iterator[PhuxServer]:
    """A phux server in a short tmp dir, ``env`` in its environment, stopped and its
    directory removed afterwards (a module's ``server`` fixture yields from it)."""
    directory = short_tmpdir()
    srv = PhuxServer(directory)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.setenv(name, value)
            srv.start()
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(directory, ignore_errors=True)


class Tmux:
    """A private tmux server (its own socket, no config) holding the 'person'."""

    def __init__(self, directory: Path, server: PhuxServer) -> None:
        self.dir = directory
        self.generation = 0
        self.sock = directory / "t0.sock"
        self.server = server
        self.started = False

    def cmd(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-S", str(self.sock), "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=10,
            env=clean_env(SHELL="/bin/sh"),
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def attach_line(self, *attach_args: str, then: str = "") -> str:
        parts = [
            "env",
            f"PHUX_SOCKET={self.server.socket}",
            sys.executable,
            "-m",
            "phux",
            "attach",
            *attach_args,
        ]
        line = " ".join(shlex.quote(p) for p in parts)
        return f'{line}; echo "EXITED $?"' + (f"; {then}" if then else "; sleep 120")

    def start(self, command: str, *, cols: int = 100, rows: int = 30, window: str = "") -> None:
        if not self.started:
            # A fresh socket per tmux server: a killed one may still be exiting.
            self.generation += 1
            self.sock = self.dir / f"t{self.generation}.sock"
            self.cmd("new-session", "-d", "-x", str(cols), "-y", str(rows), command)
            self.cmd("set-option", "-g", "remain-on-exit", "on")
            self.started = True
        else:
            self.cmd("new-window", "-d", "-t", window, command)

    def attach(self, *args: str, cols: int = 100, rows: int = 30) -> None:
        self.start(self.attach_line(*args), cols=cols, rows=rows)

    def keys(self, *keys: str, target: str | None = None) -> None:
        self.cmd("send-keys", *(["-t", target] if target else []), *keys)

    def literal(self, text: str, target: str | None = None) -> None:
        self.cmd("send-keys", *(["-t", target] if target else []), "-l", text)

    def screen(self, target: str | None = None) -> str:
        return self.cmd("capture-pane", "-p", *(["-t", target] if target else []))

    def lines(self, target: str | None = None) -> list[str]:
        return [line.rstrip() for line in self.screen(target).splitlines()]

    def wait_for(
        self,
        cond: str | Callable[[str], bool],
        *,
        target: str | None = None,
        timeout: float = WAIT,
    ) -> str:
        """Poll the screen until ``cond`` (a substring or a predicate) holds."""
        check = (lambda s: cond in s) if isinstance(cond, str) else cond
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen(target)
            if check(screen):
                return screen
            time.sleep(0.03)
        raise AssertionError(f"timed out waiting for {cond!r}; the screen:\n{screen}")

    def kill(self) -> None:
        if self.started:
            with contextlib.suppress(Exception):
                self.cmd("kill-server")
            self.started = False


@pytest.fixture
def phux_server() -> Iterator[PhuxServer]:
    directory = short_tmpdir()
    server = PhuxServer(directory)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def small_queue_server() -> Iterator[PhuxServer]:
    """A server that tombstones a subscriber 64 KiB behind."""
    directory = short_tmpdir()
    server = PhuxServer(directory)
    try:
        server.start("--subscriber-queue-bytes", "65536")
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def tmux(phux_server: PhuxServer) -> Iterator[Tmux]:
    t = Tmux(phux_server.dir, phux_server)
    try:
        yield t
    finally:
        t.kill()

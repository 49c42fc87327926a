"""A real server per test module: `python -m phux server --socket <tmp>/s` as a subprocess."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client import Client, Deadline, NoServer
from phux.client.connection import Connection

START_TIMEOUT = 15.0
BASH = ["bash", "--norc", "--noprofile"]
SH = ["sh"]
SHELL_ENV = {"PS1": "$ ", "PS2": "> ", "HISTFILE": "/dev/null", "TERM": "xterm-256color"}


def short_tmpdir() -> Path:
    # Socket paths are limited to 107 bytes: keep them out of pytest's long tmp paths.
    return Path(tempfile.mkdtemp(prefix="phux-c-", dir="/tmp"))


def wait_for_socket(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = Deadline.after(timeout)
    delay = 0.005
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before accepting")
        try:
            Connection.open(path, Deadline.after(2.0)).close()
            return
        except NoServer:
            pass
        if deadline.expired():
            raise RuntimeError(f"server did not accept on {path} within {timeout}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextlib.contextmanager
def running_server(*extra: str) -> Iterator[Path]:
    directory = short_tmpdir()
    path = directory / "s"
    env = dict(os.environ)
    env.pop("PHUX_SOCKET", None)
    env.pop("PHUX_TERMINAL", None)
    env["XDG_STATE_HOME"] = str(directory / "state")
    proc = subprocess.Popen(
        [sys.executable, "-m", "phux", "server", "--socket", str(path), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(directory / "server.err", "wb"),  # noqa: SIM115
        env=env,
    )
    try:
        wait_for_socket(path, proc, START_TIMEOUT)
        yield path
    finally:
        stop_server(proc)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[Path]:
    with running_server() as path:
        yield path


@pytest.fixture
def client(server: Path) -> Iterator[Client]:
    c = Client(server, env={})
    try:
        yield c
    finally:
        c.close()


_counter = 0


def unique(prefix: str = "s") -> str:
    global _counter
    _counter += 1
    return f"{prefix}{os.getpid()}x{_counter}"


def new_shell(client: Client, shell: list[str] = BASH, name: str | None = None) -> str:
    """A fresh session running a plain shell, ready at its prompt; returns its name."""
    name = name or unique()
    client.new(name, command=shell, env=SHELL_ENV, cwd="/tmp", deadline=Deadline.after(10))
    # Ready once a trivial run round-trips (the shell has started reading input).
    client.run(name, "true", timeout=15, deadline=Deadline.after(20))
    return name


def released_when_watched(client: Client, name: str, fifo: str) -> threading.Thread:
    """A thread that opens ``fifo`` (the pane's command, blocked reading it, goes on)
    once a viewer (the wait under test) has subscribed to ``name``. It starts once the
    pane has no viewer: a mirror an earlier call released unsubscribes lazily, and
    counted, it would let the output start before the wait subscribed."""
    deadline = Deadline.after(10)
    terminal = client.resolve(name, deadline).terminal
    while client.list_terminals(deadline).by_id[terminal].viewers:
        time.sleep(0.01)

    def release() -> None:
        with Client(client.socket_path, env={}) as other:
            deadline = Deadline.after(15)
            while other.list_terminals(deadline).by_id[terminal].viewers < 1:
                time.sleep(0.01)
        with open(fifo, "w") as f:
            f.write("go\n")

    thread = threading.Thread(target=release)
    thread.start()
    return thread


@contextlib.contextmanager
def gated_shell(client: Client, shell: list[str] = BASH) -> Iterator[tuple[str, str]]:
    """A fresh shell and a FIFO (``(name, path)``) that its command can block on until
    the test opens it for writing (``released_when_watched``); the FIFO goes after."""
    name = new_shell(client, shell)
    fifo = f"/tmp/phux-fifo-{name}"
    os.mkfifo(fifo)
    try:
        yield name, fifo
    finally:
        os.unlink(fifo)

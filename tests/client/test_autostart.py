"""ensure_server starts a daemon (once, even when racing) and kill_server stops it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from phux.client import (
    Client,
    Deadline,
    DeadlineExceeded,
    NoServer,
    ensure_server,
    kill_server,
    server_running,
)
from phux.client.connection import Connection

from .conftest import short_tmpdir


def _server_pid(path: Path) -> int | None:
    try:
        with Connection.open(path, Deadline.after(5)) as conn:
            return conn.hello.pid if conn.hello is not None else None
    except NoServer:
        return None


def test_ensure_and_kill_server() -> None:
    directory = short_tmpdir()
    path = directory / "s"
    env_backup = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(directory / "state")
    try:
        assert not kill_server(path, Deadline.after(5))
        results: list[str] = []
        errors: list[BaseException] = []

        def start() -> None:
            try:
                results.append(ensure_server(path, Deadline.after(30)))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
        assert errors == []
        assert results == [str(path), str(path)]
        with Client(path, env={}) as c:
            assert c.ls(Deadline.after(5)) == []
            made = c.new("auto", command=["sh"], deadline=Deadline.after(5))
            assert made.session == "auto"
    finally:
        pid = _server_pid(path)
        try:
            assert kill_server(path, Deadline.after(10))
            assert not server_running(path, Deadline.after(5))
        finally:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if env_backup is None:
                os.environ.pop("XDG_STATE_HOME", None)
            else:
                os.environ["XDG_STATE_HOME"] = env_backup
            shutil.rmtree(directory, ignore_errors=True)


def test_a_wedged_server_cannot_hold_a_verb_past_the_deadline() -> None:
    directory = short_tmpdir()
    path = directory / "s"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        listener.listen(8)  # accepts (in the backlog) but never answers HELLO
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded), Client(path, env={}) as c:
            c.ls(Deadline.after(0.3))
        assert time.monotonic() - started < 2.0
    finally:
        listener.close()
        shutil.rmtree(directory, ignore_errors=True)

"""Lock files: never in a directory another user can write, never through a
planted symlink, and the per-terminal run locks do not outlive their terminal
or the server (issue 15 item 10, issue 14)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client import Client, Deadline
from phux.client.autostart import kill_server
from phux.client.connection import Connection

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two users")


@contextlib.contextmanager
def tmp_dir(mode: int) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="phux-lk-", dir="/tmp"))  # short: sun_path
    try:
        path.chmod(mode)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_nobody(fn: object) -> int:
    """Run ``fn()`` in a child as uid nobody; the child then waits to be killed."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(ready_r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()  # type: ignore[operator]
            os.write(ready_w, b"ok")
            os.close(ready_w)
            signal.pause()
        finally:
            os._exit(1)
    os.close(ready_w)
    with os.fdopen(ready_r, "rb") as pipe:
        assert pipe.read() == b"ok", "the attacker did not start"
    return pid


def reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def start_server(socket: Path, log: Path) -> subprocess.CompletedProcess[str]:
    argv = ["server", "--daemon", "--socket", str(socket), "--log-file", str(log)]
    return subprocess.run(
        [sys.executable, "-m", "phux", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@needs_root
def test_planted_symlink_for_the_server_lock_is_not_followed() -> None:
    """A sticky /tmp-like directory: another user plants `s.lock` -> a path they choose."""
    with tmp_dir(0o1777) as shared, tmp_dir(0o755) as elsewhere:
        target = elsewhere / "created-by-phux"
        pid = as_nobody(lambda: os.symlink(target, shared / "s.lock"))
        try:
            done = start_server(shared / "s", shared / "log")
            if done.returncode == 0:
                kill_server(str(shared / "s"), Deadline.after(10))
            assert not target.exists(), "phux created a file where the symlink pointed"
            assert done.returncode != 0
            assert "writable by group or others" in done.stderr, done.stderr
        finally:
            reap(pid)


@needs_root
def test_lock_held_by_another_user_gives_a_clear_error() -> None:
    """Another user pre-creates the server's lock file and holds it."""
    with tmp_dir(0o1777) as shared:

        def hold() -> None:
            fd = os.open(shared / "s.lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)

        pid = as_nobody(hold)
        try:
            done = start_server(shared / "s", shared / "log")
            if done.returncode == 0:
                kill_server(str(shared / "s"), Deadline.after(10))
            assert done.returncode != 0
            # Not "already running": the message says what is wrong and where.
            assert "already running" not in done.stderr
            assert str(shared) in done.stderr and "writable by group or others" in done.stderr
        finally:
            reap(pid)


def _lock_files(directory: Path) -> list[str]:
    return sorted(
        str(p.relative_to(directory)) for p in directory.rglob("*") if p.name.endswith(".lock")
    )


def _wait_gone(directory: Path, name: str, timeout: float = 10.0) -> list[str]:
    """The lock files left once ``name`` is gone (or the time is up)."""
    end = time.monotonic() + timeout
    while name in (left := _lock_files(directory)) and time.monotonic() < end:
        time.sleep(0.02)
    return left


def test_run_locks_are_removed_with_their_terminal_and_the_server() -> None:
    with tmp_dir(0o700) as directory:
        sock = directory / "sub" / "s"
        done = start_server(sock, directory / "log")
        assert done.returncode == 0, done.stderr
        with Connection.open(sock, Deadline.after(5)) as conn:
            assert conn.hello is not None
            server_pid = conn.hello.pid
        try:
            with Client(sock, env={}) as client:
                deadline = Deadline.after(30)
                panes = []
                for name in ("a", "b"):
                    client.new(name, command=["sh"], env={"PS1": "$ "}, deadline=deadline)
                    result = client.run(name, "echo hi", timeout=15, deadline=deadline)
                    assert result.exit_code == 0
                    panes.append(client.resolve(name, deadline))
                held = [f for f in _lock_files(sock.parent) if f != "s.lock"]
                assert len(held) == 2, held
                client.kill("a", deadline)
                lock_a = next(f for f in held if f.endswith(f"{panes[0].terminal}.lock"))
                left = _wait_gone(sock.parent, lock_a)
                assert lock_a not in left
                assert len([f for f in left if f != "s.lock"]) == 1, left
        finally:
            assert kill_server(str(sock), Deadline.after(10))
        end = time.monotonic() + 10
        while _running(server_pid) and time.monotonic() < end:
            time.sleep(0.02)
        assert not _running(server_pid)
        # The server's own lock file stays (one per socket); no run lock does.
        assert sorted(os.listdir(sock.parent)) == ["s.lock"]


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status

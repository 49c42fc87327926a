"""A client refuses, before it sends a byte, a socket another user could be listening on.

The attacker is a real process running as another uid (tests run as root here:
it drops to ``nobody`` with setuid) that listens on a real socket and records
every byte any client sends it. The victim is the real client (the library or
the ``phux`` CLI). Nothing the victim types may reach the attacker.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import UnsafeSocket

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two users")

NOBODY = 65534
VICTIM = 65533  # a second unprivileged uid for the default-path attack
# The venv's interpreter may live in root's home; the same version from the
# system is enough, with this process's sys.path.
_SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
VICTIM_PYTHON = _SYSTEM_PYTHON if os.path.exists(_SYSTEM_PYTHON) else sys.executable


@contextlib.contextmanager
def shared_tmp() -> Iterator[Path]:
    """A directory like /tmp, where both users can create (pytest's are root's only)."""
    path = Path(tempfile.mkdtemp(prefix="phux-trust-", dir="/tmp"))
    try:
        path.chmod(0o1777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Listener:
    """A process that listens on ``path`` as another user and records what it receives.

    ``bind_as_root``: bind (so the socket file is root's) and only then drop
    to ``uid`` and listen, so SO_PEERCRED names ``uid`` while every path
    check passes for a root client.
    """

    def __init__(self, path: Path, uid: int, *, make_dir: bool, bind_as_root: bool = False):
        self.path = path
        self.record = Path(tempfile.mkdtemp(prefix="phux-rec-")) / "got"
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 1
            try:
                os.close(ready_r)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                if bind_as_root:
                    sock.bind(str(path))
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                if make_dir:
                    path.parent.mkdir(mode=0o755)
                if not bind_as_root:
                    sock.bind(str(path))
                    os.chmod(path, 0o777)
                sock.listen(8)
                os.write(ready_w, b"ok")
                os.close(ready_w)
                sock.settimeout(20)
                got = b""
                while True:
                    peer, _ = sock.accept()
                    got += b"<connect>"
                    peer.settimeout(1)
                    with contextlib.suppress(OSError):
                        while chunk := peer.recv(65536):
                            got += chunk
                    peer.close()
                    fd = os.open(self.record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                    os.write(fd, got)
                    os.close(fd)
            except BaseException as exc:
                os.write(2, f"attacker: {exc!r}\n".encode())
            finally:
                os._exit(code)
        os.close(ready_w)
        self.pid = pid
        os.chmod(self.record.parent, 0o777)
        with os.fdopen(ready_r, "rb") as pipe:
            started = pipe.read() == b"ok"
        if not started:
            self.stop()
            raise AssertionError("the attacker did not start")

    def received(self) -> bytes:
        time.sleep(0.3)  # anything sent was sent before the client returned; let it land
        try:
            return self.record.read_bytes()
        except FileNotFoundError:
            return b""

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        shutil.rmtree(self.record.parent, ignore_errors=True)


@contextlib.contextmanager
def listener(path: Path, uid: int, **kw: bool) -> Iterator[Listener]:
    lst = Listener(path, uid, **kw)
    try:
        yield lst
    finally:
        lst.stop()


def test_socket_in_another_users_directory(tmp_path: Path) -> None:
    with shared_tmp() as base:
        path = base / "theirs" / "phux.sock"
        with listener(path, NOBODY, make_dir=True) as attacker:
            with pytest.raises(UnsafeSocket) as info:
                Connection.open(path, Deadline.after(5))
            message = str(info.value)
            assert f"uid {NOBODY}" in message and str(path.parent) in message, message
            assert info.value.remedy
            assert attacker.received() == b""


def test_cli_types_nothing_into_another_users_socket(tmp_path: Path) -> None:
    """The issue's attack: `send-keys 'export AWS_SECRET=...' Enter` to a planted socket."""
    with shared_tmp() as base:
        path = base / "theirs" / "phux.sock"
        with listener(path, NOBODY, make_dir=True) as attacker:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "phux",
                    "send-keys",
                    "--socket",
                    str(path),
                    "x",
                    "export AWS_SECRET=hunter2",
                    "Enter",
                ],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            assert done.returncode != 0
            assert f"uid {NOBODY}" in done.stderr, done.stderr
            assert attacker.received() == b""


def test_socket_owned_by_another_user_in_own_directory(tmp_path: Path) -> None:
    with shared_tmp() as base:
        path = base / "phux.sock"
        with listener(path, NOBODY, make_dir=False) as attacker:
            base.chmod(0o700)  # ours (root's) and private once the socket is planted
            with pytest.raises(UnsafeSocket) as info:
                Connection.open(path, Deadline.after(5))
            assert f"uid {NOBODY}" in str(info.value) and str(path) in str(info.value)
            assert attacker.received() == b""


def test_peer_credentials_checked(tmp_path: Path) -> None:
    """Every path check passes (root's socket in root's private directory), but the
    process listening on it runs as another user: SO_PEERCRED says so."""
    with shared_tmp() as base:
        base.chmod(0o700)
        path = base / "phux.sock"
        with listener(path, NOBODY, make_dir=False, bind_as_root=True) as attacker:
            assert path.stat().st_uid == 0
            with pytest.raises(UnsafeSocket) as info:
                Connection.open(path, Deadline.after(5))
            assert f"uid {NOBODY}" in str(info.value), str(info.value)
            assert attacker.received() == b"<connect>"  # connected, sent nothing


def test_group_writable_directory_refused(tmp_path: Path) -> None:
    with shared_tmp() as base:
        base.chmod(0o770)
        path = base / "phux.sock"
        with listener(path, 0, make_dir=False) as attacker:
            with pytest.raises(UnsafeSocket) as info:
                Connection.open(path, Deadline.after(5))
            assert "writable by group or others" in str(info.value)
            assert attacker.received() == b""


def _run_as(uid: int, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    def drop() -> None:  # pragma: no cover - runs in the child
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    return subprocess.run(
        [VICTIM_PYTHON, *argv],
        env={**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if os.path.isdir(p))},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        preexec_fn=drop,
        cwd="/",
    )


def test_default_tmp_directory_created_first_by_another_user() -> None:
    """No XDG_RUNTIME_DIR: the default is /tmp/phux-$UID, which anyone can create first."""
    directory = Path(f"/tmp/phux-{VICTIM}")
    if directory.exists():
        pytest.skip(f"{directory} exists already")
    try:
        probe = _run_as(VICTIM, ["-c", "import phux.cli.main"], {"PATH": os.defpath})
    except OSError as exc:
        pytest.skip(f"uid {VICTIM} cannot run {VICTIM_PYTHON}: {exc}")
    if probe.returncode != 0:
        pytest.skip(f"uid {VICTIM} cannot import phux here: {probe.stderr[-200:]}")
    try:
        with listener(directory / "phux.sock", NOBODY, make_dir=True) as attacker:
            env = {"PATH": os.defpath, "HOME": "/", "SHELL": "/bin/sh"}
            done = _run_as(
                VICTIM,
                ["-m", "phux", "send-keys", "x", "secret", "Enter"],
                env,
            )
            assert done.returncode != 0
            assert f"uid {NOBODY}" in done.stderr and str(directory) in done.stderr, done.stderr
            assert attacker.received() == b""
    finally:
        shutil.rmtree(directory, ignore_errors=True)

"""Socket directory checks, socket mode, stale sockets, one server per path, peer uid."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.wire import FrameReader, encode_frame
from phux.wire.errors import ErrorCode
from phux.wire.frames import Error, Hello

from .harness import ServerProcess, accepts, running_server

NOBODY = 65534


def start_fails(socket_path: Path, log: Path) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "phux",
            "server",
            "--socket",
            str(socket_path),
            "--log-file",
            str(log),
        ],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 1, done
    return done.stderr


def test_socket_and_directory_modes(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    server.socket = tmp_path / "new" / "dir" / "s"
    try:
        server.start()
        assert stat.S_IMODE(server.socket.stat().st_mode) == 0o600
        assert stat.S_IMODE(server.socket.parent.stat().st_mode) == 0o700
    finally:
        server.stop()
    assert not server.socket.exists()


@pytest.mark.parametrize("problem", ["other-owner", "world-writable"])
def test_unsafe_directory_refused(tmp_path: Path, problem: str) -> None:
    directory = tmp_path / "d"
    directory.mkdir(mode=0o700)
    if problem == "other-owner":
        os.chown(directory, NOBODY, NOBODY)
        needle = "owned by uid"
    else:
        directory.chmod(0o777)
        needle = "writable by group or others"
    err = start_fails(directory / "s", tmp_path / "log")
    assert needle in err and str(directory) in err
    assert not (directory / "s").exists()


def test_long_path_refused(tmp_path: Path) -> None:
    err = start_fails(tmp_path / ("x" * 120) / "s", tmp_path / "log")
    assert "platform limit" in err


def test_stale_socket_replaced_live_one_kept(tmp_path: Path) -> None:
    path = tmp_path / "s"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    assert path.exists() and not accepts(path)
    with running_server(tmp_path) as server:
        assert accepts(server.socket)
        err = start_fails(server.socket, tmp_path / "log2")
        assert "already running" in err
        assert accepts(server.socket)
    (tmp_path / "file").write_text("not a socket")
    assert "not a socket" in start_fails(tmp_path / "file", tmp_path / "log3")


@contextlib.contextmanager
def shared_dir() -> Iterator[Path]:
    """A directory another user can traverse (pytest's tmp dirs are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="phux-peer-", dir="/tmp"))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def connect_as(uid: int, path: Path) -> tuple[str, bytes]:
    """Connect from a child running as ``uid``; return (outcome, what the server sent)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(5)
            sock.connect(str(path))
            sock.sendall(encode_frame(Hello(client_name="intruder", major=1, minor=0, patch=0)))
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
            os.write(write_end, b"closed:" + received)
            code = 0
        except BaseException as exc:
            os.write(write_end, f"error:{exc!r}".encode())
        finally:
            os._exit(code)
    os.close(write_end)
    data = b""
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    outcome, _, rest = data.partition(b":")
    return outcome.decode(), rest


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_other_uid_refused(tmp_path: Path) -> None:
    with shared_dir() as directory, running_server(directory) as server:
        server.socket.chmod(0o666)  # let the kernel pass the connect; the server must refuse
        outcome, received = connect_as(NOBODY, server.socket)
        assert outcome == "closed", received
        reader = FrameReader()
        reader.feed(received)
        frames = reader.frames()
        assert len(frames) == 1
        assert isinstance(frames[0], Error) and frames[0].code == ErrorCode.PERMISSION_DENIED
        with server.connect():  # the owner is still served
            pass
        log = server.log.read_text()
        assert "refused connection from pid" in log and f"uid {NOBODY}" in log

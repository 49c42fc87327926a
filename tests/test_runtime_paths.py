import os
from pathlib import Path

import pytest

from phux.runtime_paths import (
    SocketDirError,
    check_socket_dir,
    ensure_socket_dir,
    resolve_socket_path,
)


def test_precedence_explicit_then_env_then_runtime_then_tmp() -> None:
    env = {"PHUX_SOCKET": "/e/s", "XDG_RUNTIME_DIR": "/run/user/7"}
    assert resolve_socket_path("/x/s", env) == "/x/s"
    assert resolve_socket_path(Path("/x/s"), env) == "/x/s"
    assert resolve_socket_path(None, env) == "/e/s"
    assert resolve_socket_path(None, {"XDG_RUNTIME_DIR": "/run/user/7"}) == (
        "/run/user/7/phux/phux.sock"
    )
    assert resolve_socket_path(None, {}) == f"/tmp/phux-{os.getuid()}/phux.sock"


def test_creates_directory_0700(tmp_path: Path) -> None:
    sock = tmp_path / "new" / "phux.sock"
    ensure_socket_dir(sock)
    assert (sock.parent.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770])
def test_shared_directory_is_refused_even_sticky(tmp_path: Path, mode: int) -> None:
    """In a sticky /tmp-like directory another user can still plant the socket's
    name, its lock file or a symlink first (issue 15, item 10)."""
    bad = tmp_path / "open"
    bad.mkdir()
    bad.chmod(mode)
    with pytest.raises(SocketDirError, match="writable by group or others"):
        check_socket_dir(bad)
    bad.chmod(0o700)
    check_socket_dir(bad)


def test_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a directory to another user")
    other = tmp_path / "theirs"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    with pytest.raises(SocketDirError, match="owned by uid 65534"):
        ensure_socket_dir(other / "phux.sock")


def test_too_long_path_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SocketDirError, match="platform limit"):
        ensure_socket_dir(tmp_path / ("x" * 120) / "phux.sock")

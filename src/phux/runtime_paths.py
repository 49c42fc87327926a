"""Where the server's socket and log live, and the safety checks on their directory.

Shared by the server (which creates the socket) and every client (which
connects to it), so the precedence is written once:
``--socket`` > ``$PHUX_SOCKET`` > ``$XDG_RUNTIME_DIR/phux/phux.sock`` >
``/tmp/phux-$UID/phux.sock``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

# Paths are plain strings here: every one-shot CLI process resolves the socket,
# and importing pathlib (with urllib.parse and ipaddress) would cost it ~6 ms.
StrPath = str | os.PathLike[str]

SOCKET_NAME = "phux.sock"
# sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class SocketDirError(Exception):
    """The socket's path or directory is unsafe or unusable; the message says why."""


def resolve_socket_path(
    explicit: StrPath | None = None, env: Mapping[str, str] | None = None
) -> str:
    env = os.environ if env is None else env
    if explicit:
        return os.fspath(explicit)
    if env.get("PHUX_SOCKET"):
        return env["PHUX_SOCKET"]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "phux", SOCKET_NAME)
    return os.path.join(f"/tmp/phux-{os.getuid()}", SOCKET_NAME)


def check_socket_path_length(path: StrPath) -> None:
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        raise SocketDirError(
            f"socket path is {size} bytes, over the platform limit of {MAX_SOCKET_PATH_BYTES}: "
            f"{path} (choose a shorter --socket or $PHUX_SOCKET)"
        )


def check_socket_dir(directory: StrPath) -> None:
    """Refuse a directory another user could use to intercept or replace the socket."""
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        raise SocketDirError(f"socket directory {directory} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SocketDirError(f"socket directory {directory} is not a directory")
    uid = os.geteuid()
    sticky = bool(st.st_mode & stat.S_ISVTX)
    # A root-owned sticky directory (such as /tmp itself) is safe: others
    # cannot remove or rename what we create in it.
    if st.st_uid != uid and not (st.st_uid == 0 and sticky):
        raise SocketDirError(
            f"socket directory {directory} is owned by uid {st.st_uid}, not by you (uid {uid})"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
        raise SocketDirError(
            f"socket directory {directory} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}) without the sticky bit"
        )


def ensure_socket_dir(path: StrPath) -> None:
    """Create the socket's directory (0700) if missing, then check it and the path."""
    check_socket_path_length(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(directory):
        try:
            os.makedirs(directory, mode=0o700)
        except FileExistsError:
            pass  # created concurrently: the check below decides whether it is ours
        except OSError as exc:
            raise SocketDirError(f"cannot create socket directory {directory}: {exc}") from None
    check_socket_dir(directory)


def default_log_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "phux", "server.log")


def default_audit_path(socket_path: StrPath, log_path: StrPath) -> str:
    """The input audit file of the server on ``socket_path``: beside its log, one per socket."""
    import hashlib

    tag = hashlib.sha256(os.fsencode(os.path.abspath(socket_path))).hexdigest()[:16]
    return os.path.join(os.path.dirname(os.path.abspath(log_path)), f"audit-{tag}.jsonl")

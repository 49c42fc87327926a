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


def _user_name(uid: int) -> str:
    try:
        import pwd  # only on the error path

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def check_socket_dir(directory: StrPath) -> None:
    """Refuse a directory another user could use to intercept or replace the socket.

    It must be a directory owned by this user that nobody else can write:
    not even a sticky shared one such as /tmp, where another user can plant
    a socket or a lock file (or a symlink) at a name we are about to use.
    """
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        raise SocketDirError(f"socket directory {directory} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SocketDirError(f"socket directory {directory} is not a directory")
    uid = os.geteuid()
    if st.st_uid != uid:
        raise SocketDirError(
            f"socket directory {directory} is owned by {_user_name(st.st_uid)}, "
            f"not by you (uid {uid})"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SocketDirError(
            f"socket directory {directory} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}): use a directory only you can write"
        )


def check_socket_trust(path: StrPath) -> bool:
    """Before a client connects: is ``path`` a socket that only this user can have made?

    False when there is nothing to connect to (no directory, no socket);
    SocketDirError when something is there that another user controls (the
    directory or the socket belongs to someone else, or others can write the
    directory). A server found this way was started by this user, so
    nothing typed into it reaches anyone else; the connection then checks the
    listening process's credentials too (SO_PEERCRED).
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(directory):
        return False
    check_socket_dir(directory)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    uid = os.geteuid()
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketDirError(f"{path} is not a socket")
    if st.st_uid != uid:
        raise SocketDirError(
            f"socket {path} is owned by {_user_name(st.st_uid)}, not by you (uid {uid})"
        )
    return True


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


def run_lock_dir(socket_path: StrPath) -> str:
    """The directory beside the socket that holds ``run``'s per-terminal lock files.

    The server creates it when it starts, removes a terminal's lock file when
    the terminal closes and the whole directory when it exits, so lock files
    never pile up next to the socket (issue 14).
    """
    directory, name = os.path.split(os.path.abspath(socket_path))
    return os.path.join(directory, f".{name}.run")


def run_lock_path(socket_path: StrPath, terminal: int | str) -> str:
    return os.path.join(run_lock_dir(socket_path), f"{terminal}.lock")


def open_lock_file(path: StrPath) -> int:
    """Open (creating, 0600) a lock file without following a symlink at its name.

    Only ever called for a path in a directory checked to be the user's own
    and private; O_NOFOLLOW is the second line of defence.
    """
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def open_private(path: StrPath, *, append: bool = True, exclusive: bool = False) -> int:
    """A file for writing that only its owner can read when it is created (0600), never
    opened through a symlink at ``path`` (O_NOFOLLOW: one placed there by someone else
    would redirect it): recordings, the input audit, the server's log. ``append``:
    added to, else emptied; ``exclusive``: it must not exist yet (a default name)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    flags |= os.O_APPEND if append else os.O_TRUNC
    if exclusive:
        flags |= os.O_EXCL
    return os.open(path, flags, 0o600)


def open_run_lock(socket_path: StrPath, terminal: int | str) -> int:
    """The file descriptor of ``terminal``'s run lock (its directory made 0700 if missing).

    ``socket_path`` stands for the server: its socket, or for a remote server a
    name in the default socket's directory, which is then created (0700) if
    missing; either way that directory must be private to this user.
    """
    ensure_socket_dir(socket_path)
    directory = run_lock_dir(socket_path)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SocketDirError(f"cannot create the run lock directory {directory}: {exc}") from None
    st = os.lstat(directory)
    uid = os.geteuid()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise SocketDirError(
            f"{directory} is not a private directory of yours (owner uid {st.st_uid}, "
            f"mode {stat.S_IMODE(st.st_mode):o}); remove it"
        )
    path = run_lock_path(socket_path, terminal)
    try:
        return open_lock_file(path)
    except OSError as exc:
        raise SocketDirError(f"cannot open the run lock {path}: {exc}") from None


def default_log_path(socket: StrPath | None = None, env: Mapping[str, str] | None = None) -> str:
    """The log of the server on ``socket``: ``$XDG_STATE_HOME/phux/server.log`` for the
    per-user default socket, ``server-<hash of the socket's absolute path>.log`` for
    any other, so two servers of one user never write to one file."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    name = "server.log"
    if socket is not None:
        path = os.path.abspath(os.fspath(socket))
        default = os.path.abspath(resolve_socket_path(None, {**env, "PHUX_SOCKET": ""}))
        if path != default:
            import hashlib

            name = f"server-{hashlib.sha256(path.encode()).hexdigest()[:12]}.log"
    return os.path.join(state, "phux", name)


def default_audit_path(socket_path: StrPath, log_path: StrPath) -> str:
    """The input audit file of the server on ``socket_path``: beside its log, one per socket."""
    import hashlib

    tag = hashlib.sha256(os.fsencode(os.path.abspath(socket_path))).hexdigest()[:16]
    return os.path.join(os.path.dirname(os.path.abspath(log_path)), f"audit-{tag}.jsonl")

"""``phux doctor``: what stands between this machine and a working phux, each with a remedy.

A check is ok, a warning (phux works, something is off or missing) or a
failure (phux cannot work as things are). Checks look at real conditions
only: the socket directory's owner and mode (the rules the server enforces,
phux.runtime_paths), the socket file and whether anything listens on it, the
shell integration scripts shipped in the package, programs on $PATH, and the
running server's versions against this client's.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
from collections.abc import Mapping

from phux import __version__
from phux.client.core import ClientCore
from phux.client.deadline import Deadline
from phux.client.errors import PhuxError
from phux.client.models import DoctorCheck, DoctorReport
from phux.runtime_paths import (
    SocketDirError,
    check_socket_dir,
    check_socket_path_length,
    resolve_socket_path,
)
from phux.wire import PROTOCOL_VERSION

OK, WARNING, FAILURE = "ok", "warning", "failure"

SHELL_SCRIPTS = {
    "bash": ("bash/phux.bash",),
    "zsh": ("zsh/.zshenv", "zsh/phux.zsh"),
    "fish": ("fish/phux.fish",),
    "sh": ("sh/phux.sh",),
}
"""The package's shell integration scripts, per shell (phux.server.shell_integration)."""


def _check(name: str, status: str, message: str, remedy: str = "") -> DoctorCheck:
    return DoctorCheck(name=name, status=status, message=message, remedy=remedy)


def check_socket_directory(path: str) -> DoctorCheck:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        check_socket_path_length(path)
    except SocketDirError as exc:
        return _check("socket_dir", FAILURE, str(exc), "use a shorter --socket or $PHUX_SOCKET")
    if not os.path.exists(directory):
        return _check(
            "socket_dir", OK, f"{directory} does not exist yet; the server creates it (mode 700)"
        )
    try:
        check_socket_dir(directory)
    except SocketDirError as exc:
        mine = os.stat(directory).st_uid == os.geteuid()
        remedy = (
            f"chmod 700 {directory}"
            if mine
            else "use a directory of your own: --socket or $PHUX_SOCKET"
        )
        return _check("socket_dir", FAILURE, str(exc), remedy)
    mode = stat.S_IMODE(os.stat(directory).st_mode)
    return _check("socket_dir", OK, f"{directory} is safe (mode {mode:o})")


def _listening(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def check_socket_file(path: str) -> tuple[DoctorCheck, bool]:
    """The socket file's check, and whether a server listens on it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        msg = f"no server running on {path}"
        return _check("socket", OK, msg + "; `phux new` starts one"), False
    except OSError as exc:
        return _check("socket", FAILURE, f"cannot look at {path}: {exc}", "check its path"), False
    if not stat.S_ISSOCK(st.st_mode):
        return (
            _check(
                "socket",
                FAILURE,
                f"{path} exists and is not a socket: no server can start there",
                f"remove it (rm {path}) or use another --socket",
            ),
            False,
        )
    if not _listening(path):
        return (
            _check(
                "socket",
                WARNING,
                f"{path} is a stale socket: nothing listens on it (a server died)",
                f"remove it (rm {path}); a starting server also replaces it",
            ),
            False,
        )
    return _check("socket", OK, f"a server listens on {path}"), True


def check_server(client: ClientCore, deadline: Deadline) -> list[DoctorCheck]:
    from phux.client.server_info import server_facts

    try:
        conn = client.connection(deadline)
        _, facts = server_facts(client, deadline)
    except PhuxError as exc:
        return [_check("server", FAILURE, exc.message, exc.remedy or "see the server log")]
    hello = conn.hello
    assert hello is not None
    ours = "{}.{}.{}".format(*PROTOCOL_VERSION)
    theirs = f"{hello.major}.{hello.minor}.{hello.patch}"
    checks = [_check("server", OK, f"server pid {hello.pid} speaks protocol {theirs}")]
    restart = "restart the server to match: `phux kill --server` (it stops every terminal)"
    if (hello.major, hello.minor) != PROTOCOL_VERSION[:2]:
        checks.append(
            _check(
                "protocol_skew",
                WARNING,
                f"this client speaks protocol {ours}, the server {theirs}: "
                "what the newer side adds is not used",
                restart,
            )
        )
    version = facts.get("version")
    if version is None:
        checks.append(
            _check(
                "version_skew",
                WARNING,
                f"the server does not say its version; this client is phux {__version__}",
                restart,
            )
        )
    elif version != __version__:
        checks.append(
            _check(
                "version_skew",
                WARNING,
                f"this client is phux {__version__}, the server phux {version}",
                restart,
            )
        )
    else:
        checks.append(_check("version_skew", OK, f"client and server are phux {__version__}"))
    return checks


def check_shell_integration(env: Mapping[str, str]) -> list[DoctorCheck]:
    import phux

    root = os.path.join(os.path.dirname(os.path.abspath(phux.__file__)), "shell_integration")
    missing = [
        f"{root}/{rel}"
        for rels in SHELL_SCRIPTS.values()
        for rel in rels
        if not os.path.isfile(os.path.join(root, rel))
    ]
    checks = []
    if missing:
        checks.append(
            _check(
                "shell_integration",
                FAILURE,
                "the package's shell integration scripts are missing: " + ", ".join(missing),
                "reinstall phux (pip install --force-reinstall phux)",
            )
        )
    else:
        checks.append(_check("shell_integration", OK, f"scripts present in {root}"))
    path = env.get("PATH", os.defpath)
    found = [name for name in ("bash", "zsh", "fish") if shutil.which(name, path=path)]
    absent = [name for name in ("bash", "zsh", "fish") if name not in found]
    if found:
        msg = "found " + ", ".join(found)
        if absent:
            msg += "; not found " + ", ".join(absent)
        checks.append(_check("shells", OK, msg))
    else:
        checks.append(
            _check(
                "shells",
                WARNING,
                "none of bash, zsh, fish is on $PATH: panes get no command marks "
                "(phux run and history need them)",
                "install bash (apt install bash)",
            )
        )
    shell = os.path.basename(env.get("SHELL", ""))
    if shell and shell not in {"bash", "zsh", "fish", "sh", "dash"}:
        checks.append(
            _check(
                "default_shell",
                WARNING,
                f"$SHELL is {shell}, which phux does not integrate: new panes get no command marks",
                "start panes with bash, zsh or fish (phux new -s NAME bash), or set $SHELL",
            )
        )
    return checks


def check_program(name: str, why: str, remedy: str, env: Mapping[str, str]) -> DoctorCheck:
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found:
        return _check(name, OK, f"{name} is {found}")
    return _check(name, WARNING, f"{name} is not on $PATH: {why}", remedy)


def doctor(
    socket_arg: str | None, deadline: Deadline, env: Mapping[str, str] | None = None
) -> DoctorReport:
    env = os.environ if env is None else env
    path = resolve_socket_path(socket_arg, env)
    checks = [check_socket_directory(path)]
    sock_check, listening = check_socket_file(path)
    checks.append(sock_check)
    if listening:
        with ClientCore(path, client_name="phux-cli", env=env) as client:
            checks += check_server(client, deadline)
    checks += check_shell_integration(env)
    checks.append(
        check_program(
            "ssh",
            "--host and HOST/ selectors reach other machines through it",
            "install the OpenSSH client (apt install openssh-client)",
            env,
        )
    )
    checks.append(
        check_program(
            "tmux",
            "phux does not need it, but agents told to use tmux look for it",
            "install tmux (apt install tmux) if your agents expect it",
            env,
        )
    )
    return DoctorReport(ok=all(c.status != FAILURE for c in checks), checks=checks)

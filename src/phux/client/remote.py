"""The wire to a phux server on another machine, over OpenSSH.

``ssh -T HOST phux proxy`` runs on the far side; ``phux proxy`` splices its
stdin and stdout to that machine's server socket (spec/transport.md), so the
bytes on the pipe are the bytes on the socket and the far server's peer check
sees the remote user. Keys, agents, ProxyJump, ControlMaster and known_hosts
are ssh's: phux adds no listener and no authentication of its own.

ssh's stdin and stdout are both one end of a socket pair, so the connection
reads and writes a socket here exactly as it does a Unix socket to a local
server, deadline for deadline.

Knobs, for odd set-ups and tests: ``$PHUX_SSH`` is the ssh command (split
like a shell would, default ``ssh``), ``$PHUX_REMOTE_PHUX`` the phux command
on the far side (a shell command line, default ``phux``).
"""

from __future__ import annotations

import _socket
import contextlib
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from typing import IO

from phux.client.deadline import Deadline
from phux.client.errors import PhuxError

HOST_ENV = "PHUX_HOST"
SSH_ENV = "PHUX_SSH"
REMOTE_PHUX_ENV = "PHUX_REMOTE_PHUX"
_STOP_GRACE_S = 2.0


class RemoteFailed(PhuxError):
    """ssh, or phux on the far side, could not give us a server."""

    code = "remote_failed"


class SshLink:
    """A running ``ssh HOST phux proxy``; ``sock`` is our end of its stdin/stdout."""

    def __init__(
        self, host: str, sock: _socket.socket, proc: subprocess.Popen[bytes], stderr: IO[bytes]
    ) -> None:
        self.host = host
        self.sock = sock
        self.proc = proc
        self._stderr = stderr
        """ssh's stderr, kept in a file: read back to explain a failure."""

    def failure(self, fallback: str) -> RemoteFailed:
        """Why the link ended (ssh's own words turned into what to do), once ssh exited."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(_STOP_GRACE_S)
        said = ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            said = printable(self._stderr.read().decode("utf-8", "replace")).strip()
        return explain(self.host, said, self.proc.returncode, fallback)

    def close(self) -> None:
        """Stop ssh (it ends when its stdin closes; terminate it if it lingers)."""
        with contextlib.suppress(OSError):
            self.sock.close()
        proc = self.proc
        try:
            proc.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(OSError):
            self._stderr.close()


def printable(text: str) -> str:
    """``text`` with every control character but line ends and tabs escaped (``\\x1b``):
    what the far side (its shell's rc files, a banner, a hostile host) writes to ssh's
    stderr must not drive the local terminal when an error quotes it."""
    return "".join(
        c if c in "\n\t" or not (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0) else f"\\x{ord(c):02x}"
        for c in text
    )


def ssh_argv(host: str, socket: str | None, env: Mapping[str, str]) -> list[str]:
    ssh = shlex.split(env.get(SSH_ENV) or "ssh")
    remote = env.get(REMOTE_PHUX_ENV) or "phux"
    command = f"{remote} proxy"
    if socket is not None:
        command += f" --socket {shlex.quote(socket)}"
    # -T: no terminal (the wire is binary); BatchMode: never prompt, there is no one
    # to answer on a pipe; ServerAlive*: a dead link is noticed, not waited on forever.
    options = ["-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15"]
    return [*ssh, *options, "--", host, command]


def open_ssh(host: str, socket: str | None, deadline: Deadline, env: Mapping[str, str]) -> SshLink:
    """Start ``ssh HOST phux proxy [--socket SOCKET]``; the handshake is the caller's."""
    if not host or host.startswith("-"):
        raise RemoteFailed(f"bad host {host!r}", remedy="name it as [USER@]HOST")
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (owned by the SshLink, closed with it)
    argv = ssh_argv(host, socket, env)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=theirs.fileno(),
            stdout=theirs.fileno(),
            stderr=stderr,
            env=dict(env),
            start_new_session=True,  # a Ctrl-C meant for us must not kill the link first
        )
    except FileNotFoundError:
        ours.close()
        stderr.close()
        raise RemoteFailed(
            f"cannot reach {host}: {argv[0]!r} is not installed",
            remedy=f"install OpenSSH's client, or set ${SSH_ENV} to the ssh command",
        ) from None
    finally:
        theirs.close()
    ours.settimeout(deadline.remaining())
    return SshLink(host, ours, proc, stderr)


def explain(host: str, said: str, status: int | None, fallback: str) -> RemoteFailed:
    """ssh's stderr and exit status as one error with a remedy."""
    last = said.splitlines()[-1] if said else ""
    lower = said.lower()
    if "host key verification failed" in lower or "no matching host key" in lower:
        return RemoteFailed(
            f"ssh does not know the host key of {host}",
            remedy=f"run `ssh {host} true` once to check and accept its key",
        )
    if "permission denied" in lower:
        return RemoteFailed(
            f"ssh could not log in to {host}: {last}",
            remedy=f"make `ssh {host} true` work without a prompt (a key or an agent)",
        )
    if status == 127 or "command not found" in lower or "no such file" in lower:
        return RemoteFailed(
            f"phux is not installed on {host} (or not on its PATH): {last}",
            remedy=f"install it there (pip install phux), or set ${REMOTE_PHUX_ENV} to its command",
        )
    if status == 255 or "could not resolve" in lower or "connection refused" in lower:
        return RemoteFailed(
            f"ssh could not reach {host}: {last or f'exit status {status}'}",
            remedy=f"check that `ssh {host} true` works",
        )
    detail = last or (f"ssh exited with status {status}" if status is not None else fallback)
    return RemoteFailed(f"{fallback} ({host}: {detail})", remedy=f"check `ssh {host} phux ls`")

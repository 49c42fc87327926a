"""A real OpenSSH server on loopback, for the remote tests and benchmarks (issue 18).

A high port, a host key and a client key made for the run, an
authorized_keys in a temporary directory, and an ssh_config that pins the
host key (StrictHostKeyChecking yes). Nothing of the user's ~/.ssh is read.
Only 127.0.0.1 is ever listened on or connected to.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
START_TIMEOUT = 15.0


def available() -> str | None:
    """Why the remote tests cannot run here, or None."""
    if not os.path.exists(SSHD):
        return "sshd is not installed (openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "ssh is not installed (openssh-client)"
    return None


@dataclass
class Sshd:
    port: int
    config: Path
    """An ssh_config naming the server as host ALIAS (and ALIAS2: a second name)."""
    alias: str
    proc: subprocess.Popen[bytes]
    root: Path

    def ssh_command(self) -> str:
        return f"ssh -F {self.config}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def running_sshd(
    root: Path, alias: str = "phux-remote-test", env: dict[str, str] | None = None
) -> Iterator[Sshd]:
    """sshd on 127.0.0.1 whose sessions get ``env`` (sshd's SetEnv)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    host_key, client_key = root / "host_key", root / "client_key"
    _keygen(host_key)
    _keygen(client_key)
    (root / "authorized_keys").write_text((root / "client_key.pub").read_text())
    port = _free_port()
    user = pwd.getpwuid(os.getuid()).pw_name
    sshd_config = root / "sshd_config"
    sshd_config.write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {host_key}\n"
        f"PidFile {root / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        "StrictModes no\n"
        "UsePAM no\n"
        "PrintMotd no\n"
        "LogLevel ERROR\n"
        # One SetEnv line with every variable: sshd takes only the first SetEnv line.
        + ("SetEnv " + " ".join(f'"{k}={v}"' for k, v in env.items()) + "\n" if env else "")
    )
    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {(root / 'host_key.pub').read_text()}")
    config = root / "ssh_config"
    config.write_text(
        f"Host {alias} {alias}-2\n"
        "  HostName 127.0.0.1\n"
        f"  Port {port}\n"
        f"  User {user}\n"
        f"  IdentityFile {client_key}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {known}\n"
        "  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n"
        "  LogLevel ERROR\n"
        "Host unknown-key-host\n"
        "  HostName 127.0.0.1\n"
        f"  Port {port}\n"
        f"  User {user}\n"
        f"  IdentityFile {client_key}\n"
        f"  UserKnownHostsFile {root / 'empty_known_hosts'}\n"
        "  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n"
        "  LogLevel ERROR\n"
    )
    # sshd needs its privilege-separation directory.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(sshd_config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(root / "sshd.log", "wb"),  # noqa: SIM115 (closed with the process)
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert proc.poll() is None, (root / "sshd.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, "sshd did not start"
            time.sleep(0.02)
        yield Sshd(port=port, config=config, alias=alias, proc=proc, root=root)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

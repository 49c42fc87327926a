"""Fixtures of the remote tests: two "hosts" (two sshd on loopback, each of whose
sessions talks to its own phux server socket), and a CLI that reaches them."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tools.sshd_loopback import Sshd, available, running_sshd

STEP_TIMEOUT = 60.0


@dataclass
class Host:
    alias: str
    socket: Path
    """The server socket its ssh sessions use (the far side's default)."""
    sshd: Sshd


@dataclass
class Remote:
    root: Path
    a: Host
    b: Host
    env: dict[str, str] = field(default_factory=dict)

    def phux(
        self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "phux", *args],
            env=env or self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
            cwd=self.root,
        )


def _stop_server(socket: Path) -> None:
    if socket.exists():
        subprocess.run(
            [sys.executable, "-m", "phux", "kill", "--server", "--socket", str(socket)],
            capture_output=True,
            timeout=30,
            check=False,
        )


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    why = available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"remote tests need OpenSSH: {why} (.ci/run installs it)")
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="phux-remote-", dir="/tmp"))
    hosts = []
    with contextlib.ExitStack() as stack:
        for name in ("a", "b"):
            sock = root / f"server-{name}" / "s"
            sock.parent.mkdir(mode=0o700)
            # The far side's HOME and state (the server's log and input audit) are
            # the test's, not the user's: sshd's sessions get the user's real HOME.
            home = root / f"home-{name}"
            home.mkdir(mode=0o700)
            far = {
                "PHUX_SOCKET": str(sock),
                "SHELL": "/bin/sh",
                "HOME": str(home),
                "XDG_STATE_HOME": str(home / "state"),
                "XDG_RUNTIME_DIR": str(home),
                # (An idle server lets its replica helper go after 5 s, and by
                # default runs one only while output is heavy: the far status is
                # read with one.)
                "PHUX_REPLICA_IDLE_S": "600",
                "PHUX_REPLICAS": "process",
            }
            sshd = stack.enter_context(
                running_sshd(root / f"sshd-{name}", alias=f"phux-host-{name}", env=far)
            )
            stack.callback(_stop_server, sock)
            hosts.append(Host(alias=sshd.alias, socket=sock, sshd=sshd))
        a, b = hosts
        # One ssh config naming both hosts, as a user's ~/.ssh/config would.
        config = root / "ssh_config"
        config.write_text(a.sshd.config.read_text() + b.sshd.config.read_text())
        env = dict(os.environ)
        for var in ("PHUX_SOCKET", "PHUX_HOST", "PHUX_TERMINAL", "TMUX"):
            env.pop(var, None)
        env.update(
            PHUX_SSH=f"ssh -F {config}",
            PHUX_REMOTE_PHUX=f"{sys.executable} -m phux",
            # The local default socket is somewhere no server runs.
            XDG_RUNTIME_DIR=str(root / "local-runtime"),
            XDG_STATE_HOME=str(root / "local-state"),
            SHELL="/bin/sh",
        )
        (root / "local-runtime").mkdir(mode=0o700)
        try:
            yield Remote(root=root, a=a, b=b, env=env)
        finally:
            stack.close()
            shutil.rmtree(root, ignore_errors=True)

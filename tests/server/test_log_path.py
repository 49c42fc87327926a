"""Each server of a user logs to its own file, whatever its socket (issue 14)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from phux.runtime_paths import default_log_path


def _phux(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phux", *args], env=env, capture_output=True, text=True, timeout=30
    )


def test_two_servers_write_two_logs(tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="phux-log-", dir="/tmp"))  # short socket paths
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("PHUX_SOCKET", None)
    sockets = [str(root / "a.sock"), str(root / "b.sock")]
    try:
        for sock in sockets:
            res = _phux(env, "server", "--daemon", "--socket", sock)
            assert res.returncode == 0, res.stderr
    finally:
        for sock in sockets:
            _phux(env, "kill", "--server", "--socket", sock)
        shutil.rmtree(root, ignore_errors=True)
    logs = {default_log_path(sock, env) for sock in sockets}
    assert len(logs) == 2
    for sock in sockets:
        log = Path(default_log_path(sock, env))
        assert log.parent == tmp_path / "state" / "phux"
        assert sock in log.read_text(), "each log names its own server's socket"
    assert sorted(p.name for p in (tmp_path / "state" / "phux").iterdir()) == sorted(
        Path(p).name for p in logs
    )
    # The per-user default socket keeps the documented name.
    default_env = {"XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "/r"}
    assert default_log_path("/r/phux/phux.sock", default_env) == "/s/phux/server.log"
    assert default_log_path(None, default_env) == "/s/phux/server.log"

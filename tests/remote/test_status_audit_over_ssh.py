"""`phux status` and the input audit for a server reached over ssh (issue 19)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from phux.runtime_paths import default_audit_path, default_log_path

from .conftest import Remote


def ok(res: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)
    return res


def test_status_and_audit_of_a_far_server(remote: Remote) -> None:
    host = remote.b.alias
    ok(remote.phux("new", "--host", host, "--json", "-s", "st", "--", "cat"))
    ok(remote.phux("send-keys", "--host", host, "st", "over-ssh"))
    st = json.loads(ok(remote.phux("status", "--host", host, "--json")).stdout)
    assert st["host"] == host and st["terminals"] == 1
    # Memory: the far server publishes its own (this side cannot read that /proc).
    assert st["rss_bytes"] > 1024 * 1024 and st["replicas"] == "process", st
    deadline = time.monotonic() + 20
    while st["replica_rss_bytes"] is None and time.monotonic() < deadline:
        # The helper's is published from its first look after it started (every 2 s).
        time.sleep(0.2)
        st = json.loads(ok(remote.phux("status", "--host", host, "--json")).stdout)
    assert st["replica_rss_bytes"] > 1024 * 1024
    far_rss = int(Path(f"/proc/{st['pid']}/statm").read_text().split()[1]) * os.sysconf(
        "SC_PAGE_SIZE"
    )
    assert far_rss / 2 < st["rss_bytes"] < far_rss * 2  # (published when it moves)
    assert "memory" in ok(remote.phux("status", "--host", host)).stdout
    # Loopback: the "far" pid is visible here, and it is that host's server.
    cmdline = Path(f"/proc/{st['pid']}/cmdline").read_bytes()
    assert b"server" in cmdline and str(remote.b.socket).encode() in cmdline
    # The far server audited the input; its pid is the `phux proxy` ssh started there.
    # Its state (log, audit) is the test's, in its temp dir: not the user's real
    # ~/.local/state, where a test must never write.
    assert Path(st["audit_file"]).is_relative_to(remote.root), st["audit_file"]
    real_state = {"XDG_RUNTIME_DIR": "/nonexistent"}  # (~/.local/state, the user's)
    for sock in (remote.a.socket, remote.b.socket):
        assert not Path(default_log_path(sock, real_state)).exists()
        assert not Path(default_audit_path(sock, default_log_path(sock, real_state))).exists()
    lines = Path(st["audit_file"]).read_text().splitlines()
    (entry,) = [json.loads(line) for line in lines]
    assert entry["client"].startswith("phux-cli/") and entry["bytes"] == len("over-ssh")
    # The far server sends its audit through the wire: the same entry, named as there.
    far = json.loads(ok(remote.phux("audit", "--host", host, "--json", "st")).stdout)
    assert far["host"] == host and far["audit_file"] == st["audit_file"]
    assert far["entries"] == [entry]
    assert json.loads(ok(remote.phux("audit", "--json", f"{host}/st")).stdout) == far
    text = ok(remote.phux("audit", "--host", host, "st")).stdout
    assert text.startswith(f"# {st['audit_file']} (on {host})\n")
    assert "phux-cli/" in text and "8 bytes" in text
    ok(remote.phux("kill", "--host", host, "st"))

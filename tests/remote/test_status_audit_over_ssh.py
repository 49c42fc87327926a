"""`phux status` and the input audit for a server reached over ssh (issue 19)."""

from __future__ import annotations

import json
import subprocess
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
    assert st["rss_bytes"] is None  # memory is read from /proc only for a local server
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

"""The CLI against a phux server on another "machine", through a real sshd on loopback:
the same verbs, selectors and JSON as locally (issue 18)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import Remote


def ok(res: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)
    return res


def test_the_agent_loop_over_ssh(remote: Remote) -> None:
    host = remote.a.alias
    new = json.loads(
        ok(
            remote.phux("--version") and remote.phux("new", "--host", host, "--json", "-s", "far")
        ).stdout
    )
    assert new["session"] == "far"
    # The server on the far side was started by `phux proxy` there, at its own socket.
    assert remote.a.socket.exists()
    ls = json.loads(ok(remote.phux("ls", "--host", host, "--json", "--panes")).stdout)
    assert [s["name"] for s in ls["sessions"]] == ["far"]
    # The far side's pids are not this machine's /proc (here they happen to be: the
    # same machine), so no cwd is read for them.
    assert [p["cwd"] for p in ls["sessions"][0]["panes"]] == [None]
    ok(remote.phux("wait", "--host", host, "--regex", r"[$#] ?$", "--timeout", "20", "far"))
    ok(remote.phux("send-keys", "--host", host, "far", "echo over-$((40+2))", "Enter"))
    ok(remote.phux("wait", "far", "--host", host, "--until", "over-42", "--timeout", "20"))
    snap = json.loads(ok(remote.phux("snapshot", "--host", host, "--json", "far")).stdout)
    assert "over-42" in snap["lines"] and snap["pane"] == new["terminal_id"]
    run = ok(remote.phux("run", "--host", host, "--json", "far", "echo far-$((6*7))"))
    result = json.loads(run.stdout)
    assert result["output"] == "far-42" and result["exit_code"] == 0
    failed = remote.phux("run", "--host", host, "far", "sh -c 'exit 3'")
    assert failed.returncode == 3, failed.stderr
    ok(remote.phux("kill", "--host", host, "far"))
    # Killed: listed as exited while the server there retains it.
    (gone,) = json.loads(ok(remote.phux("ls", "--host", host, "--json")).stdout)["sessions"]
    assert (gone["name"], gone["exited"]) == ("far", True)


def test_phux_host_and_the_selector_prefix(remote: Remote) -> None:
    env = {**remote.env, "PHUX_HOST": remote.a.alias}
    ok(
        remote.phux(
            "new", "--json", "-s", "by-env", "--", "sh", "-c", "echo from-env; sleep 60", env=env
        )
    )
    ok(remote.phux("wait", "--until", "from-env", "--timeout", "20", "by-env", env=env))
    # Without $PHUX_HOST, a HOST/ prefix reaches the same pane.
    snap = ok(remote.phux("snapshot", "--json", f"{remote.a.alias}/by-env"))
    assert "from-env" in json.loads(snap.stdout)["lines"]
    ok(remote.phux("kill", f"{remote.a.alias}/by-env"))


def test_watch_across_the_link(remote: Remote) -> None:
    host = remote.a.alias
    loop = "i=0; while :; do i=$((i+1)); printf '\\033]2;far-%s\\007' $i; sleep 0.3; done"
    ok(remote.phux("new", "--host", host, "--json", "-s", "watched", "--", "sh", "-c", loop))
    res = ok(
        remote.phux(
            "watch",
            "--host",
            host,
            "--json",
            "--until",
            "title_changed",
            "--timeout",
            "20",
            "watched",
        )
    )
    events = [json.loads(line) for line in res.stdout.splitlines()]
    titles = [e.get("title", "") for e in events if e["event"] == "title_changed"]
    assert titles and titles[-1].startswith("far-"), events
    ok(remote.phux("kill", "--host", host, "watched"))


def test_a_dropped_link_is_a_clear_error_and_loses_no_pane(remote: Remote) -> None:
    host = remote.a.alias
    ok(
        remote.phux(
            "new", "--host", host, "--json", "-s", "survivor", "--", "sh", "-c", "sleep 300"
        )
    )
    waiting = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "phux",
            "wait",
            "--host",
            host,
            "--until",
            "never-printed",
            "--timeout",
            "60",
            "survivor",
        ],
        env=remote.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        ssh = _child_ssh(waiting.pid, deadline=time.monotonic() + 20)
        _await_viewer(remote.a.socket, deadline=time.monotonic() + 20)
        os.kill(ssh, signal.SIGKILL)
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(10)
    assert waiting.returncode == 1, (out, err)
    assert "ssh link" in err and host in err and "keep running" in err
    ls = json.loads(ok(remote.phux("ls", "--host", host, "--json")).stdout)
    assert "survivor" in [s["name"] for s in ls["sessions"]]
    ok(remote.phux("kill", "--host", host, "survivor"))


def _await_viewer(socket: Path, deadline: float) -> None:
    """Until some terminal on the server at ``socket`` has a viewer (the waiting
    client's subscription came through the link). Same machine: read it directly."""
    from phux.client.connection import Connection
    from phux.client.deadline import Deadline
    from phux.wire.frames import ListTerminals, TerminalList

    with contextlib.closing(Connection.open(socket, Deadline.after(10))) as conn:
        while True:
            listing = conn.call(lambda rid: ListTerminals(request_id=rid), Deadline.after(10))
            assert isinstance(listing, TerminalList)
            if any(t.viewers for t in listing.terminals):
                return
            assert time.monotonic() < deadline, "the waiting client never subscribed"
            time.sleep(0.05)  # a listing has no event for "someone subscribed": poll it


def _child_ssh(pid: int, deadline: float) -> int:
    """The ssh process a phux process started, once it is there."""
    while True:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if int(fields[1]) == pid and comm == "ssh":
                return int(entry)
        assert time.monotonic() < deadline, "no ssh child appeared"
        time.sleep(0.05)


def test_failures_say_what_to_do(remote: Remote) -> None:
    unknown = remote.phux("ls", "--host", "unknown-key-host")
    assert unknown.returncode == 1
    assert "host key" in unknown.stderr and "ssh unknown-key-host true" in unknown.stderr
    missing = remote.phux(
        "ls", "--host", remote.a.alias, env={**remote.env, "PHUX_REMOTE_PHUX": "/nonexistent/phux"}
    )
    assert missing.returncode == 1
    assert "not installed on" in missing.stderr and "PHUX_REMOTE_PHUX" in missing.stderr
    no_ssh = remote.phux(
        "ls", "--host", remote.a.alias, env={**remote.env, "PHUX_SSH": "/nonexistent/ssh"}
    )
    assert no_ssh.returncode == 1 and "not installed" in no_ssh.stderr
    bad = remote.phux("ls", "--host", "-oProxyCommand=x")
    assert bad.returncode == 2
    # The far side's stderr reaches the local terminal as printable text only.
    hostile = "printf '\\033]0;pwned\\007\\033[2Jboom\\n' >&2; exit 3;"
    noisy = remote.phux(
        "ls", "--host", remote.a.alias, env={**remote.env, "PHUX_REMOTE_PHUX": hostile}
    )
    assert noisy.returncode == 1 and "boom" in noisy.stderr, noisy.stderr
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in noisy.stderr), noisy.stderr
    assert "\\x1b]0;pwned\\x07" in noisy.stderr, noisy.stderr

"""One MCP adapter driving panes on two hosts, and a person attaching over ssh (issue 18)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time

import pytest
from tests.mcp.mcp_pipes import McpProcess, notification

from .conftest import Remote


def _tool(mcp: McpProcess, rid: int, tool: str, **arguments: object) -> object:
    reply = mcp.call(tool, arguments, rid=rid, timeout=60)
    result = reply["result"]
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


def test_one_mcp_adapter_drives_two_hosts(remote: Remote) -> None:
    a, b = remote.a.alias, remote.b.alias
    with McpProcess(env=remote.env) as mcp:
        init = mcp.ask(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
        assert "result" in init, init
        mcp.send(notification("notifications/initialized"))
        for rid, host in ((1, a), (2, b)):
            new = _tool(mcp, rid, "phux_new", name=f"on-{host}", host=host)
            assert new["session"] == f"on-{host}"  # type: ignore[index]
        for rid, host in ((3, a), (4, b)):
            _tool(
                mcp,
                rid,
                "phux_send_keys",
                target=f"{host}/on-{host}",
                keys=[f"echo here-is-{host}", "Enter"],
            )
        for rid, host in ((5, a), (6, b)):
            waited = _tool(
                mcp,
                rid,
                "phux_wait",
                target=f"{host}/on-{host}",
                until=f"here-is-{host}",
                timeout_secs=30,
            )
            assert waited["outcome"] == "met", waited  # type: ignore[index]
        # Each host has its own server: the other host's session is not there.
        listed_a = _tool(mcp, 7, "phux_ls", host=a)
        assert [s["name"] for s in listed_a["sessions"]] == [f"on-{a}"]  # type: ignore[index]
        listed_b = _tool(mcp, 8, "phux_ls", host=b)
        assert [s["name"] for s in listed_b["sessions"]] == [f"on-{b}"]  # type: ignore[index]
        # Warm per host: a second snapshot of each is served by the same link.
        for rid, host in ((9, a), (10, b)):
            snap = _tool(mcp, rid, "phux_snapshot", target=f"{host}/on-{host}")
            assert any(f"here-is-{host}" in line for line in snap["lines"])  # type: ignore[index]
    for host in (a, b):
        subprocess.run(
            [sys.executable, "-m", "phux", "kill", "--host", host, f"on-{host}"],
            env=remote.env,
            capture_output=True,
            timeout=60,
            check=False,
        )


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_person_attaches_over_ssh(remote: Remote) -> None:
    host = remote.a.alias
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "phux",
            "new",
            "--host",
            host,
            "--json",
            "-s",
            "seen",
            "--",
            "sh",
            "-c",
            "echo remote-screen-ready; exec cat",
        ],
        env=remote.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(made.stdout)["session"] == "seen"
    tmux_sock = remote.root / "tmux.sock"
    env_words = " ".join(
        f"{k}={shlex.quote(v)}" for k, v in remote.env.items() if k.startswith(("PHUX_", "XDG_"))
    )
    attach = f"env {env_words} {sys.executable} -m phux attach --host {host} seen"
    tmux = ["tmux", "-S", str(tmux_sock), "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "80", "-y", "20", attach],
        check=True,
        timeout=30,
        env=remote.env,
    )
    try:
        deadline = time.monotonic() + 30
        while "remote-screen-ready" not in _screen(tmux):
            assert time.monotonic() < deadline, _screen(tmux)
            time.sleep(0.1)
        subprocess.run([*tmux, "send-keys", "typed-from-afar", "Enter"], check=True, timeout=10)
        while "typed-from-afar" not in _screen(tmux).replace("typed-from-afar\n", "", 0):
            assert time.monotonic() < deadline, _screen(tmux)
            time.sleep(0.1)
        # cat echoed it back: the person's keys reached the far pane and its output came back.
        deadline = time.monotonic() + 30
        while _screen(tmux).count("typed-from-afar") < 2:
            assert time.monotonic() < deadline, _screen(tmux)
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], timeout=10, check=False, capture_output=True)
        subprocess.run(
            [sys.executable, "-m", "phux", "kill", "--host", host, "seen"],
            env=remote.env,
            capture_output=True,
            timeout=60,
            check=False,
        )


def _screen(tmux: list[str]) -> str:
    return subprocess.run(
        [*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=10, check=False
    ).stdout

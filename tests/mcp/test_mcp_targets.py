"""Targets, environments and wait conditions through `phux mcp` and a real server
(issue 23 items 8 and 10): a session name keeps naming its active pane across
reads and new panes, `env` reaches the pane, phux_wait takes `regex`, and
`timeout_secs: 0` checks the current state once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_pipes import McpProcess, PhuxServer, initialized, running_server


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    with running_server() as srv:
        yield srv


@pytest.fixture
def mcp(server: PhuxServer) -> Iterator[McpProcess]:
    with initialized(server) as proc:
        yield proc


def body(reply: dict[str, Any]) -> Any:
    result = reply["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    return json.loads(result["content"][0]["text"])


def error(reply: dict[str, Any]) -> str:
    result = reply["result"]
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def pane_of(mcp: McpProcess, target: str) -> str:
    return str(body(mcp.call("phux_snapshot", {"target": target}))["pane"])


def new_sh(mcp: McpProcess, name: str, **extra: Any) -> int:
    made = body(mcp.call("phux_new", {"name": name, "command": ["sh"], **extra}))
    ready = body(mcp.call("phux_wait", {"target": name, "regex": r"\$ ?$", "timeout_secs": 10}))
    assert ready["outcome"] == "met"
    return int(made["terminal_id"])


def test_a_session_name_keeps_its_active_pane(mcp: McpProcess) -> None:
    seed = new_sh(mcp, "mcpdrift")
    logs = body(
        mcp.call(
            "phux_new_window",
            {"session": "mcpdrift", "name": "logs", "command": ["sh", "-c", "exec sleep 60"]},
        )
    )
    side = body(mcp.call("phux_split", {"target": "mcpdrift:0", "command": ["sh"]}))
    # Reads of other panes, and the new panes themselves, leave the name where it was.
    body(mcp.call("phux_snapshot", {"target": "mcpdrift:logs"}))
    body(mcp.call("phux_wait", {"target": "mcpdrift:logs", "idle_ms": 0, "timeout_secs": 1}))
    body(mcp.call("phux_history", {"target": f"@{side['terminal_id']}"}))
    assert pane_of(mcp, "mcpdrift") == str(seed)
    run = body(mcp.call("phux_run", {"target": "mcpdrift", "command": "echo here"}))
    assert (run["exit_code"], run["output"]) == (0, "here")
    # select makes the new pane the active one; a write to another pane moves it too.
    chosen = body(
        mcp.call("phux_split", {"target": "mcpdrift:0", "command": ["sh"], "select": True})
    )
    assert pane_of(mcp, "mcpdrift") == str(chosen["terminal_id"])
    body(mcp.call("phux_send_keys", {"target": "mcpdrift:0.0", "keys": [""]}))
    assert pane_of(mcp, "mcpdrift") == str(seed)
    assert pane_of(mcp, f"@{logs['terminal_id']}") == str(logs["terminal_id"])
    body(mcp.call("phux_kill", {"target": "mcpdrift"}))


def test_env_reaches_new_panes(mcp: McpProcess) -> None:
    new_sh(mcp, "mcpenv", env={"PHUX_T_ONE": "first=1"})
    run = body(mcp.call("phux_run", {"target": "mcpenv", "command": 'echo "[$PHUX_T_ONE]"'}))
    assert run["output"] == "[first=1]"
    for tool, args in (
        ("phux_new_window", {"session": "mcpenv"}),
        ("phux_split", {"target": "mcpenv:0"}),
    ):
        made = body(
            mcp.call(
                tool,
                {
                    **args,
                    "command": ["sh", "-c", 'echo "v=[$PHUX_T_TWO]"; exec sleep 60'],
                    "env": {"PHUX_T_TWO": tool},
                },
            )
        )
        target = f"@{made['terminal_id']}"
        seen = body(mcp.call("phux_wait", {"target": target, "until": f"v=[{tool}]"}))
        assert seen["outcome"] == "met", tool
    bad = mcp.call("phux_split", {"target": "mcpenv:0", "env": {"1X": "y"}})
    assert "environment variable name" in error(bad)
    body(mcp.call("phux_kill", {"target": "mcpenv"}))


def test_wait_regex_and_a_single_check(mcp: McpProcess) -> None:
    new_sh(mcp, "mcpwait")
    body(mcp.call("phux_send_keys", {"target": "mcpwait", "keys": ["echo ab$((40+2))cd", "Enter"]}))
    met = body(mcp.call("phux_wait", {"target": "mcpwait", "regex": r"^ab42cd$"}))
    assert met["outcome"] == "met"
    missing = body(
        mcp.call("phux_wait", {"target": "mcpwait", "regex": r"^zz\d$", "timeout_secs": 0})
    )
    assert missing["outcome"] == "timed_out"
    assert "not both" in error(
        mcp.call("phux_wait", {"target": "mcpwait", "regex": "a", "until": "a"})
    )
    assert "one of" in error(
        mcp.call("phux_wait", {"target": "mcpwait", "regex": "a", "prompt": True})
    )
    # An idle pane at its prompt: timeout_secs 0 checks the state once and finds it so.
    for condition in ({"prompt": True}, {"idle_ms": 200}, {}):
        once = body(mcp.call("phux_wait", {"target": "mcpwait", "timeout_secs": 0, **condition}))
        assert once["outcome"] == "met", condition
    body(mcp.call("phux_kill", {"target": "mcpwait"}))


def test_ls_shows_exited_sessions_the_server_keeps(mcp: McpProcess) -> None:
    made = body(mcp.call("phux_new", {"name": "mcpgone", "command": ["sh", "-c", "exit 3"]}))
    pane = f"@{made['terminal_id']}"
    done = body(mcp.call("phux_wait", {"target": pane, "exit": True, "timeout_secs": 10}))
    assert (done["outcome"], done["exit_code"]) == ("met", 3)
    rows = body(mcp.call("phux_ls", {}))["sessions"]
    (row,) = [r for r in rows if r["name"] == "mcpgone"]
    assert row["exited"] is True and [p["id"] for p in row["panes"]] == [pane]

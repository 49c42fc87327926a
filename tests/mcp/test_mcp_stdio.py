"""`phux mcp` as a subprocess, raw lines on its stdin: the robustness rules, end to end.

No phux server runs here; PHUX_SOCKET points into an empty temporary
directory, so every tool that needs a server fails as a tool.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_catalog import EVERY_TOOL
from mcp_pipes import McpProcess, notification, request

from phux import __version__


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    for sub in ("home", "run", "state", "config", "cache"):
        (tmp_path / sub).mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PHUX_SOCKET": str(tmp_path / "run" / "none.sock"),
    }


@pytest.fixture
def mcp(env: dict[str, str]) -> Iterator[McpProcess]:
    with McpProcess(env=env) as proc:
        yield proc


def test_handshake_and_clean_exit(mcp: McpProcess) -> None:
    reply = mcp.ask(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
    assert reply["id"] == 0
    result = reply["result"]
    assert result["protocolVersion"] == "2024-11-05"
    assert result["capabilities"]["tools"] == {}
    assert result["serverInfo"] == {"name": "phux", "version": __version__}
    mcp.send(notification("notifications/initialized"))
    assert mcp.ask("p", "ping") == {"jsonrpc": "2.0", "id": "p", "result": {}}
    start = time.monotonic()
    rc, err = mcp.finish()
    assert rc == 0 and err == b""
    assert time.monotonic() - start < 3


def test_probe_before_initialize_gets_method_not_found(mcp: McpProcess) -> None:
    reply = mcp.ask(1, "server/discover", {"_meta": {}})
    assert reply["error"]["code"] == -32601 and reply["id"] == 1
    assert mcp.ask(2, "initialize", {})["result"]["protocolVersion"] == "2025-11-25"


def test_robustness_rules(mcp: McpProcess) -> None:
    mcp.send(b"this is not json\n")
    assert mcp.out.message()["error"]["code"] == -32700
    mcp.send(b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}\n')
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    mcp.send(notification("notifications/unknown-thing", {"x": 1}))
    mcp.send(b'{"jsonrpc":"2.0","id":0,"method":"no/such"}\n')
    assert mcp.out.message() == {
        "jsonrpc": "2.0",
        "id": 0,
        "error": {"code": -32601, "message": "Method not found: no/such"},
    }
    mcp.send(b'{"jsonrpc":"2.0","id":"zero","method":3}\n')
    reply = mcp.out.message()
    assert reply["id"] == "zero" and reply["error"]["code"] == -32600
    reply = mcp.ask(5, "tools/call", {})
    assert reply["id"] == 5 and reply["error"]["code"] == -32602
    reply = mcp.call("phux_teleport", {})
    assert reply["error"]["code"] == -32602
    rc, err = mcp.finish()
    assert rc == 0 and err == b""


def test_huge_line_does_not_crash(mcp: McpProcess) -> None:
    payload = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (17 << 20)
    mcp.send(payload + b'"}}\n')
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert mcp.ask(2, "ping")["result"] == {}
    rc, err = mcp.finish()
    assert rc == 0 and err == b""


def test_tool_failure_without_a_server(mcp: McpProcess, env: dict[str, str]) -> None:
    for name, arguments in [
        ("phux_ls", {}),
        ("phux_snapshot", {}),
        ("phux_send_keys", {"target": "x", "keys": ["a"]}),
        ("phux_run", {"target": "x", "command": "true"}),
        ("phux_wait", {"timeout_secs": 1}),
        ("phux_new", {"name": "x"}),
    ]:
        reply = mcp.call(name, arguments)
        result = reply["result"]
        assert result["isError"] is True, name
        [block] = result["content"]
        assert block["type"] == "text"
        assert env["PHUX_SOCKET"] in block["text"] and "no server" in block["text"].lower()
    reply = mcp.call("phux_snapshot", {"scrollback": -3})
    assert reply["result"]["isError"] is True
    assert "scrollback" in reply["result"]["content"][0]["text"]
    rc, err = mcp.finish()
    assert rc == 0 and err == b""


def test_stdout_carries_only_protocol_messages(mcp: McpProcess) -> None:
    lines = [
        request(1, "initialize", {}),
        notification("notifications/initialized"),
        request(2, "tools/list"),
        b"{bad\n",
        request(3, "tools/call", {"name": "phux_ls", "arguments": {}}),
        request(4, "ping"),
    ]
    mcp.send(b"".join(lines))
    mcp.close_stdin()
    out = mcp.out.wait_eof()
    messages = [json.loads(line) for line in out.splitlines()]
    assert sorted(str(m["id"]) for m in messages) == ["1", "2", "3", "4", "None"]
    assert all(m["jsonrpc"] == "2.0" and ("result" in m) != ("error" in m) for m in messages)
    assert mcp.proc.wait(5) == 0


def test_starting_twice_has_no_side_effects(env: dict[str, str], tmp_path: Path) -> None:
    def tree() -> list[str]:
        return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))

    before = tree()
    for _ in range(2):
        with McpProcess(env=env) as proc:
            assert proc.ask(1, "initialize", {})["result"]["serverInfo"]["name"] == "phux"
            assert proc.call("phux_ls")["result"]["isError"] is True
            rc, err = proc.finish()
            assert rc == 0 and err == b""
        assert tree() == before


def test_read_only(env: dict[str, str]) -> None:
    with McpProcess("--read-only", env=env) as proc:
        tools = proc.ask(1, "tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == [
            "phux_ls",
            "phux_snapshot",
            "phux_wait",
            "phux_history",
            "phux_notes",
            "phux_tasks",
            "phux_summary",
        ]
        for name in ("phux_send_keys", "phux_run", "phux_new", "phux_set_notes"):
            reply = proc.call(name, {"target": "x", "keys": ["a"], "command": "x", "name": "x"})
            assert reply["error"]["code"] == -32602, name
        assert proc.call("phux_ls")["result"]["isError"] is True
        rc, err = proc.finish()
        assert rc == 0 and err == b""


def test_catalog_schemas(mcp: McpProcess) -> None:
    tools = mcp.ask(1, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == EVERY_TOOL
    for tool in tools:
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"]["properties"]["socket"]["type"] == "string"
        assert isinstance(tool["description"], str) and tool["description"]


HOSTILE_LINES = [
    b"[" * 1000 + b"]" * 1000,  # about 2 KB of nesting: msgspec's RecursionError
    b"[" * 1000,  # nested and cut short
    b"[" * 100_000,
    b"{" * 1000,
    b'{"jsonrpc":"2.0","id":9,"method":"ping","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'[{"jsonrpc":"2.0","id":9,"method":"ping"},' + b"[" * 3000 + b"]" * 3000 + b"]",
    b"[[",  # a batch cut short
    b"[1,",
]


def test_every_hostile_line_gets_an_error_and_calls_in_flight_survive(
    env: dict[str, str],
) -> None:
    from mcp_pipes import PhuxServer

    server = PhuxServer().start()
    try:
        with McpProcess(env={**env, "PHUX_SOCKET": str(server.socket)}) as mcp:
            new = mcp.call("phux_new", {"name": "deep", "command": ["/bin/sh"]})
            assert new["result"]["isError"] is False, new
            # In flight while the hostile lines arrive: answered only after them.
            mcp.send(
                request(
                    "slow",
                    "tools/call",
                    {
                        "name": "phux_run",
                        "arguments": {"target": "deep", "command": "sleep 1; echo slept"},
                    },
                )
            )
            for line in HOSTILE_LINES:
                mcp.send(line + b"\n")
                reply = mcp.out.message()
                assert reply["id"] is None, line[:60]
                assert reply["error"]["code"] in (-32700, -32600), reply
            assert mcp.ask("after", "ping") == {"jsonrpc": "2.0", "id": "after", "result": {}}
            slow = mcp.out.message(30)
            assert slow["id"] == "slow" and slow["result"]["isError"] is False, slow
            assert "slept" in slow["result"]["content"][0]["text"]
            rc, err = mcp.finish()
            assert rc == 0 and err == b""
    finally:
        server.stop()

"""`phux mcp` driven by the official MCP Python SDK client against a real phux server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client.stdio import stdio_client
from mcp_pipes import PhuxServer

from mcp import ClientSession, StdioServerParameters

TEST_TIMEOUT = 60.0
SESSION_INFO_SCHEMA = Path(__file__).parents[2] / "spec" / "schemas" / "session_info.schema.json"


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    srv = PhuxServer()
    try:
        yield srv.start()
    finally:
        srv.stop()


def params(server: PhuxServer, *args: str, socket_env: bool = True) -> StdioServerParameters:
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    if socket_env:
        env["PHUX_SOCKET"] = str(server.socket)
    return StdioServerParameters(command=sys.executable, args=["-m", "phux", "mcp", *args], env=env)


def session_run(p: StdioServerParameters, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with stdio_client(p) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.protocol_version == "2024-11-05"
                assert init.server_info is not None and init.server_info.name == "phux"
                assert init.capabilities.tools is not None
                await body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> tuple[Any, bool]:
    result = await session.call_tool(tool, arguments)
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    text: str = block.text  # type: ignore[union-attr]
    try:
        return json.loads(text), bool(result.is_error)
    except json.JSONDecodeError:
        assert result.is_error, text
        return text, True


async def ok(session: ClientSession, tool: str, /, **arguments: Any) -> Any:
    body, is_error = await call(session, tool, **arguments)
    assert not is_error, body
    return body


def test_every_tool_against_a_real_server(server: PhuxServer) -> None:
    async def body(session: ClientSession) -> None:
        listing = await session.list_tools()
        names = [t.name for t in listing.tools]
        assert names == [
            "phux_ls",
            "phux_snapshot",
            "phux_send_keys",
            "phux_run",
            "phux_wait",
            "phux_new",
            "phux_history",
            "phux_new_window",
            "phux_split",
            "phux_tag",
        ]
        for tool in listing.tools:
            assert tool.input_schema["type"] == "object"
        await session.send_ping()

        new = await ok(session, "phux_new", name="mcpa", command=["/bin/sh"])
        assert new["session"] == "mcpa" and isinstance(new["terminal_id"], int)
        pane = f"@{new['terminal_id']}"

        ls = await ok(session, "phux_ls")
        row = next(s for s in ls["sessions"] if s["name"] == "mcpa")
        assert set(row) == {"name", "window_count", "attached_client_count", "panes"}
        assert [(p["id"], p["state"]) for p in row["panes"]] == [(pane, "prompt")]
        jsonschema.validate(row, json.loads(SESSION_INFO_SCHEMA.read_text()))
        assert row["window_count"] >= 1 and row["attached_client_count"] == 0

        sent = await ok(session, "phux_send_keys", target="mcpa", keys=["echo hel''lo", "Enter"])
        assert sent == {"sent": True, "pane": pane}

        waited = await ok(session, "phux_wait", target="mcpa", until="hello", timeout_secs=10)
        assert waited["outcome"] == "met" and isinstance(waited["polls"], int)

        snap = await ok(session, "phux_snapshot", target="mcpa")
        assert snap["schema_version"] == 4 and snap["pane"] == new["terminal_id"]
        assert snap["state"] == "prompt" and snap["program"] in ("sh", "dash")
        assert any(line.strip() == "hello" for line in snap["lines"])
        assert "cells" not in snap and snap["scrollback"] == []
        snap = await ok(session, "phux_snapshot", target=pane, scrollback=0, cells=True)
        assert isinstance(snap["styles"], list) and isinstance(snap["scrollback"], list)

        run = await ok(session, "phux_run", target="mcpa", command="echo out; false")
        assert set(run) == {"command", "exit_code", "output", "duration_ms", "truncated"}
        assert run["command"] == "echo out; false" and run["exit_code"] == 1
        assert "out" in run["output"]

        timed = await ok(session, "phux_run", target="mcpa", command="sleep 30", timeout_secs=0.5)
        assert timed["outcome"] == "timed_out" and timed["command"] == "sleep 30"
        assert isinstance(timed["duration_ms"], int)
        await ok(session, "phux_send_keys", target="mcpa", keys=["C-c"])
        ready = await ok(session, "phux_wait", target="mcpa", prompt=True, timeout_secs=10)
        assert ready["outcome"] == "met" and ready["state"] == "prompt"

        missed = await ok(
            session, "phux_wait", target="mcpa", until="no-such-text-xyz", timeout_secs=0.5
        )
        assert missed["outcome"] == "timed_out"

        # Windows, panes and tags, then every selector form reaches them.
        win = await ok(session, "phux_new_window", session="mcpa", name="logs", command=["/bin/sh"])
        assert (win["session"], win["window"], win["pane"]) == ("mcpa", 1, 0)
        split = await ok(session, "phux_split", target="mcpa:logs", command=["/bin/sh"])
        assert (split["window"], split["pane"]) == (1, 1)
        tagged = await ok(session, "phux_tag", target="mcpa:1.1", tags=["mcptag"])
        assert tagged == {"tags": ["mcptag"]}
        for target, tid in (("#mcptag", split["terminal_id"]), ("mcpa:1.0", win["terminal_id"])):
            snap = await ok(session, "phux_snapshot", target=target)
            assert snap["pane"] == tid, target
        assert (await ok(session, "phux_snapshot", target="="))["pane"] == split["terminal_id"]
        untagged = await ok(session, "phux_tag", target="#mcptag", tags=["mcptag"], remove=True)
        assert untagged == {"tags": []}

        # Tool failures: results with isError and a readable text.
        text, is_error = await call(session, "phux_new", name="mcpa")
        assert is_error and "mcpa" in text
        text, is_error = await call(session, "phux_snapshot", target="nope-session")
        assert is_error and "nope-session" in text
        text, is_error = await call(session, "phux_send_keys", target="mcpa", keys=[])
        assert is_error and "keys" in text
        text, is_error = await call(session, "phux_ls", socket=str(server.dir / "absent.sock"))
        assert is_error and "absent.sock" in text

    session_run(params(server), body)


def test_socket_argument_wins_over_the_environment(server: PhuxServer) -> None:
    absent = str(server.dir / "absent.sock")

    async def body(session: ClientSession) -> None:
        text, is_error = await call(session, "phux_ls")
        assert is_error and absent in text  # $PHUX_SOCKET, not the per-user default
        ls = await ok(session, "phux_ls", socket=str(server.socket))
        assert isinstance(ls["sessions"], list)

    p = params(server, socket_env=False)
    assert p.env is not None
    p.env["PHUX_SOCKET"] = absent
    session_run(p, body)


def test_read_only_lists_observer_tools(server: PhuxServer) -> None:
    async def body(session: ClientSession) -> None:
        listing = await session.list_tools()
        assert [t.name for t in listing.tools] == [
            "phux_ls",
            "phux_snapshot",
            "phux_wait",
            "phux_history",
        ]
        await ok(session, "phux_ls")

    session_run(params(server, "--read-only"), body)


def test_high_level_client_probes_then_falls_back(server: PhuxServer) -> None:
    """mcp.Client (mode auto) probes server/discover first; the answer must not stall it."""
    from mcp import Client

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(params(server)) as client:
                assert client.protocol_version == "2024-11-05"
                result = await client.call_tool("phux_ls", {})
                assert not result.is_error
                assert "sessions" in json.loads(result.content[0].text)  # type: ignore[union-attr]

    anyio.run(main)


def test_the_adapter_outlives_a_server_restart() -> None:
    srv = PhuxServer()
    try:
        srv.start()

        async def body(session: ClientSession) -> None:
            await ok(session, "phux_new", name="before", command=["/bin/sh"])
            await ok(session, "phux_snapshot", target="before")  # a warm mirror now
            srv.restart()
            # Not retried blindly (it is not idempotent): the dead warm connection
            # is noticed and replaced before the call.
            new = await ok(session, "phux_new", name="after", command=["/bin/sh"])
            assert new["session"] == "after"
            ls = await ok(session, "phux_ls")
            assert [s["name"] for s in ls["sessions"]] == ["after"]

        session_run(params(srv), body)
    finally:
        srv.stop()

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
from mcp_catalog import EVERY_TOOL
from mcp_pipes import PhuxServer

from mcp import ClientSession, StdioServerParameters, types


class _Short:
    """Equal to a small wait: an uncontended turn still takes a moment on a busy machine."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and 0 <= other < 1000

    def __repr__(self) -> str:
        return "<0..999>"


ANY_SHORT: Any = _Short()

TEST_TIMEOUT = 60.0
SCHEMAS = Path(__file__).parents[2] / "spec" / "schemas"
SESSION_INFO_SCHEMA = SCHEMAS / "session_info.schema.json"
SDK_DEFAULT = "2025-11-25"
# resources/subscribe is the way through 2025-11-25 (the SDK's newer listen() is 2026's).
pytestmark = pytest.mark.filterwarnings("ignore:resources/")
"""What this SDK's ClientSession.initialize asks for; phux serves it."""


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


async def initialize(session: ClientSession, version: str | None) -> types.InitializeResult:
    """The SDK's own handshake (it asks for its newest revision), or one asking for
    ``version``: the same request through the SDK's public calls, so the session
    then speaks what was negotiated."""
    if version is None:
        return await session.initialize()
    result = await session.send_request(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=version,
                capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="phux-test", version="0"),
            )
        ),
        types.InitializeResult,
    )
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


def session_run(
    p: StdioServerParameters,
    body: Callable[[ClientSession], Awaitable[None]],
    version: str | None = "2024-11-05",
) -> None:
    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with stdio_client(p) as (read, write), ClientSession(read, write) as session:
                init = await initialize(session, version)
                assert init.protocol_version == (version or SDK_DEFAULT)
                assert init.server_info is not None and init.server_info.name == "phux"
                assert init.capabilities.tools is not None
                await body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> tuple[Any, bool]:
    # From 2025-06-18 on, the SDK itself checks structuredContent against the
    # tool's outputSchema (and fails the call when it is missing or wrong).
    result = await session.call_tool(tool, arguments)
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    text: str = block.text  # type: ignore[union-attr]
    structured = session.initialize_result is not None and (
        session.initialize_result.protocol_version >= "2025-06-18"
    )
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        assert result.is_error, text
        assert result.structured_content is None
        return text, True
    if structured and not result.is_error:
        assert result.structured_content == body  # the same document, twice
    else:
        assert result.structured_content is None
    return body, bool(result.is_error)


def hint(tool: types.Tool, name: str, default: bool) -> bool:
    value = getattr(tool.annotations, name, None) if tool.annotations is not None else None
    return default if value is None else bool(value)


async def ok(session: ClientSession, tool: str, /, **arguments: Any) -> Any:
    body, is_error = await call(session, tool, **arguments)
    assert not is_error, body
    return body


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", None])
def test_every_tool_against_a_real_server(server: PhuxServer, version: str | None) -> None:
    """At the oldest revision, at the one that added annotations, at the one that
    added outputSchema + structuredContent (which the SDK validates), and at the
    SDK's own newest."""
    name = f"mcpa{(version or 'new').replace('-', '')}"
    negotiated = version or SDK_DEFAULT

    async def body(session: ClientSession) -> None:
        listing = await session.list_tools()
        names = [t.name for t in listing.tools]
        assert names == EVERY_TOOL
        typers = {"phux_send_keys", "phux_run", "phux_paste"}  # every hint MCP's default
        for tool in listing.tools:
            assert tool.input_schema["type"] == "object"
            # (Until 2025-06-18 gave tools a title, the title is an annotation.)
            annotated = negotiated >= "2025-03-26" and (
                tool.name not in typers or negotiated < "2025-06-18"
            )
            assert (tool.annotations is not None) is annotated
            assert (tool.output_schema is not None) is (negotiated >= "2025-06-18")
            assert (tool.title is not None) is (negotiated >= "2025-06-18")
            if negotiated >= "2025-03-26":
                # Hints left out mean MCP's defaults (the listing is paid for in tokens).
                read_only = tool.name in {
                    "phux_ls",
                    "phux_snapshot",
                    "phux_wait",
                    "phux_history",
                    "phux_notes",
                    "phux_tasks",
                    "phux_summary",
                }
                assert hint(tool, "read_only_hint", False) is read_only
                if not read_only:
                    assert hint(tool, "destructive_hint", True) is (
                        tool.name
                        in {
                            "phux_send_keys",
                            "phux_run",
                            "phux_paste",
                            "phux_kill",
                            "phux_set_notes",
                            "phux_update_task",
                        }
                    )
        await session.send_ping()

        new = await ok(session, "phux_new", name=name, command=["/bin/sh"])
        assert new["session"] == name and isinstance(new["terminal_id"], int)
        pane = f"@{new['terminal_id']}"

        ls = await ok(session, "phux_ls")
        row = next(s for s in ls["sessions"] if s["name"] == name)
        assert set(row) == {"name", "window_count", "attached_client_count", "exited", "panes"}
        assert [(p["id"], p["state"]) for p in row["panes"]] == [(pane, "prompt")]
        jsonschema.validate(row, json.loads(SESSION_INFO_SCHEMA.read_text()))
        assert row["window_count"] >= 1 and row["attached_client_count"] == 0

        # Type only once the shell drew its prompt ("$ "), so the echo is not mixed into it.
        prompt = await ok(session, "phux_wait", target=name, until="$", timeout_secs=10)
        assert prompt["outcome"] == "met"
        sent = await ok(session, "phux_send_keys", target=name, keys=["echo hel''lo", "Enter"])
        assert sent == {"sent": True, "pane": pane, "waited_ms": ANY_SHORT}

        waited = await ok(session, "phux_wait", target=name, until="hello", timeout_secs=10)
        assert waited["outcome"] == "met" and isinstance(waited["polls"], int)

        snap = await ok(session, "phux_snapshot", target=name)
        assert snap["schema_version"] == 4 and snap["pane"] == new["terminal_id"]
        assert snap["state"] == "prompt" and snap["program"] in ("sh", "dash")
        assert any(line.strip() == "hello" for line in snap["lines"]), snap["lines"]
        assert "cells" not in snap and snap["scrollback"] == []
        snap = await ok(session, "phux_snapshot", target=pane, scrollback=0, cells=True)
        assert isinstance(snap["styles"], list) and isinstance(snap["scrollback"], list)

        run = await ok(session, "phux_run", target=name, command="echo out; false")
        assert set(run) == {
            "command",
            "exit_code",
            "output",
            "duration_ms",
            "truncated",
            "waited_ms",
        }
        assert run["command"] == "echo out; false" and run["exit_code"] == 1
        assert "out" in run["output"]

        timed = await ok(session, "phux_run", target=name, command="sleep 30", timeout_secs=0.5)
        assert timed["outcome"] == "timed_out" and timed["command"] == "sleep 30"
        assert isinstance(timed["duration_ms"], int) and timed["waited_ms"] == ANY_SHORT
        await ok(session, "phux_send_keys", target=name, keys=["C-c"])
        ready = await ok(session, "phux_wait", target=name, prompt=True, timeout_secs=10)
        assert ready["outcome"] == "met" and ready["state"] == "prompt"
        # timeout_secs 0 means the same on both surfaces: no unlimited run, and a
        # wait that checks once.
        text, is_error = await call(
            session, "phux_run", target=name, command="true", timeout_secs=0
        )
        assert is_error and "timeout_secs" in text
        once = await ok(session, "phux_wait", target=name, until="hello", timeout_secs=0)
        assert once == {"outcome": "met", "polls": 1}

        pasted = await ok(session, "phux_paste", target=name, text="echo pas''ted\n")
        assert pasted == {"sent": True, "pane": pane, "waited_ms": ANY_SHORT}
        waited = await ok(session, "phux_wait", target=name, until="pasted", timeout_secs=10)
        assert waited["outcome"] == "met"

        missed = await ok(
            session, "phux_wait", target=name, until="no-such-text-xyz", timeout_secs=0.5
        )
        assert missed["outcome"] == "timed_out"

        # Windows, panes and tags, then every selector form reaches them.
        win = await ok(session, "phux_new_window", session=name, name="logs", command=["/bin/sh"])
        assert (win["session"], win["window"], win["pane"]) == (name, 1, 0)
        split = await ok(
            session, "phux_split", target=f"{name}:logs", command=["/bin/sh"], select=True
        )
        assert (split["window"], split["pane"]) == (1, 1)
        tagged = await ok(session, "phux_tag", target=f"{name}:1.1", tags=["mcptag"])
        assert tagged == {"tags": ["mcptag"]}
        for target, tid in (("#mcptag", split["terminal_id"]), (f"{name}:1.0", win["terminal_id"])):
            snap = await ok(session, "phux_snapshot", target=target)
            assert snap["pane"] == tid, target
        # The selected split is the session's active pane; `=` the one active before.
        assert (await ok(session, "phux_snapshot", target=name))["pane"] == split["terminal_id"]
        assert (await ok(session, "phux_snapshot", target="="))["pane"] == new["terminal_id"]
        untagged = await ok(session, "phux_tag", target="#mcptag", tags=["mcptag"], remove=True)
        assert untagged == {"tags": []}

        # Notes, tasks and the summary (their structuredContent checked by the SDK).
        noted = await ok(session, "phux_set_notes", target=name, notes="- [ ] a")
        assert noted["scope"] == "session" and noted["tasks"][0]["text"] == "a"
        assert (await ok(session, "phux_notes", target=name))["notes"] == "- [ ] a"
        tasks = await ok(session, "phux_update_task", target=name, action="done", n=1)
        assert tasks["tasks"][0]["done"] is True
        assert (await ok(session, "phux_tasks", target=name, open=True))["tasks"] == []
        summary = await ok(session, "phux_summary", target=pane)
        assert summary["pane"] == pane and summary["commands"][-1]["command"] == "echo pas''ted"
        assert summary["last_failed"]["exit_code"] != 0

        # Tool failures: results with isError and a readable text.
        text, is_error = await call(session, "phux_new", name=name)
        assert is_error and name in text
        text, is_error = await call(session, "phux_snapshot", target="nope-session")
        assert is_error and "nope-session" in text
        text, is_error = await call(session, "phux_send_keys", target=name, keys=[])
        assert is_error and "keys" in text
        text, is_error = await call(session, "phux_ls", socket=str(server.dir / "absent.sock"))
        assert is_error and "absent.sock" in text

        killed = await ok(session, "phux_kill", target=name)
        # The whole session: its first pane, the window's and the split's.
        ids = {pane, f"@{win['terminal_id']}", f"@{split['terminal_id']}"}
        assert set(killed["killed"]) == ids and len(killed["killed"]) == 3
        ls = await ok(session, "phux_ls")
        # Killed: listed as exited while the server retains its panes.
        (gone,) = [s for s in ls["sessions"] if s["name"] == name]
        assert gone["exited"] is True and gone["attached_client_count"] == 0
        text, is_error = await call(session, "phux_kill", target=name)
        assert is_error and name in text

    session_run(params(server), body, version)


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
            "phux_notes",
            "phux_tasks",
            "phux_summary",
        ]
        for tool in listing.tools:
            assert tool.annotations is not None and tool.annotations.read_only_hint is True
        await ok(session, "phux_ls")

    session_run(params(server, "--read-only"), body, None)


def test_high_level_client_probes_then_falls_back(server: PhuxServer) -> None:
    """mcp.Client (mode auto) probes server/discover first; the answer must not stall it."""
    from mcp import Client

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(params(server)) as client:
                assert client.protocol_version == SDK_DEFAULT
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


def test_panes_as_resources_over_stdio(server: PhuxServer) -> None:
    """The SDK's stdio client lists the panes, reads one and is told when it changed
    (after a `phux send-keys` from elsewhere) and when the list did (`phux new`)."""
    from phux.client import Client, Deadline

    def phux(verb: str, target: str, *keys: str) -> None:
        """Another client acts meanwhile (in-process: no CLI start to pay)."""
        with Client(server.socket) as client:
            deadline = Deadline.after(10)
            if verb == "new":
                client.new(target, command=["/bin/sh"], deadline=deadline)
            elif verb == "send-keys":
                client.send_keys(target, keys, deadline)
            else:
                client.kill(target, deadline)

    phux("new", "res")
    notes: list[Any] = []
    arrived = anyio.Event()

    async def handler(message: Any) -> None:
        nonlocal arrived
        if not isinstance(message, Exception):
            notes.append(message)
            arrived.set()

    async def wait_for(method: str) -> Any:
        nonlocal arrived
        with anyio.fail_after(10):
            while True:
                for note in notes:
                    if note.method == method:
                        notes.remove(note)
                        return note
                arrived = anyio.Event()
                await arrived.wait()

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with (
                stdio_client(params(server)) as (read, write),
                ClientSession(read, write, message_handler=handler) as session,
            ):
                init = await session.initialize()
                assert init.capabilities.resources is not None
                assert init.capabilities.resources.list_changed is True
                listed = {str(r.uri): r for r in (await session.list_resources()).resources}
                assert listed["phux://res/0.0"].mime_type == "application/json"
                text = (await session.read_resource("phux://res/0.0")).contents[0].text  # type: ignore[union-attr]
                assert json.loads(text)["schema_version"] == 4
                templates = await session.list_resource_templates()
                assert templates.resource_templates[0].uri_template.startswith("phux://")
                with pytest.raises(Exception, match="Resource not found"):
                    await session.read_resource("phux://no-such/0.0")
                await session.subscribe_resource("phux://res/0.0")
                phux("send-keys", "res", "echo changed", "Enter")
                note = await wait_for("notifications/resources/updated")
                assert str(note.params.uri) == "phux://res/0.0"
                phux("new", "res2")
                await wait_for("notifications/resources/list_changed")
                assert "phux://res2/0.0" in {
                    str(r.uri) for r in (await session.list_resources()).resources
                }

    try:
        anyio.run(main)
    finally:
        phux("kill", "res")
        phux("kill", "res2")

"""The tool layer against a stand-in client: arguments, shapes, the warm pool."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp_catalog import EVERY_TOOL, FIRST_TWELVE

from phux.client.errors import ConnectionLost, NoServer, RunTimedOut, TargetNotFound
from phux.client.models import NewResult, WaitResult
from phux.client.run_base import RunOutcome
from phux.client.selectors import Pane, Session
from phux.engine.screen_state import Cursor, ScreenState
from phux.mcp.catalog import brief_schema
from phux.mcp.clients import ClientPool
from phux.mcp.names import READ_ONLY_TOOLS
from phux.mcp.tools import PhuxTools


class _Short:
    """Equal to a small wait: an uncontended turn still takes a moment on a busy machine."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and 0 <= other < 1000

    def __repr__(self) -> str:
        return "<0..999>"


ANY_SHORT: Any = _Short()

SCREEN = ScreenState(
    schema_version=4,
    pane=7,
    cols=80,
    rows=24,
    cursor=Cursor(x=2, y=0, visible=True),
    lines=["$ "],
    scrollback=[],
    title="",
    wrapped=[],
    alternate=False,
)


class FakeClient:
    instances: list[FakeClient]

    def __init__(self, path: str, keep_warm: int, log: list[FakeClient]) -> None:
        self.path = path
        self.socket_path = path
        self.host: str | None = None  # a local server, as Client.host says
        self.keep_warm = keep_warm
        self.calls: list[tuple[str, Any]] = []
        self.closed = False
        self.fail: BaseException | None = None
        self.block: threading.Event | None = None
        self.stale = False
        self.entered = threading.Event()
        self.cancelled = False
        log.append(self)

    def cancel(self) -> None:
        self.cancelled = True

    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, (args, kwargs)))
        if self.block is not None:
            self.entered.set()
        if self.block is not None:
            self.block.wait(5)
        if self.fail is not None:
            exc, self.fail = self.fail, None
            raise exc

    def ls(self, *, deadline: Any) -> list[Session]:
        self._call("ls")
        return [
            Session(name="zed", window_count=1, attached_client_count=0, terminals=[3]),
            Session(name="abc", window_count=2, attached_client_count=1, terminals=[1, 2]),
        ]

    def ls_panes(self, *, deadline: Any) -> tuple[list[Session], dict[str, list[Pane]]]:
        return self.ls(deadline=deadline), {}

    def snapshot_data(self, target: str | None, **kw: Any) -> dict[str, Any]:
        self._call("snapshot", target, **kw)
        data: dict[str, Any] = msgspec.to_builtins(SCREEN)
        return data

    def resolve(self, target: str | None, deadline: Any) -> Pane:
        return Pane(terminal=7, alive=True, cols=80, rows=24, pid=1, session=target or "w")

    def send_keys(self, target: str, keys: Sequence[str], *, deadline: Any) -> Pane:
        self._call("send_keys", target, list(keys))
        return Pane(terminal=7, alive=True, cols=80, rows=24, pid=1, session=target)

    def paste(self, target: str, text: str, *, deadline: Any) -> Pane:
        self._call("paste", target, text)
        return Pane(terminal=7, alive=True, cols=80, rows=24, pid=1, session=target)

    def kill(self, target: str, *, deadline: Any) -> list[int]:
        self._call("kill", target)
        return [3, 4]

    def run(
        self,
        target: str,
        command: str,
        *,
        timeout: float | None,
        force: bool = False,
        deadline: Any,
    ) -> RunOutcome:
        self._call("run", target, command, timeout=timeout, **({"force": True} if force else {}))
        if command == "sleep":
            raise RunTimedOut(command, 1234)
        return RunOutcome(command=command, exit_code=0, output="hi", duration_ms=5, truncated=False)

    def wait(self, target: str | None, **kw: Any) -> WaitResult:
        self._call("wait", target, **{k: v for k, v in kw.items() if k != "deadline"})
        return WaitResult(met=kw.get("until") != "never", checks=3, screen=SCREEN)

    def new(self, name: str | None, **kw: Any) -> NewResult:
        self._call("new", name, **{k: v for k, v in kw.items() if k != "deadline"})
        return NewResult(session=name or "0", terminal_id=9)

    def drain(self) -> None:
        if self.stale:
            raise ConnectionLost("the server closed the connection")

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def made() -> list[FakeClient]:
    return []


@pytest.fixture
def tools(made: list[FakeClient], monkeypatch: pytest.MonkeyPatch) -> PhuxTools:
    monkeypatch.setenv("PHUX_SOCKET", "/tmp/phux-test-env/s")
    pool = ClientPool(lambda path, warm: FakeClient(path, warm, made), max_sockets=2)  # type: ignore[arg-type,return-value]
    return PhuxTools(pool)


def ok(result: Any) -> Any:
    assert result.is_error is False, result.text
    return json.loads(result.text)


def test_ls_raw_counts_sorted(tools: PhuxTools) -> None:
    body = ok(tools.ls({}))
    assert body == {
        "sessions": [
            {
                "name": "abc",
                "window_count": 2,
                "attached_client_count": 1,
                "exited": False,
                "panes": [],
            },
            {
                "name": "zed",
                "window_count": 1,
                "attached_client_count": 0,
                "exited": False,
                "panes": [],
            },
        ]
    }


def test_results_are_pretty_printed(tools: PhuxTools) -> None:
    text = tools.ls({}).text
    assert text.startswith("{\n  ") and json.loads(text)


def test_snapshot_arguments_pass_through(tools: PhuxTools, made: list[FakeClient]) -> None:
    body = ok(tools.snapshot({}))
    assert body["schema_version"] == 4 and body["lines"] == ["$ "] and "cells" not in body
    ok(tools.snapshot({"target": "work:1.0", "scrollback": 0, "cells": True}))
    ok(tools.snapshot({"scrollback": 200}))
    calls = [c for c in made[0].calls if c[0] == "snapshot"]
    assert calls[0][1][0] == (None,) and calls[0][1][1]["scrollback"] is None
    assert calls[0][1][1]["cells"] is False
    assert calls[1][1][0] == ("work:1.0",) and calls[1][1][1]["scrollback"] == 0
    assert calls[1][1][1]["cells"] is True
    assert calls[2][1][1]["scrollback"] == 200


def test_send_keys(tools: PhuxTools, made: list[FakeClient]) -> None:
    assert ok(tools.send_keys({"target": "w", "keys": ["ls", "Enter"]})) == {
        "sent": True,
        "pane": "@7",
        "waited_ms": ANY_SHORT,
    }
    # Resolved once, then sent to that pane by id while holding its turn.
    assert made[0].calls[-1] == ("send_keys", (("@7", ["ls", "Enter"]), {}))


def test_paste_and_kill(tools: PhuxTools, made: list[FakeClient]) -> None:
    body = ok(tools.paste({"target": "w", "text": "a\nb"}))
    assert body == {"sent": True, "pane": "@7", "waited_ms": ANY_SHORT}
    assert made[0].calls[-1] == ("paste", (("@7", "a\nb"), {}))
    assert ok(tools.kill({"target": "build"})) == {"killed": ["@3", "@4"]}
    assert made[0].calls[-1] == ("kill", (("build",), {}))


def test_run_result_and_timeout_body(tools: PhuxTools, made: list[FakeClient]) -> None:
    assert ok(tools.run({"target": "w", "command": "echo hi"})) == {
        "command": "echo hi",
        "exit_code": 0,
        "output": "hi",
        "duration_ms": 5,
        "truncated": False,
        "waited_ms": ANY_SHORT,
    }
    assert made[0].calls[-1][1][0] == ("@7", "echo hi")
    assert 29.0 < made[0].calls[-1][1][1]["timeout"] <= 30.0  # the shared default
    assert ok(tools.run({"target": "w", "command": "sleep", "timeout_secs": 1})) == {
        "outcome": "timed_out",
        "command": "sleep",
        "duration_ms": 1234,
        "waited_ms": ANY_SHORT,
    }
    ok(tools.run({"target": "w", "command": "x", "force": True}))
    assert made[0].calls[-1][1][1]["force"] is True


def test_wait_outcomes(tools: PhuxTools, made: list[FakeClient]) -> None:
    assert ok(tools.wait({"until": "done", "timeout_secs": 5})) == {"outcome": "met", "polls": 3}
    assert made[0].calls[-1][1][1] == {
        "until": "done",
        "regex": None,
        "idle_ms": None,
        "prompt": False,
        "exit": False,
        "timeout": 5.0,
    }
    assert ok(tools.wait({"until": "never"})) == {"outcome": "timed_out", "polls": 3}
    assert made[0].calls[-1][1][1]["timeout"] == 30.0  # the shared default
    ok(tools.wait({"target": "w", "idle_ms": 300, "timeout_secs": 0}))  # 0: check once
    assert made[0].calls[-1][1] == (
        ("w",),
        {
            "until": None,
            "regex": None,
            "idle_ms": 300,
            "prompt": False,
            "exit": False,
            "timeout": 0.0,
        },
    )
    body = ok(tools.wait({"target": "w", "exit": True}))
    assert body["outcome"] == "met" and "exit_code" in body and "state" in body
    assert made[0].calls[-1][1][1]["exit"] is True
    text = tools.wait({"target": "w", "exit": True, "prompt": True})
    assert text.is_error and "one of" in text.text


def test_new(tools: PhuxTools, made: list[FakeClient]) -> None:
    assert ok(tools.new({"name": "build", "command": ["sh"], "cwd": "/tmp"})) == {
        "session": "build",
        "terminal_id": 9,
    }
    assert made[0].calls[-1] == (
        "new",
        (("build",), {"cwd": "/tmp", "command": ["sh"], "env": {}, "shell_integration": True}),
    )
    ok(tools.new({"name": "b2", "shell_integration": False, "env": {"A": "1"}}))
    assert made[0].calls[-1] == (
        "new",
        (("b2",), {"cwd": None, "command": [], "env": {"A": "1"}, "shell_integration": False}),
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "needle"),
    [
        ("snapshot", {"scrollback": -1}, "scrollback"),
        ("snapshot", {"scrollback": 1.5}, "scrollback"),
        ("snapshot", {"cells": "maybe"}, "cells"),
        ("snapshot", {"bogus": 1}, "bogus"),
        ("send_keys", {"target": "w"}, "keys"),
        ("send_keys", {"target": "w", "keys": []}, "keys"),
        ("send_keys", {"keys": ["a"]}, "target"),
        ("send_keys", {"target": "w", "keys": "Enter"}, "keys"),
        ("run", {"target": "w"}, "command"),
        ("run", {"target": "w", "command": "x", "timeout_secs": -2}, "timeout_secs"),
        ("run", {"target": "w", "command": "x", "timeout_secs": 0}, "timeout_secs"),
        ("paste", {"target": "w"}, "text"),
        ("paste", {"text": "x"}, "target"),
        ("kill", {}, "target"),
        ("run", {"target": "w", "command": "x", "timeout": 5}, "timeout"),
        ("wait", {"idle_ms": "soon"}, "idle_ms"),
        ("wait", {"timeout_secs": 1e300}, "timeout_secs"),
        ("run", {"target": "w", "command": "x", "timeout_secs": 1e12}, "timeout_secs"),
        ("wait", {"idle_ms": 10**15}, "idle_ms"),
        ("new", {}, "name"),
        ("new", {"name": ""}, "name"),
        ("new", {"name": "x", "command": "sh -c x"}, "command"),
        ("ls", {"socket": 5}, "socket"),
    ],
)
def test_bad_arguments_are_tool_errors(
    tools: PhuxTools, made: list[FakeClient], tool: str, arguments: dict[str, Any], needle: str
) -> None:
    result = getattr(tools, tool)(arguments)
    assert result.is_error is True
    assert result.text.startswith("invalid arguments") and needle in result.text
    assert all(not c.calls for c in made)


def test_lenient_number_forms(tools: PhuxTools, made: list[FakeClient]) -> None:
    ok(tools.snapshot({"scrollback": "20"}))
    ok(tools.wait({"timeout_secs": 2, "idle_ms": 100.0}))


def test_client_errors_are_readable_tool_errors(tools: PhuxTools) -> None:
    tools.ls({})
    client = tools.pool._entries["/tmp/phux-test-env/s"].client
    client.fail = TargetNotFound("no pane matches 'nope'")  # type: ignore[attr-defined]
    result = tools.snapshot({"target": "nope"})
    assert result.is_error and "no pane matches 'nope'" in result.text
    assert "target_not_found" in result.text or "not_found" in result.text


def test_one_warm_client_per_socket(tools: PhuxTools, made: list[FakeClient]) -> None:
    for _ in range(3):
        ok(tools.snapshot({}))
    ok(tools.ls({"socket": "/tmp/other/s"}))
    ok(tools.ls({"socket": "/tmp/phux-test-env/s"}))  # same as $PHUX_SOCKET
    assert [(c.path, c.keep_warm) for c in made] == [
        ("/tmp/phux-test-env/s", 8),
        ("/tmp/other/s", 8),
    ]
    assert len(made[0].calls) == 4 and not made[0].closed


def test_socket_bound_evicts_least_recently_used(tools: PhuxTools, made: list[FakeClient]) -> None:
    ok(tools.ls({"socket": "/tmp/a/s"}))
    ok(tools.ls({"socket": "/tmp/b/s"}))
    ok(tools.ls({"socket": "/tmp/a/s"}))
    ok(tools.ls({"socket": "/tmp/c/s"}))  # bound is 2: b goes
    assert [c.closed for c in made] == [False, True, False]


def test_broken_connection_is_dropped_and_reads_retry(
    tools: PhuxTools, made: list[FakeClient]
) -> None:
    ok(tools.snapshot({}))
    made[0].fail = ConnectionLost("the server closed the connection")
    ok(tools.snapshot({}))  # side-effect-free: retried on a fresh client
    assert made[0].closed and len(made) == 2
    made[1].fail = ConnectionLost("gone")
    result = tools.send_keys({"target": "w", "keys": ["x"]})  # not retried: might double-send
    assert result.is_error and "gone" in result.text
    assert made[1].closed and len(made) == 2
    ok(tools.ls({}))
    assert len(made) == 3


def test_no_server_keeps_nothing_broken(tools: PhuxTools, made: list[FakeClient]) -> None:
    ok(tools.ls({}))
    made[0].fail = NoServer("no server running on /tmp/phux-test-env/s")
    result = tools.ls({})
    assert result.is_error and "no server" in result.text and "phux server" in result.text
    assert len(made) == 1


def test_parallel_calls_get_a_oneshot_client(tools: PhuxTools, made: list[FakeClient]) -> None:
    ok(tools.ls({}))
    gate = threading.Event()
    made[0].block = gate
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(tools.wait({"until": "x"})))
    worker.start()
    try:
        assert made[0].entered.wait(5)  # the wait holds the warm client now
        made_before = len(made)
        ok(tools.snapshot({}))
        assert len(made) == made_before + 1
        assert made[-1].keep_warm == 0 and made[-1].closed
    finally:
        gate.set()
        worker.join(5)
    assert ok(out[0])["outcome"] == "met"
    assert not made[0].closed


def test_catalog(tools: PhuxTools) -> None:
    full = tools.catalog()
    assert [t.name for t in full] == EVERY_TOOL
    for tool in full:
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert "socket" in schema["properties"] and "host" in schema["properties"]
        assert tool.description
    required = {t.name: t.input_schema.get("required", []) for t in full}
    assert required == {
        "phux_ls": [],
        "phux_snapshot": [],
        "phux_send_keys": ["target", "keys"],
        "phux_run": ["target", "command"],
        "phux_wait": [],
        "phux_new": ["name"],
        "phux_history": ["target"],
        "phux_paste": ["target", "text"],
        "phux_kill": ["target"],
        "phux_new_window": ["session"],
        "phux_split": ["target"],
        "phux_tag": ["target", "tags"],
        "phux_notes": ["target"],
        "phux_set_notes": ["target"],
        "phux_tasks": ["target"],
        "phux_update_task": ["target", "action"],
        "phux_summary": [],
    }
    ro = tools.catalog(read_only=True)
    assert {t.name for t in ro} == READ_ONLY_TOOLS
    assert {
        "phux_ls",
        "phux_snapshot",
        "phux_wait",
        "phux_history",
        "phux_notes",
        "phux_tasks",
        "phux_summary",
    } == READ_ONLY_TOOLS


def test_mcp_help_lists_every_tool(tools: PhuxTools) -> None:
    """`phux mcp --help` names every tool of the catalog, and --read-only's help every
    read-only one (issue 23: it listed 6 of the 12)."""
    from click.testing import CliRunner

    from phux.cli.mcp_cmd import mcp_cmd

    result = CliRunner().invoke(mcp_cmd, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    names = [t.name for t in tools.catalog()]
    assert len(names) == 17
    for name in names:
        assert f" {name} " in text, name
    read_only = ", ".join(t.name for t in tools.catalog(read_only=True))
    assert f"change nothing: {read_only}." in text


def test_annotations_agree_with_read_only(tools: PhuxTools) -> None:
    for tool in tools.catalog():
        hints = tool.annotations
        assert hints is not None and tool.title and tool.output_schema is not None
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert hints["readOnlyHint"] is (tool.name in READ_ONLY_TOOLS)
        if hints["readOnlyHint"]:
            assert hints["destructiveHint"] is False and hints["idempotentHint"] is True
        # The writers take turns on their pane; nothing else queues.
        assert (tool.queue is not None) is (
            tool.name in {"phux_send_keys", "phux_run", "phux_paste"}
        )
        schema = tool.output_schema()
        assert schema["type"] == "object"  # MCP requires an object at the root
    hints = {t.name: t.annotations for t in tools.catalog()}
    assert hints["phux_kill"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert hints["phux_run"]["destructiveHint"] is True


def test_structured_content_is_the_text(tools: PhuxTools) -> None:
    for result in (tools.ls({}), tools.snapshot({}), tools.run({"target": "w", "command": "x"})):
        assert result.structured is not None
        assert json.loads(result.structured) == json.loads(result.text)
    assert tools.run({"target": "w"}).structured is None  # errors carry none


def test_blocking_tools_document_their_limits(tools: PhuxTools) -> None:
    docs = {t.name: t.description for t in tools.catalog()}
    for name in ("phux_wait", "phux_run"):
        assert "60 s" in docs[name] and "timeout_secs" in docs[name]
    assert "phux_wait with prompt=true" in docs["phux_run"]


def test_a_dead_warm_connection_is_replaced_before_the_call(
    tools: PhuxTools, made: list[FakeClient]
) -> None:
    ok(tools.ls({}))
    made[0].stale = True  # the server went away since
    ok(tools.send_keys({"target": "w", "keys": ["x"]}))
    assert made[0].closed and len(made) == 2
    assert made[1].calls == [("send_keys", (("@7", ["x"]), {}))]
    assert made[1].keep_warm == 8


SCHEMAS = Path(__file__).parents[2] / "spec" / "schemas"
SHAPE_OF = {
    "phux_ls": "session_info_list",
    "phux_send_keys": "send_keys_result",
    "phux_paste": "send_keys_result",
    "phux_wait": "wait_outcome",
    "phux_new": "new_result",
    "phux_kill": "kill_result",
    "phux_history": "history_result",
    "phux_new_window": "new_pane_result",
    "phux_split": "new_pane_result",
    "phux_tag": "tag_result",
}


def _file_as_output_schema(shape: str) -> dict[str, Any]:
    """A spec/schemas file with its root Struct inlined (what outputSchema must be)."""
    doc = json.loads((SCHEMAS / f"{shape}.schema.json").read_text())
    for key in ("title", "description"):
        doc.pop(key)
    name = doc.pop("$ref").removeprefix("#/$defs/")
    return {**doc["$defs"][name], **doc}


def test_output_schemas_are_the_spec_schemas_in_brief(tools: PhuxTools) -> None:
    """Each listed outputSchema is the spec file's root fields with their JSON types
    (issue 26: the whole schemas made tools/list 37 KB); the SDK validates real
    results against them (test_mcp_sdk)."""
    schemas = {t.name: t.output_schema() for t in tools.catalog() if t.output_schema}
    for name, shape in SHAPE_OF.items():
        full = _file_as_output_schema(shape)
        assert schemas[name] == brief_schema(full), name
        # Every field but the shape's version (for code; the result carries it).
        assert set(schemas[name]["properties"]) == set(full["properties"]) - {"schema_version"}, (
            name
        )
    run = schemas["phux_run"]
    fields = {
        **_file_as_output_schema("mcp_run_result")["$defs"]["McpRunResult"]["properties"],
        **_file_as_output_schema("run_timed_out_result")["$defs"]["RunTimedOutResult"][
            "properties"
        ],
    }
    assert run["type"] == "object" and set(run["properties"]) == set(fields) - {"schema_version"}
    assert run["properties"]["exit_code"] == {"type": "integer"}
    assert run["properties"]["outcome"] == {"type": "string"}
    screen = schemas["phux_snapshot"]
    assert set(screen["properties"]) == set(
        _file_as_output_schema("screen_state")["properties"]
    ) - {"schema_version"}
    assert screen["properties"]["state"] == {"type": ["string", "null"]}
    assert screen["properties"]["lines"] == {"type": "array"}


def test_a_cancelled_warm_client_serves_no_later_call(
    tools: PhuxTools, made: list[FakeClient]
) -> None:
    """A call the host cancelled cancels its client (phux.mcp.server.on_cancel): even
    when the call then ends without an error, the next call gets a new client."""
    ok(tools.ls({}))
    made[0].cancel()
    ok(tools.ls({}))
    ok(tools.ls({}))
    assert [c.closed for c in made] == [True, False]


def test_tools_list_fits_an_agents_context(tools: PhuxTools) -> None:
    """Issue 26: every host pays tools/list in tokens on every conversation. The whole
    listing, of whatever tools are registered, stays under 12 KB at every revision;
    the twelve tools it had then stay within 9 KB, leaving room for the others."""
    from phux.mcp.server import PROTOCOL_VERSIONS, Dispatcher

    catalog = tools.catalog()
    for version in PROTOCOL_VERSIONS:
        size = len(Dispatcher(catalog, name="phux", version="0").catalog(version))
        assert size < 12 * 1024, (version, size)
    first = set(FIRST_TWELVE)
    twelve = [t for t in catalog if t.name in first]
    assert len(twelve) == 12
    size = len(Dispatcher(twelve, name="phux", version="0").catalog(PROTOCOL_VERSIONS[-1]))
    assert size <= 9 * 1024, size


def test_a_pane_is_announced_when_it_settles_and_at_most_every_200_ms() -> None:
    from phux.mcp.resources import MAX_HOLD, MIN_INTERVAL, SETTLE, _Watched

    pane = _Watched()
    assert pane.due() is None  # nothing changed
    pane.first = pane.last = 10.0
    assert pane.due() == pytest.approx(10.0 + SETTLE)  # quiet for SETTLE
    pane.last = 10.9  # still changing: the quiet time moves on
    assert pane.due() == pytest.approx(10.9 + SETTLE)
    pane.last = 10.99  # never quiet: announced MAX_HOLD after the first change anyway
    assert pane.due() == pytest.approx(10.0 + MAX_HOLD)
    pane.sent, pane.first, pane.last = 11.0, 11.01, 11.01  # just announced
    assert pane.due() == pytest.approx(11.0 + MIN_INTERVAL)
    assert MIN_INTERVAL == 0.2


def test_the_stdio_adapter_imports_no_http_stack() -> None:
    """`phux mcp --http` alone imports trio and h11: the stdio adapter starts as fast as
    it did before the HTTP transport came (issue 26)."""
    import subprocess
    import sys

    line = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "phux", "mcp"],
        input=line,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert b'"protocolVersion"' in done.stdout
    imported = {row.rsplit(b"|", 1)[-1].strip() for row in done.stderr.splitlines()}
    assert b"phux.mcp.server" in imported  # the probe sees what was imported
    assert not {b"trio", b"h11", b"phux.mcp.http"} & imported

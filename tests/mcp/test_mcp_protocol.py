"""The JSON-RPC loop in-process, with stand-in tools: every robustness rule."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp_pipes import LineReader, close_quietly, notification, request, write_all

from phux.mcp.server import PROTOCOL_VERSION, PROTOCOL_VERSIONS, McpServer, Tool, ToolResult

SCHEMA = {"type": "object", "properties": {}}


@dataclass
class Harness:
    stdin: int
    out: LineReader
    thread: threading.Thread
    release: threading.Event
    started: threading.Event

    def send(self, data: bytes) -> None:
        write_all(self.stdin, data)

    def ask(self, rid: Any, method: str, params: Any = None) -> Any:
        self.send(request(rid, method, params))
        return self.out.message()

    def call(self, name: str, arguments: Any = None, rid: Any = 1) -> Any:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.ask(rid, "tools/call", params)

    def close_stdin(self) -> None:
        close_quietly(self.stdin)


def _tools(release: threading.Event, started: threading.Event) -> list[Tool]:
    def echo(args: dict[str, Any]) -> ToolResult:
        return ToolResult(json.dumps(args, sort_keys=True))

    def fail(args: dict[str, Any]) -> ToolResult:
        return ToolResult("no such target", True)

    def crash(args: dict[str, Any]) -> ToolResult:
        raise RuntimeError("boom")

    def slow(args: dict[str, Any]) -> ToolResult:
        started.set()
        release.wait(10)
        return ToolResult("slow done")

    def big(args: dict[str, Any]) -> ToolResult:
        return ToolResult("z" * 200_000)

    def typed(args: dict[str, Any]) -> ToolResult:
        if args.get("fail"):
            return ToolResult("refused", True, structured=b'{"n":0}')
        return ToolResult('{\n  "n": 1\n}', structured=b'{"n":1}')

    return [
        Tool("echo", "Echo the arguments.", SCHEMA, echo),
        Tool("fail", "Always fails.", SCHEMA, fail),
        Tool("crash", "Has a bug.", SCHEMA, crash),
        Tool("slow", "Blocks until released.", SCHEMA, slow),
        Tool("big", "A 200 kB answer.", SCHEMA, big),
        Tool(
            "typed",
            "Declares what it returns.",
            SCHEMA,
            typed,
            output_schema=lambda: OUTPUT,
            annotations={"readOnlyHint": True},
            title="Typed",
        ),
    ]


OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture
def mcp() -> Iterator[Harness]:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    release, started = threading.Event(), threading.Event()
    server = McpServer(
        _tools(release, started),
        name="phux",
        version="9.9",
        stdin_fd=in_r,
        stdout_fd=out_w,
        max_inflight=4,
        eof_grace=3.0,
        max_line_bytes=1024,
    )
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    harness = Harness(in_w, LineReader(out_r), thread, release, started)
    try:
        yield harness
    finally:
        release.set()
        close_quietly(in_w)
        thread.join(5)
        for fd in (in_r, out_r, out_w):
            close_quietly(fd)
    assert not thread.is_alive()


def test_initialize(mcp: Harness) -> None:
    reply = mcp.ask(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
    assert reply["jsonrpc"] == "2.0" and reply["id"] == 1
    result = reply["result"]
    assert result["protocolVersion"] == PROTOCOL_VERSION == "2024-11-05"
    assert result["capabilities"] == {"tools": {}}
    assert result["serverInfo"] == {"name": "phux", "version": "9.9"}
    mcp.send(notification("notifications/initialized"))
    assert mcp.ask(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize("rid", [0, "0", "abc", -7, 2**70, "", "ünï"])
def test_ids_are_echoed_unchanged(mcp: Harness, rid: Any) -> None:
    raw = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}, ensure_ascii=False)
    mcp.send(raw.encode() + b"\n")
    line = mcp.out.readline()
    assert json.loads(line) == {"jsonrpc": "2.0", "id": rid, "result": {}}
    assert json.dumps(rid, ensure_ascii=False).encode() in line


def test_id_text_is_echoed_byte_for_byte(mcp: Harness) -> None:
    mcp.send(b'{"jsonrpc":"2.0","id":1.50,"method":"ping"}\n')
    assert mcp.out.readline() == b'{"jsonrpc":"2.0","id":1.50,"result":{}}'
    mcp.send(b'{"jsonrpc":"2.0","id":"a\\u00e9\\n","method":"ping"}\n')
    assert b'"id":"a\\u00e9\\n"' in mcp.out.readline()


@pytest.mark.parametrize(
    "line",
    [b"{", b"not json", b'{"jsonrpc":"2.0","id":1,"method":"ping"', b'{"a":1} {"b":2}', b"\x00"],
)
def test_malformed_line_is_a_parse_error_with_null_id(mcp: Harness, line: bytes) -> None:
    mcp.send(line + b"\n")
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert mcp.ask(5, "ping")["result"] == {}


def test_invalid_utf8_is_a_parse_error(mcp: Harness) -> None:
    mcp.send(b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"ping"}\n')
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    mcp.send(b"\xc3\x28\n")
    assert mcp.out.message()["error"]["code"] == -32700
    assert mcp.ask(5, "ping")["result"] == {}


def test_oversized_line_is_answered_and_skipped(mcp: Harness) -> None:
    # 1024 is this harness's cap; send the long line in pieces, then resync.
    mcp.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 700)
    mcp.send(b"b" * 700)
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert "longer than" in reply["error"]["message"]
    mcp.send(b"c" * 5000 + b'"}}\n')  # the rest of the long line is dropped
    assert mcp.ask(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert mcp.out.nothing_within(0.1)


def test_line_at_the_cap_is_accepted(mcp: Harness) -> None:
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
    tail = b'"}}'
    line = head + b"a" * (1024 - len(head) - len(tail)) + tail
    assert len(line) == 1024
    mcp.send(line + b"\n")
    assert mcp.out.message()["result"] == {}


def test_unknown_method_before_initialize(mcp: Harness) -> None:
    reply = mcp.ask(0, "server/discover", {"_meta": {}})
    assert reply["id"] == 0 and reply["error"]["code"] == -32601
    reply = mcp.ask("x", "resources/list")
    assert reply["id"] == "x" and reply["error"]["code"] == -32601


def test_unknown_notifications_are_ignored(mcp: Harness) -> None:
    mcp.send(notification("notifications/whatever", {"a": 1}))
    mcp.send(notification("notifications/initialized"))
    mcp.send(notification("notifications/cancelled", {"requestId": 12345}))
    mcp.send(notification("tools/call", {"name": "echo"}))  # a call without id gets no answer
    assert mcp.out.nothing_within(0.2)
    assert mcp.ask(1, "ping")["result"] == {}


def test_invalid_requests(mcp: Harness) -> None:
    mcp.send(b'{"jsonrpc":"2.0","id":3}\n')
    reply = mcp.out.message()
    assert reply["id"] == 3 and reply["error"]["code"] == -32600
    mcp.send(b'{"jsonrpc":"2.0","id":4,"method":7}\n')
    reply = mcp.out.message()
    assert reply["id"] == 4 and reply["error"]["code"] == -32600
    mcp.send(b'{"id":5,"method":"ping"}\n')
    reply = mcp.out.message()
    assert reply["id"] == 5 and reply["error"]["code"] == -32600
    mcp.send(b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n')
    reply = mcp.out.message()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    for line in (b"5", b'"ping"', b"null", b"[]"):
        mcp.send(line + b"\n")
        reply = mcp.out.message()
        assert reply["id"] is None and reply["error"]["code"] == -32600, line


def test_replies_from_the_peer_are_ignored(mcp: Harness) -> None:
    mcp.send(b'{"jsonrpc":"2.0","id":9,"result":{}}\n')
    mcp.send(b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"x"}}\n')
    assert mcp.out.nothing_within(0.2)


def test_crlf_and_blank_lines(mcp: Harness) -> None:
    mcp.send(b"\n   \n\r\n")
    mcp.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
    assert mcp.out.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert mcp.out.nothing_within(0.1)


def test_batch(mcp: Harness) -> None:
    mcp.send(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"},'
        b'{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"echo"}},'
        b"7]\n"
    )
    replies = mcp.out.message()
    assert isinstance(replies, list) and len(replies) == 3
    assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert replies[1]["id"] == "t" and replies[1]["result"]["isError"] is False
    assert replies[2]["id"] is None and replies[2]["error"]["code"] == -32600
    mcp.send(b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n')
    assert mcp.out.nothing_within(0.1)


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", PROTOCOL_VERSIONS[-1]),  # unknown: our newest, the client decides
        ("2026-07-28", PROTOCOL_VERSIONS[-1]),  # the stateless era is not served
        (None, PROTOCOL_VERSIONS[-1]),
        (20241105, PROTOCOL_VERSIONS[-1]),
    ],
)
def test_initialize_negotiates_the_revision(mcp: Harness, asked: Any, answered: str) -> None:
    params = {"capabilities": {}} if asked is None else {"protocolVersion": asked}
    assert mcp.ask(1, "initialize", params)["result"]["protocolVersion"] == answered


def test_tools_list(mcp: Harness) -> None:
    tools = mcp.ask(1, "tools/list", {"cursor": "ignored"})["result"]["tools"]
    assert [t["name"] for t in tools] == ["echo", "fail", "crash", "slow", "big", "typed"]
    for tool in tools:
        assert set(tool) == {"name", "description", "inputSchema"}  # 2024-11-05 until asked
        assert tool["inputSchema"]["type"] == "object"


@pytest.mark.parametrize("version", PROTOCOL_VERSIONS)
def test_what_each_revision_shows(mcp: Harness, version: str) -> None:
    assert mcp.ask(1, "initialize", {"protocolVersion": version})["result"]
    annotated = version >= "2025-03-26"
    structured = version >= "2025-06-18"
    typed = mcp.ask(2, "tools/list")["result"]["tools"][-1]
    assert ("annotations" in typed) is annotated
    if annotated:
        # The title moves to the tool itself once it has one (2025-06-18).
        hints = {"readOnlyHint": True} if structured else {"readOnlyHint": True, "title": "Typed"}
        assert typed["annotations"] == hints
    assert ("outputSchema" in typed) is structured and ("title" in typed) is structured
    if structured:
        assert typed["outputSchema"] == OUTPUT and typed["title"] == "Typed"
    echo = mcp.ask(3, "tools/list")["result"]["tools"][0]
    assert set(echo) == {"name", "description", "inputSchema"}  # declares nothing more

    result = mcp.call("typed", {})["result"]
    assert result["content"] == [{"type": "text", "text": '{\n  "n": 1\n}'}]
    assert result.get("structuredContent") == ({"n": 1} if structured else None)
    failed = mcp.call("typed", {"fail": True})["result"]
    assert failed["isError"] is True and "structuredContent" not in failed
    assert "structuredContent" not in mcp.call("echo", {})["result"]


def test_tools_call_result_and_defaults(mcp: Harness) -> None:
    reply = mcp.call("echo", {"a": [1, 2]}, rid=0)
    assert reply["id"] == 0
    assert reply["result"] == {
        "content": [{"type": "text", "text": '{"a": [1, 2]}'}],
        "isError": False,
    }
    assert mcp.call("echo")["result"]["content"][0]["text"] == "{}"
    assert mcp.call("echo", None)["result"]["content"][0]["text"] == "{}"


def test_tool_failures_are_results(mcp: Harness) -> None:
    result = mcp.call("fail")["result"]
    assert result == {"content": [{"type": "text", "text": "no such target"}], "isError": True}
    result = mcp.call("crash")["result"]
    assert result["isError"] is True and "boom" in result["content"][0]["text"]


@pytest.mark.parametrize(
    "params",
    [None, [], "x", {}, {"name": 5}, {"arguments": {}}, {"name": "echo", "arguments": [1]}],
)
def test_tools_call_bad_params(mcp: Harness, params: Any) -> None:
    reply = mcp.ask(1, "tools/call", params)
    assert reply["error"]["code"] == -32602


def test_unknown_tool(mcp: Harness) -> None:
    reply = mcp.call("phux_nope", {})
    assert reply["id"] == 1 and reply["error"]["code"] == -32602
    assert "phux_nope" in reply["error"]["message"]


def test_ping_is_answered_while_a_call_runs(mcp: Harness) -> None:
    mcp.send(request(1, "tools/call", {"name": "slow"}))
    assert mcp.started.wait(5)
    assert mcp.ask(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    mcp.release.set()
    assert mcp.out.message()["result"]["content"][0]["text"] == "slow done"


def test_cancelled_call_gets_no_answer(mcp: Harness) -> None:
    mcp.send(request("c1", "tools/call", {"name": "slow"}))
    assert mcp.started.wait(5)
    mcp.send(notification("notifications/cancelled", {"requestId": "c1", "reason": "timeout"}))
    assert mcp.ask(2, "ping")["result"] == {}  # the cancel was processed
    mcp.release.set()
    assert mcp.out.nothing_within(0.3)


def test_too_many_calls_at_once(mcp: Harness) -> None:
    for rid in range(4):
        mcp.send(request(rid, "tools/call", {"name": "slow"}))
    mcp.send(request(99, "tools/call", {"name": "slow"}))
    reply = mcp.out.message()
    assert reply["id"] == 99 and reply["result"]["isError"] is True
    mcp.release.set()
    assert sorted(mcp.out.message()["id"] for _ in range(4)) == [0, 1, 2, 3]


def test_eof_ends_the_loop_promptly(mcp: Harness) -> None:
    assert mcp.ask(1, "ping")["result"] == {}
    mcp.close_stdin()
    mcp.thread.join(3)
    assert not mcp.thread.is_alive()


def test_eof_without_newline_still_answers_the_last_line(mcp: Harness) -> None:
    mcp.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    mcp.close_stdin()
    assert mcp.out.message()["id"] == 1
    mcp.thread.join(3)
    assert not mcp.thread.is_alive()


def test_eof_lets_a_running_call_answer(mcp: Harness) -> None:
    mcp.send(request(1, "tools/call", {"name": "slow"}))
    assert mcp.started.wait(5)
    mcp.close_stdin()
    assert mcp.thread.is_alive()
    mcp.release.set()
    assert mcp.out.message()["id"] == 1
    mcp.thread.join(2)
    assert not mcp.thread.is_alive()


def test_eof_grace_is_bounded_and_late_answers_are_dropped() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    release, started = threading.Event(), threading.Event()
    server = McpServer(
        _tools(release, started),
        name="phux",
        version="t",
        stdin_fd=in_r,
        stdout_fd=out_w,
        eof_grace=0.2,
    )
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    out = LineReader(out_r)
    try:
        write_all(in_w, request(1, "tools/call", {"name": "slow"}))
        assert started.wait(5)
        close_quietly(in_w)
        thread.join(2)
        assert not thread.is_alive()  # gave up waiting after the grace
        release.set()
        assert out.nothing_within(0.3)  # the late answer is not written
    finally:
        release.set()
        close_quietly(in_w)
        thread.join(5)
        for fd in (in_r, out_r, out_w):
            close_quietly(fd)


def test_a_cancelled_call_frees_its_slot(mcp: Harness) -> None:
    for rid in range(4):
        mcp.send(request(rid, "tools/call", {"name": "slow"}))
    mcp.send(notification("notifications/cancelled", {"requestId": 2}))
    mcp.send(request(4, "tools/call", {"name": "slow"}))  # accepted: 2 no longer counts
    assert mcp.ask("p", "ping")["id"] == "p"
    mcp.release.set()
    assert sorted(mcp.out.message()["id"] for _ in range(4)) == [0, 1, 3, 4]
    assert mcp.out.nothing_within(0.2)


def test_duplicate_running_id_is_refused(mcp: Harness) -> None:
    mcp.send(request(7, "tools/call", {"name": "slow"}))
    assert mcp.started.wait(5)
    reply = mcp.call("echo", {}, rid=7)
    assert reply["id"] == 7 and reply["error"]["code"] == -32600
    mcp.release.set()
    assert mcp.out.message()["result"]["content"][0]["text"] == "slow done"


def test_non_blocking_pipes() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.set_blocking(in_r, False)
    os.set_blocking(out_w, False)
    release, started = threading.Event(), threading.Event()
    server = McpServer(
        _tools(release, started), name="p", version="t", stdin_fd=in_r, stdout_fd=out_w
    )
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    out = LineReader(out_r)
    try:
        # Answers big enough to fill the pipe: the writer must wait, not give up.
        for rid in range(3):
            write_all(in_w, request(rid, "tools/call", {"name": "big"}))
        time.sleep(0.2)
        got = sorted(out.message()["id"] for _ in range(3))
        assert got == [0, 1, 2]
        write_all(in_w, request(9, "ping"))
        assert out.message()["id"] == 9
    finally:
        close_quietly(in_w)
        thread.join(5)
        for fd in (in_r, out_r, out_w):
            close_quietly(fd)
    assert not thread.is_alive()

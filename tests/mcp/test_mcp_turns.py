"""Parallel tool calls on one pane, through `phux mcp` and a real phux server.

A ``phux_send_keys`` that arrives while a ``phux_run`` waits for its command
must not type into that command: the keys reach the pane once the run has
finished, in the order the calls arrived, and the result says how long they
waited. Reads (``phux_wait``, ``phux_snapshot``) do not wait for writers. And a
call the host cancels stops its work.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_pipes import McpProcess, PhuxServer, initialized, notification, request, running_server

from phux.mcp.catalog import MAX_TIMEOUT_SECS
from phux.mcp.server import MAX_INFLIGHT

# The command reads a line for up to 4 s: keys typed into it would be its input. The
# calls that must arrive while it reads have that long on a loaded machine.
READER = "echo wait''ing; read -t 4 x; echo \"got:[$x]\""


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    with running_server() as srv:
        yield srv


@pytest.fixture
def mcp(server: PhuxServer) -> Iterator[McpProcess]:
    with initialized(server) as proc:
        yield proc


def call_line(rid: str, name: str, **arguments: Any) -> bytes:
    return request(rid, "tools/call", {"name": name, "arguments": arguments})


def body(reply: dict[str, Any]) -> Any:
    result = reply["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    data = json.loads(result["content"][0]["text"])
    assert result["structuredContent"] == data
    return data


def new_bash(mcp: McpProcess, name: str) -> None:
    argv = ["bash", "--norc", "--noprofile"]
    body(mcp.call("phux_new", {"name": name, "command": argv}, rid="new"))
    ready = body(mcp.call("phux_wait", {"target": name, "until": "$", "timeout_secs": 10}))
    assert ready["outcome"] == "met"


@pytest.mark.skipif(sys.platform != "linux", reason="bash's read -t on a real PTY")
def test_keys_sent_during_a_run_wait_for_it(mcp: McpProcess) -> None:
    new_bash(mcp, "turns")
    mcp.send(call_line("run", "phux_run", target="turns", command=READER, timeout_secs=20))
    # A read is not held back by the running command: it answers first.
    mcp.send(call_line("seen", "phux_wait", target="turns", until="waiting", timeout_secs=10))
    seen = mcp.out.message(15)
    assert seen["id"] == "seen" and body(seen)["outcome"] == "met"
    # The command is now reading its input; these keys arrive in the middle of it.
    mcp.send(call_line("keys", "phux_send_keys", target="turns", keys=["hello", "Enter"]))
    first, second = mcp.out.message(20), mcp.out.message(20)
    assert [first["id"], second["id"]] == ["run", "keys"]
    run = body(first)
    assert run["exit_code"] == 0 and "got:[]" in run["output"], run["output"]
    assert run["waited_ms"] < 1000
    keys = body(second)
    assert keys["sent"] is True and keys["waited_ms"] >= 500  # it waited for the run
    # Typed at the prompt after the run, the word ran as a command of its own.
    after = body(mcp.call("phux_wait", {"target": "turns", "until": "hello: command not found"}))
    assert after["outcome"] == "met"


def test_calls_take_the_pane_in_arrival_order(mcp: McpProcess) -> None:
    new_bash(mcp, "order")
    # Sent back to back: the keys arrive while the run has not even typed yet.
    mcp.send(
        call_line("run", "phux_run", target="order", command=READER, timeout_secs=20)
        + call_line("keys", "phux_send_keys", target="order", keys=["echo after", "Enter"])
        # bash takes a bracketed paste as text: Enter runs it.
        + call_line("paste", "phux_paste", target="order", text="echo pas''ted")
        + call_line("enter", "phux_send_keys", target="order", keys=["Enter"])
    )
    # The run answers first (the others wait for it); the others' answers may
    # cross on the way out, but what they typed is in order (the screen, below).
    first = mcp.out.message(20)
    assert first["id"] == "run"
    replies = {(r := mcp.out.message(20))["id"]: r for _ in range(3)}
    run = body(first)
    keys, paste, _ = (body(replies[rid]) for rid in ("keys", "paste", "enter"))
    assert "got:[]" in run["output"], run["output"]
    assert keys["waited_ms"] >= 500 and paste["waited_ms"] >= 500  # both waited for the run
    done = body(mcp.call("phux_wait", {"target": "order", "until": "pasted", "timeout_secs": 10}))
    assert done["outcome"] == "met"
    lines = body(mcp.call("phux_snapshot", {"target": "order"}))["lines"]
    text = "\n".join(lines)
    # What was typed, in order. Keys that land while the shell still runs the command
    # before them are echoed by the tty itself, so an output may share their line.
    typed = ("got:[]", "echo after", "echo pas''ted", "\npasted")
    assert all(part in text for part in typed) and text.count("after") >= 2, text
    assert sorted(typed, key=text.index) == list(typed), text


def test_a_writer_that_cannot_get_its_turn_types_nothing(mcp: McpProcess) -> None:
    new_bash(mcp, "busy")
    mcp.send(call_line("run", "phux_run", target="busy", command="sleep 4", timeout_secs=20))
    mcp.send(call_line("seen", "phux_wait", target="busy", idle_ms=300, timeout_secs=10))
    assert mcp.out.message(15)["id"] == "seen"
    # A short run behind it gives up waiting for its turn, before typing.
    mcp.send(call_line("late", "phux_run", target="busy", command="echo LATE", timeout_secs=0.5))
    late = mcp.out.message(20)
    assert late["id"] == "late" and late["result"]["isError"] is True
    text = late["result"]["content"][0]["text"]
    assert "pane_in_use" in text and "typed nothing" in text
    assert body(mcp.out.message(20))["exit_code"] == 0
    lines = body(mcp.call("phux_snapshot", {"target": "busy"}))["lines"]
    assert not any("LATE" in line for line in lines)


def test_keys_cancelled_while_waiting_for_their_turn_are_never_typed(mcp: McpProcess) -> None:
    new_bash(mcp, "cancel")
    mcp.send(call_line("run", "phux_run", target="cancel", command="sleep 3", timeout_secs=20))
    mcp.send(call_line("keys", "phux_send_keys", target="cancel", keys=["echo NOPE", "Enter"]))
    mcp.send(notification("notifications/cancelled", {"requestId": "keys"}))
    assert mcp.ask("p", "ping")["result"] == {}  # the cancel has been read
    run = mcp.out.message(20)
    assert run["id"] == "run" and body(run)["exit_code"] == 0
    # The cancelled call answers nothing; its keys never reach the pane.
    marker = body(mcp.call("phux_run", {"target": "cancel", "command": "echo done-here"}))
    assert marker["output"] == "done-here"
    lines = body(mcp.call("phux_snapshot", {"target": "cancel"}))["lines"]
    assert not any("NOPE" in line for line in lines), lines


def test_c_c_alone_does_not_wait_it_interrupts_the_run(mcp: McpProcess) -> None:
    new_bash(mcp, "intr")
    mcp.send(call_line("run", "phux_run", target="intr", command="sleep 20", timeout_secs=6))
    mcp.send(call_line("seen", "phux_wait", target="intr", idle_ms=300, timeout_secs=10))
    assert mcp.out.message(15)["id"] == "seen"
    mcp.send(call_line("intr", "phux_send_keys", target="intr", keys=["C-c"]))
    # With shell integration the run ends the moment C-c lands (its D mark says 130),
    # so its answer may come before or after the keys': take both, in either order.
    answers = {m["id"]: m for m in (mcp.out.message(15), mcp.out.message(15))}
    assert set(answers) == {"intr", "run"}, answers
    assert body(answers["intr"])["waited_ms"] == 0  # the run still held the pane
    mcp.send(call_line("back", "phux_wait", target="intr", until="^C", timeout_secs=5))
    back = mcp.out.message(15)
    assert back["id"] == "back" and body(back)["outcome"] == "met"  # sleep was interrupted
    run = body(answers["run"])
    # Interrupted: the shell marks the command's end with status 130 (a marker-
    # bracketed command never prints its end, and reports its timeout instead).
    assert run.get("outcome") == "timed_out" or run["exit_code"] == 130


# A cancelled tool call stops its work (issue 24 item 5). Before, a cancelled
# `phux_wait` kept blocking on its own thread until its timeout, so 64 of them
# locked every later call out.

CALLS = 4 * MAX_INFLIGHT  # as many as the adapter ever runs threads for


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


def test_cancelled_waits_stop_and_free_their_threads(mcp: McpProcess) -> None:
    made = mcp.call("phux_new", {"name": "cx", "command": ["sleep", "600"]}, rid="new")
    assert made["result"]["isError"] is False, made
    before = threads(mcp.proc.pid)
    for n in range(CALLS):
        ask = {"target": "cx", "until": "never-shown", "timeout_secs": 600}
        mcp.send(request(f"w{n}", "tools/call", {"name": "phux_wait", "arguments": ask}))
        # Cancelled once it is running: every call is admitted, none refused.
        mcp.send(notification("notifications/cancelled", {"requestId": f"w{n}"}))
    assert mcp.ask("p", "ping")["result"] == {}  # every cancel has been read
    # Their work stops: the threads end within seconds, not after 600.
    deadline = time.monotonic() + 20
    while threads(mcp.proc.pid) > before + 1:
        assert time.monotonic() < deadline, f"{threads(mcp.proc.pid)} threads still run"
        time.sleep(0.1)
    # And a later call is served at once, not refused as one too many.
    listed = mcp.call("phux_ls", {}, rid="ls", timeout=10)
    assert listed["result"]["isError"] is False, listed
    assert mcp.out.nothing_within(0.5)  # no cancelled call answered


def test_timeout_secs_has_a_stated_maximum(mcp: McpProcess) -> None:
    tools = mcp.ask("t", "tools/list")["result"]["tools"]
    for name in ("phux_run", "phux_wait"):
        [tool] = [t for t in tools if t["name"] == name]
        prop = tool["inputSchema"]["properties"]["timeout_secs"]
        assert prop["maximum"] == MAX_TIMEOUT_SECS <= 24 * 3600  # stated by the schema
    too_long = {"target": "cx", "until": "x", "timeout_secs": MAX_TIMEOUT_SECS + 1}
    reply = mcp.call("phux_wait", too_long, rid="big")
    assert "error" in reply or reply["result"]["isError"] is True, reply

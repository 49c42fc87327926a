"""A cancelled tool call stops its work (issue 24 item 5): through `phux mcp` and a
real phux server. Before, a cancelled `phux_wait` kept blocking on its own thread
until its timeout, so 64 of them locked every later call out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_pipes import McpProcess, PhuxServer, initialized, notification, request, running_server

from phux.mcp.server import MAX_INFLIGHT
from phux.mcp.tools import MAX_TIMEOUT_SECS

CALLS = 4 * MAX_INFLIGHT  # as many as the adapter ever runs threads for


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    with running_server() as srv:
        yield srv


@pytest.fixture
def mcp(server: PhuxServer) -> Iterator[McpProcess]:
    with initialized(server) as proc:
        yield proc


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
        assert prop["maximum"] == MAX_TIMEOUT_SECS <= 24 * 3600
        assert f"{MAX_TIMEOUT_SECS:g}" in prop["description"], prop
    too_long = {"target": "cx", "until": "x", "timeout_secs": MAX_TIMEOUT_SECS + 1}
    reply = mcp.call("phux_wait", too_long, rid="big")
    assert "error" in reply or reply["result"]["isError"] is True, reply

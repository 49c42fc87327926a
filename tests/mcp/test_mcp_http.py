"""`phux mcp --http`: the official MCP SDK's Streamable HTTP client, and raw HTTP,
against one real adapter process in front of one real phux server (per module)."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_catalog import EVERY_TOOL
from mcp_pipes import PhuxServer

from mcp import ClientSession, types

# resources/subscribe is the way through 2025-11-25 (the SDK's newer listen() is 2026's).
pytestmark = pytest.mark.filterwarnings("ignore:resources/")

TEST_TIMEOUT = 60.0


@dataclass
class Adapter:
    server: PhuxServer
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def new(self, name: str) -> None:
        """What another client does meanwhile (in-process: no CLI start to pay)."""
        from phux.client import Client, Deadline

        with Client(self.server.socket) as client:
            client.new(name, command=["/bin/sh"], deadline=Deadline.after(10))

    def send_keys(self, target: str, *keys: str) -> None:
        from phux.client import Client, Deadline

        with Client(self.server.socket) as client:
            client.send_keys(target, keys, Deadline.after(10))

    def rename(self, session: str, name: str) -> None:
        from phux.client import Client, Deadline

        with Client(self.server.socket) as client:
            client.rename(session, name, Deadline.after(10))

    def kill(self, target: str) -> None:
        from phux.client import Client, Deadline

        with Client(self.server.socket) as client:
            client.kill(target, Deadline.after(10))


def start_adapter(server: PhuxServer, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``phux mcp --http 127.0.0.1:0 ARGS``; the port from its stderr line."""
    env = {
        **os.environ,
        "PHUX_SOCKET": str(server.socket),
        "XDG_STATE_HOME": str(server.dir / "state"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "phux", "mcp", "--http", "127.0.0.1:0", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    end = time.monotonic() + 20
    line = b""
    while b"\n" not in line:
        left = end - time.monotonic()
        ready, _, _ = select.select([proc.stderr], [], [], max(0.0, left))
        if not ready:
            proc.kill()
            raise TimeoutError(f"phux mcp --http did not start: {line!r}")
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            raise RuntimeError(f"phux mcp --http exited: {line!r}")
        line += chunk
    match = re.search(rb"http://127\.0\.0\.1:(\d+)/mcp", line)
    assert match, line
    return proc, int(match.group(1))


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.terminate()
    try:
        return proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def adapter() -> Iterator[Adapter]:
    server = PhuxServer()
    try:
        server.start()
        proc, port = start_adapter(server)
        try:
            token_file = server.dir / "state" / "phux" / "mcp-token"
            assert token_file.stat().st_mode & 0o777 == 0o600
            token = token_file.read_text().strip()
            env = {**os.environ, "PHUX_SOCKET": str(server.socket)}
            yield Adapter(server, proc, port, token, env)
        finally:
            assert stop(proc) == 0  # SIGTERM: a clean exit
    finally:
        server.stop()


# ---------------------------------------------------------------- the SDK's client


@dataclass
class Seen:
    notes: list[types.ServerNotification] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.notes.append(message)
        self.arrived.set()

    async def wait_for(self, method: str, uri: str | None = None) -> float:
        """Seconds until a notification ``method`` (for ``uri``) is there."""
        start = time.monotonic()
        with anyio.fail_after(10):
            while True:
                for note in self.notes:
                    params = getattr(note, "params", None)
                    if note.method == method and (
                        uri is None or getattr(params, "uri", None) == uri
                    ):
                        self.notes.remove(note)
                        return time.monotonic() - start
                self.arrived = anyio.Event()
                await self.arrived.wait()


async def sdk_session(
    adapter: Adapter,
    body: Callable[[ClientSession, Seen], Awaitable[None]],
    seen: Seen | None = None,
) -> Seen:
    seen = seen or Seen()

    async def record(response: httpx2.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and sid not in seen.sessions:
            seen.sessions.append(sid)

    headers = {"Authorization": f"Bearer {adapter.token}"}
    async with (
        httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30, read=300),
            event_hooks={"response": [record]},
        ) as http,
        streamable_http_client(adapter.url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=seen.handler) as session,
    ):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.capabilities.resources is not None
        assert init.capabilities.resources.subscribe is True
        await body(session, seen)
    return seen


async def ok(session: ClientSession, tool: str, /, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    block = result.content[0]
    assert block.type == "text"
    assert not result.is_error, block.text  # type: ignore[union-attr]
    body = json.loads(block.text)  # type: ignore[union-attr]
    assert result.structured_content == body  # validated against outputSchema by the SDK
    return body


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            await main()

    anyio.run(bounded)


def test_every_tool_and_a_pane_resource_over_http(adapter: Adapter) -> None:
    async def body(session: ClientSession, seen: Seen) -> None:
        listing = await session.list_tools()
        assert [t.name for t in listing.tools] == EVERY_TOOL
        await session.send_ping()

        new = await ok(session, "phux_new", name="h1", command=["/bin/sh"])
        pane = f"@{new['terminal_id']}"
        assert [s["name"] for s in (await ok(session, "phux_ls"))["sessions"]] == ["h1"]
        assert (await ok(session, "phux_wait", target="h1", until="$", timeout_secs=10))[
            "outcome"
        ] == "met"
        sent = await ok(session, "phux_send_keys", target="h1", keys=["echo o''k", "Enter"])
        assert sent["pane"] == pane
        await ok(session, "phux_wait", target="h1", until="ok", timeout_secs=10)
        snap = await ok(session, "phux_snapshot", target=pane)
        assert any(line.strip() == "ok" for line in snap["lines"])
        ran = await ok(session, "phux_run", target="h1", command="echo ran; false")
        assert ran["exit_code"] == 1 and "ran" in ran["output"]
        history = await ok(session, "phux_history", target="h1")
        assert history["commands"][-1]["command"] == "echo ran; false"
        await ok(session, "phux_paste", target="h1", text="echo pas''ted\n")
        await ok(session, "phux_wait", target="h1", until="pasted", timeout_secs=10)
        win = await ok(session, "phux_new_window", session="h1", command=["/bin/sh"])
        split = await ok(session, "phux_split", target="h1:1", command=["/bin/sh"])
        assert await ok(session, "phux_tag", target=f"@{split['terminal_id']}", tags=["t"]) == {
            "tags": ["t"]
        }

        # The panes as resources: listed, read, and a subscription told of a change.
        resources = await session.list_resources()
        uris = {str(r.uri) for r in resources.resources}
        assert {"phux://h1/0.0", "phux://h1/1.0", "phux://h1/1.1"} <= uris
        read = await session.read_resource("phux://h1/0.0")
        screen = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        assert screen["pane"] == new["terminal_id"] and read.contents[0].mime_type == (
            "application/json"
        )
        assert (
            json.loads((await session.read_resource(f"phux://{pane}")).contents[0].text)[  # type: ignore[union-attr]
                "pane"
            ]
            == new["terminal_id"]
        )
        await session.subscribe_resource("phux://h1/0.0")
        adapter.send_keys(pane, "echo changed", "Enter")
        await seen.wait_for("notifications/resources/updated", "phux://h1/0.0")
        after = json.loads((await session.read_resource("phux://h1/0.0")).contents[0].text)  # type: ignore[union-attr]
        assert any("changed" in line for line in after["lines"])
        adapter.new("h1b")
        await seen.wait_for("notifications/resources/list_changed")
        adapter.rename("h1b", "h1c")  # no terminal came or went: the metadata moved
        await seen.wait_for("notifications/resources/list_changed")
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert "phux://h1c/0.0" in uris and "phux://h1b/0.0" not in uris
        await session.unsubscribe_resource("phux://h1/0.0")

        killed = await ok(session, "phux_kill", target="h1")
        assert len(killed["killed"]) == 3 and win["window"] == 1
        await ok(session, "phux_kill", target="h1c")

    seen = run_session(adapter, body)
    # The SDK ends its session with DELETE on the way out: the id is gone.
    assert len(seen.sessions) == 1
    status, _, _ = raw(adapter, "POST", PING, {"mcp-session-id": seen.sessions[0]})
    assert status == 404


def run_session(adapter: Adapter, body: Callable[[ClientSession, Seen], Awaitable[None]]) -> Seen:
    out: list[Seen] = []

    async def main() -> None:
        out.append(await sdk_session(adapter, body))

    run(main)
    return out[0]


def test_two_clients_at_once(adapter: Adapter) -> None:
    """Two SDK clients, two sessions, calls overlapping: a phux_wait blocked in one does
    not hold the other up."""
    adapter.new("two")
    done: list[str] = []

    async def waiter(session: ClientSession, seen: Seen) -> None:
        result = await ok(session, "phux_wait", target="two", until="both-go", timeout_secs=20)
        assert result["outcome"] == "met"
        done.append("waiter")

    async def typer(session: ClientSession, seen: Seen) -> None:
        await anyio.sleep(0)  # both sessions up; then the other's wait is blocked
        await ok(session, "phux_wait", target="two", until="$", timeout_secs=10)
        await ok(session, "phux_send_keys", target="two", keys=["echo both-g''o", "Enter"])
        done.append("typer")

    seens: list[Seen] = []

    async def main() -> None:
        async def one(body: Callable[[ClientSession, Seen], Awaitable[None]]) -> None:
            seens.append(await sdk_session(adapter, body))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, waiter)
            tg.start_soon(one, typer)

    try:
        run(main)
    finally:
        adapter.kill("two")
    assert sorted(done) == ["typer", "waiter"]
    assert len({s.sessions[0] for s in seens}) == 2  # a session each


# ---------------------------------------------------------------- raw HTTP

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
}


def raw(
    adapter: Adapter,
    method: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    *,
    auth: bool = True,
    data: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    conn = http.client.HTTPConnection("127.0.0.1", adapter.port, timeout=20)
    try:
        hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if auth:
            hdrs["Authorization"] = f"Bearer {adapter.token}"
        hdrs.update(headers or {})
        payload = data if data is not None else (None if body is None else json.dumps(body))
        conn.request(method, "/mcp", body=payload, headers=hdrs)
        response = conn.getresponse()
        text = response.read()
        out = json.loads(text) if text else None
        return response.status, {k.lower(): v for k, v in response.getheaders()}, out
    finally:
        conn.close()


def exchange(adapter: Adapter, head: str) -> bytes:
    """Send a request head alone; what comes back until the adapter closes."""
    with socket.create_connection(("127.0.0.1", adapter.port), timeout=20) as sock:
        sock.sendall(head.encode())
        reply = b""
        while data := sock.recv(65536):
            reply += data
    return reply


def session_id(adapter: Adapter) -> str:
    status, headers, body = raw(adapter, "POST", INIT)
    assert status == 200 and body["result"]["protocolVersion"] == "2025-06-18"
    return headers["mcp-session-id"]


def test_refusals_are_json_rpc_errors_and_the_server_keeps_serving(adapter: Adapter) -> None:
    def refused(status: int, expected: int, body: Any, text: str) -> None:
        assert status == expected, (status, body)
        assert body["jsonrpc"] == "2.0" and body["id"] is None
        assert text in body["error"]["message"], body

    status, headers, body = raw(adapter, "POST", INIT, auth=False)
    refused(status, 401, body, "Bearer")
    assert headers["www-authenticate"].startswith("Bearer")
    status, _, body = raw(adapter, "POST", INIT, {"Authorization": "Bearer not-the-token"})
    refused(status, 401, body, "Unauthorized")
    status, _, body = raw(adapter, "POST", INIT, {"Authorization": f"Basic {adapter.token}"})
    refused(status, 401, body, "Unauthorized")
    # DNS rebinding: a page of another site, or a Host that names another machine.
    status, _, body = raw(adapter, "POST", INIT, {"Origin": "http://evil.example"})
    refused(status, 403, body, "evil.example")
    status, _, body = raw(adapter, "POST", INIT, {"Origin": "null"})
    refused(status, 403, body, "origin")
    status, _, body = raw(adapter, "POST", INIT, {"Host": f"evil.example:{adapter.port}"})
    refused(status, 403, body, "Host")
    status, _, _ = raw(adapter, "POST", INIT, {"Origin": f"http://localhost:{adapter.port}"})
    assert status == 200  # its own address is fine

    sid = session_id(adapter)
    status, _, body = raw(adapter, "POST", PING, {"mcp-session-id": "no-such-session"})
    refused(status, 404, body, "no such session")
    status, _, body = raw(adapter, "POST", PING)
    refused(status, 400, body, "Mcp-Session-Id")
    status, _, body = raw(
        adapter, "POST", PING, {"mcp-session-id": sid, "MCP-Protocol-Version": "1999-01-01"}
    )
    refused(status, 400, body, "MCP-Protocol-Version")
    status, _, body = raw(adapter, "PUT", PING, {"mcp-session-id": sid})
    refused(status, 405, body, "PUT")
    status, _, body = raw(adapter, "POST", PING, {"mcp-session-id": sid, "Accept": "text/html"})
    refused(status, 406, body, "application/json")
    status, _, body = raw(adapter, "GET", None, {"mcp-session-id": sid, "Accept": "text/html"})
    refused(status, 406, body, "text/event-stream")

    # Malformed bodies: a parse error, not JSON-RPC; answered, nothing else happens.
    status, _, body = raw(
        adapter, "POST", data=b'{"jsonrpc": "2.0", "id": 1, "meth', headers={"mcp-session-id": sid}
    )
    assert status == 400 and body["error"]["code"] == -32700, body
    status, _, body = raw(adapter, "POST", data=b"[]", headers={"mcp-session-id": sid})
    assert status == 400 and body["error"]["code"] == -32600, body
    # A huge body: refused by its announced length before it is read (413), and the
    # connection closed; the server goes on.
    reply = exchange(
        adapter,
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {5 << 20}\r\n"
        f"Authorization: Bearer {adapter.token}\r\nMcp-Session-Id: {sid}\r\n"
        "Content-Type: application/json\r\nAccept: application/json\r\n\r\n",
    )
    assert reply.startswith(b"HTTP/1.1 413 "), reply[:200]
    assert b"connection: close" in reply.lower() and b"too large" in reply

    # A notification is accepted with 202 and no body; the session still answers.
    status, _, body = raw(
        adapter,
        "POST",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"mcp-session-id": sid},
    )
    assert (status, body) == (202, None)
    status, _, body = raw(
        adapter, "POST", PING, {"mcp-session-id": sid, "MCP-Protocol-Version": "2025-06-18"}
    )
    assert (status, body) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    status, _, _ = raw(adapter, "DELETE", headers={"mcp-session-id": sid})
    assert status == 200
    status, _, body = raw(adapter, "POST", PING, {"mcp-session-id": sid})
    refused(status, 404, body, "no such session")


def test_a_chunked_huge_body_is_cut_off(adapter: Adapter) -> None:
    """No Content-Length to refuse up front: the body is counted as it comes."""
    sid = session_id(adapter)
    with socket.create_connection(("127.0.0.1", adapter.port), timeout=20) as sock:
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            f"Authorization: Bearer {adapter.token}\r\nMcp-Session-Id: {sid}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n\r\n"
        )
        sock.sendall(head.encode())
        chunk = b"x" * (1 << 20)
        reply = b""
        try:  # the adapter answers 413 and closes once 4 MiB came
            for _ in range(64):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass
        try:
            while data := sock.recv(65536):
                reply += data
        except OSError:
            pass
    assert reply.startswith(b"HTTP/1.1 413") or reply == b"", reply[:100]
    status, _, _ = raw(adapter, "POST", PING, {"mcp-session-id": sid})
    assert status == 200


def test_a_stream_nobody_reads_holds_nobody_up(adapter: Adapter) -> None:
    """One client opens its session's event stream, subscribes to a busy pane and
    never reads; another session's calls are still answered at once."""
    adapter.new("flood")
    stalled = session_id(adapter)
    status, _, _ = raw(
        adapter,
        "POST",
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/subscribe",
            "params": {"uri": "phux://flood/0.0"},
        },
        {"mcp-session-id": stalled},
    )
    assert status == 200
    sock = socket.create_connection(("127.0.0.1", adapter.port), timeout=20)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(
            (
                "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                f"Authorization: Bearer {adapter.token}\r\nMcp-Session-Id: {stalled}\r\n\r\n"
            ).encode()
        )
        # The pane changes again and again (each a notification for the stalled stream).
        adapter.send_keys("flood", "while :; do echo flood; sleep 0.05; done", "Enter")
        other = session_id(adapter)
        for rid in range(20):
            start = time.monotonic()
            status, _, body = raw(
                adapter,
                "POST",
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "phux_ls"},
                },
                {"mcp-session-id": other},
            )
            assert status == 200 and body["result"]["isError"] is False
            assert time.monotonic() - start < 5
    finally:
        sock.close()
        adapter.kill("flood")


def test_print_token_and_a_remote_bind_needs_its_option(
    adapter: Adapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from phux.cli.mcp_cmd import mcp_cmd

    monkeypatch.setenv("XDG_STATE_HOME", str(adapter.server.dir / "state"))

    def phux(*args: str) -> Any:
        return CliRunner().invoke(mcp_cmd, list(args))

    assert phux("--print-token").output.strip() == adapter.token
    other = tmp_path / "tok"
    made = phux("--print-token", "--token-file", str(other)).output.strip()
    assert made == other.read_text().strip() and made != adapter.token
    assert other.stat().st_mode & 0o777 == 0o600
    other.chmod(0o644)
    refused = phux("--print-token", "--token-file", str(other))
    assert refused.exit_code == 1 and "chmod 600" in refused.output
    remote = phux("--http", "0.0.0.0:0")
    assert remote.exit_code == 2 and "--allow-remote" in remote.output
    bad = phux("--http", "127.0.0.1:http")
    assert bad.exit_code == 2 and "[HOST:]PORT" in bad.output


def test_the_sdks_high_level_client_over_a_read_only_adapter(adapter: Adapter) -> None:
    """mcp.Client (mode auto) first probes the stateless 2026 revision (server/discover,
    MCP-Protocol-Version 2026-07-28): refused with 400 and a JSON-RPC error, it falls
    back to initialize and a session. --read-only serves the observer tools alone, as
    on stdio."""
    from mcp import Client

    proc, port = start_adapter(adapter.server, "--read-only")
    try:

        async def main() -> None:
            headers = {"Authorization": f"Bearer {adapter.token}"}
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                assert client.protocol_version == "2025-11-25"
                tools = await client.list_tools()
                assert [t.name for t in tools.tools] == [
                    "phux_ls",
                    "phux_snapshot",
                    "phux_wait",
                    "phux_history",
                    "phux_notes",
                    "phux_tasks",
                    "phux_summary",
                ]
                result = await client.call_tool("phux_ls", {})
                assert not result.is_error
                assert "sessions" in json.loads(result.content[0].text)  # type: ignore[union-attr]
                with pytest.raises(Exception, match="Unknown tool: phux_new"):
                    await client.call_tool("phux_new", {"name": "nope"})

        run(main)
    finally:
        assert stop(proc) == 0


def test_sessions_are_bounded_least_recently_used_first(adapter: Adapter) -> None:
    from phux.mcp.http import MAX_SESSIONS

    first, kept = session_id(adapter), session_id(adapter)
    for _ in range(MAX_SESSIONS - 2):
        session_id(adapter)
        status, _, _ = raw(adapter, "POST", PING, {"mcp-session-id": kept})  # in use
        assert status == 200
    # One more than the bound: the least recently used ones made room.
    session_id(adapter)
    assert raw(adapter, "POST", PING, {"mcp-session-id": first})[0] == 404
    assert raw(adapter, "POST", PING, {"mcp-session-id": kept})[0] == 200

"""``phux mcp --http``: a tool call over HTTP against the same over stdio, and how long
a pane's change takes to become a resource notification.

A private phux server holds one ``sh`` pane. Measured in the same run:

- **warm phux_snapshot over HTTP**: the median round trip of a ``tools/call`` POST on
  a kept-alive connection to one ``phux mcp --http`` session, after a first call
  warmed the adapter's mirror. Baseline: the same call written as a line to a warm
  ``phux mcp`` over stdio (what a local host pays).
- **pane change -> notifications/resources/updated**: from typing a command into the
  pane (a client in this process) to the notification arriving on the session's
  GET event stream. Baseline: from the same typing to the echoed output reaching a
  viewer of the pane (this process's own mirror): the rest is the adapter's settle
  time (``phux.mcp.resources.SETTLE``, 50 ms) and its hops.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.bench.bench_mcp import _Mcp, _Server
from tools.bench.harness import Measurement, median_seconds

BENCH = "mcp_http"
READ_TIMEOUT = 30.0


class _Http:
    """One ``phux mcp --http 127.0.0.1:0`` process and one session on a kept-alive connection."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phux", "mcp", "--http", "127.0.0.1:0"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        match = re.search(rb":(\d+)/mcp \(bearer token in (.+)\)", line)
        if match is None:
            raise RuntimeError(f"phux mcp --http did not start: {line!r}")
        self.port = int(match.group(1))
        self.token = Path(match.group(2).decode()).read_text().strip()
        # A raw kept-alive socket, not http.client, which costs ~3 ms a request of its
        # own here (its reads and header parsing): that is the client's, not phux's.
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=READ_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""
        self.sid = ""
        self._id = 0
        _, headers = self.post(
            {"method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
        )
        self.sid = headers["mcp-session-id"]

    def headers(self) -> dict[str, str]:
        out = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.sid:
            out["Mcp-Session-Id"] = self.sid
        return out

    def post(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, **message}).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers().items())
        request = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}"
        request += f"Content-Length: {len(body)}\r\n\r\n"
        self.sock.sendall(request.encode() + body)
        while b"\r\n\r\n" not in self._buf:
            self._recv()
        raw_head, _, self._buf = self._buf.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self._buf) < length:
            self._recv()
        data, self._buf = self._buf[:length], self._buf[length:]
        reply: dict[str, Any] = json.loads(data)
        if not lines[0].startswith("HTTP/1.1 200") or "error" in reply:
            raise RuntimeError(f"{lines[0]}: {reply}")
        return reply, headers

    def _recv(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise EOFError("phux mcp --http closed the connection")
        self._buf += data

    def snapshot(self, target: str) -> None:
        reply, _ = self.post(
            {
                "method": "tools/call",
                "params": {"name": "phux_snapshot", "arguments": {"target": target}},
            }
        )
        if reply["result"]["isError"]:
            raise RuntimeError(reply["result"]["content"][0]["text"])

    def events(self) -> socket.socket:
        """The session's GET event stream, its response head read."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=READ_TIMEOUT)
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers().items())
        sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode())
        got = b""
        while b"\r\n\r\n" not in got:
            got += sock.recv(4096)
        if not got.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"GET stream refused: {got[:200]!r}")
        return sock

    def close(self) -> None:
        self.sock.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def _await_updated(sock: socket.socket) -> None:
    end = time.monotonic() + READ_TIMEOUT
    buf = b""
    while b"notifications/resources/updated" not in buf:
        left = end - time.monotonic()
        ready, _, _ = select.select([sock], [], [], max(0.0, left))
        if not ready:
            raise TimeoutError("no notification")
        data = sock.recv(65536)
        if not data:
            raise EOFError("the event stream ended")
        buf += data


def _drain(sock: socket.socket) -> None:
    while select.select([sock], [], [], 0)[0]:
        if not sock.recv(65536):
            raise EOFError("the event stream ended")


def _notification_delays(http: _Http, socket_path: str, repeat: int) -> tuple[float, float]:
    from phux.client import Client
    from phux.client.deadline import Deadline

    http.post({"method": "resources/subscribe", "params": {"uri": "phux://bench/0.0"}})
    stream = http.events()
    notified, seen = [], []
    with Client(socket_path) as client:
        pane = client.resolve("bench", Deadline.after(10))
        mirror = client.mirror(pane, Deadline.after(10), engine=False, history=0)
        for i in range(repeat):
            time.sleep(0.3)  # the last change settled and its 200 ms passed
            client.drain()
            _drain(stream)
            frames = mirror.output_frames
            start = time.perf_counter()
            client.send_keys(pane.id, [f": n{i}", "Enter"], Deadline.after(10))
            while mirror.output_frames == frames:
                client.pump(Deadline.after(10))
            seen.append(time.perf_counter() - start)
            _await_updated(stream)
            notified.append(time.perf_counter() - start)
    stream.close()
    return statistics.median(notified), statistics.median(seen)


def run(quick: bool) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="phux-bench-mcphttp-", dir="/tmp") as tmp:
        server = _Server(Path(tmp))
        try:
            server.start(10_000)
            env = dict(server.env, XDG_STATE_HOME=os.path.join(tmp, "state"))
            stdio = _Mcp(env)
            http = _Http(env)
            try:
                stdio.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
                repeat = 50 if quick else 300
                stdio_s = median_seconds(lambda: stdio.snapshot("bench"), repeat=repeat, warmup=3)
                http_s = median_seconds(lambda: http.snapshot("bench"), repeat=repeat, warmup=3)
                notified_s, seen_s = _notification_delays(
                    http, str(server.sock), 8 if quick else 30
                )
            finally:
                http.close()
                stdio.close()
        finally:
            server.stop()
    return [
        Measurement(
            bench=BENCH,
            name="warm phux_snapshot over HTTP",
            unit="ms",
            value=http_s * 1000,
            baseline_name="the same over stdio",
            baseline=stdio_s * 1000,
            higher_is_better=False,
        ),
        Measurement(
            bench=BENCH,
            name="pane change -> resources/updated",
            unit="ms",
            value=notified_s * 1000,
            baseline_name="change -> output at a viewer",
            baseline=seen_s * 1000,
            higher_is_better=False,
            target="settle 50 ms + hops",
        ),
    ]

"""The MCP adapter: a warm ``phux_snapshot`` round trip against the CLI's ``snapshot --json``.

A private phux server holds one pane with a large history (1 MB; 100 kB with
``--quick``). One long-lived ``phux mcp`` process is driven over its stdio
with raw JSON-RPC lines, the way an agent host drives it:

- **warm phux_snapshot**: the median time from writing a ``tools/call`` line
  to reading its whole response line, after a first call has subscribed the
  adapter's mirror of the pane (so no new bootstrap is needed);
- **cold phux_snapshot**: the first call of a fresh adapter process on the same
  pane (connect, handshake, subscribe, bootstrap, project), median over a few
  processes.

Baseline, measured in the same run: a whole ``python -m phux snapshot --json``
process on the same pane, which is what an agent shelling out to the CLI pays.
Target (from the issue): warm ``phux_snapshot`` median <= 10 ms.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.bench.harness import Measurement, median_seconds, run_silently

BENCH = "mcp"
READ_TIMEOUT = 60.0


class _Mcp:
    """One ``phux mcp`` process with bounded line reads."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phux", "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buf = b""
        self._id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            msg["params"] = params
        os.write(self._in, json.dumps(msg).encode() + b"\n")
        reply: dict[str, Any] = json.loads(self._readline())
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply

    def snapshot(self, target: str) -> None:
        reply = self.request(
            "tools/call", {"name": "phux_snapshot", "arguments": {"target": target}}
        )
        if reply["result"]["isError"]:
            raise RuntimeError(reply["result"]["content"][0]["text"])

    def _readline(self) -> bytes:
        end = time.monotonic() + READ_TIMEOUT
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("phux mcp did not answer")
            ready, _, _ = select.select([self._out], [], [], left)
            if ready:
                data = os.read(self._out, 1 << 20)
                if not data:
                    raise EOFError("phux mcp exited")
                self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stdout.close()


class _Server:
    def __init__(self, root: Path) -> None:
        self.sock = root / "s"
        self.env = dict(os.environ, PHUX_SOCKET=str(self.sock), SHELL="/bin/sh")
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None

    def phux(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "phux", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, history_bytes: int) -> None:
        argv = [sys.executable, "-m", "phux", "server", "--socket", str(self.sock)]
        argv += ["--log-file", str(self.root / "server.log")]
        self.proc = subprocess.Popen(
            argv, env=self.env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        end = time.monotonic() + 20
        while not self.sock.exists():
            if time.monotonic() > end or self.proc.poll() is not None:
                raise RuntimeError("the phux server did not start")
            time.sleep(0.02)
        created = self.phux("new", "--json", "-s", "bench", "--", "sh")
        if created.returncode != 0:
            raise RuntimeError(f"phux new: {created.stderr}")
        lines = history_bytes // 60 + 1
        filled = self.phux("run", "--timeout", "120", "bench", f"seq -f '%058g' 1 {lines}")
        if filled.returncode != 0:
            raise RuntimeError(f"phux run: {filled.stderr}")

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _cold(env: dict[str, str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        mcp = _Mcp(env)
        try:
            mcp.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
            start = time.perf_counter()
            mcp.snapshot("bench")
            samples.append(time.perf_counter() - start)
        finally:
            mcp.close()
    return statistics.median(samples)


def run(quick: bool) -> list[Measurement]:
    history = 100_000 if quick else 1_100_000
    with tempfile.TemporaryDirectory(prefix="phux-bench-mcp-", dir="/tmp") as tmp:
        server = _Server(Path(tmp))
        try:
            server.start(history)
            env = server.env

            def cli() -> None:
                argv = [sys.executable, "-m", "phux", "snapshot", "--json", "bench"]
                if run_silently(argv, env) != 0:
                    raise RuntimeError("phux snapshot --json failed")

            cli_s = median_seconds(cli, repeat=5 if quick else 15)
            cold_s = _cold(env, 3 if quick else 7)
            mcp = _Mcp(env)
            try:
                mcp.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
                warm_s = median_seconds(
                    lambda: mcp.snapshot("bench"), repeat=50 if quick else 300, warmup=3
                )
            finally:
                mcp.close()
        finally:
            server.stop()
    baseline = "CLI snapshot --json (process)"
    return [
        Measurement(
            bench=BENCH,
            name="warm phux_snapshot round trip",
            unit="ms",
            value=warm_s * 1000,
            baseline_name=baseline,
            baseline=cli_s * 1000,
            higher_is_better=False,
            target="<= 10 ms median",
        ),
        Measurement(
            bench=BENCH,
            name="cold phux_snapshot (first call)",
            unit="ms",
            value=cold_s * 1000,
            baseline_name=baseline,
            baseline=cli_s * 1000,
            higher_is_better=False,
        ),
    ]

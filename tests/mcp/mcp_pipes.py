"""Bounded line I/O with a subprocess or an in-process server over pipes.

Every read has a deadline: a test that waits for an answer that never comes
fails after a few seconds instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from collections.abc import Iterator
from typing import Any

READ_TIMEOUT = 10.0


class LineReader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()
        self.eof = False

    def readline(self, timeout: float = READ_TIMEOUT) -> bytes:
        """The next line (without its newline); raises TimeoutError, EOFError."""
        end = time.monotonic() + timeout
        while b"\n" not in self._buf:
            if self.eof:
                raise EOFError("stream closed")
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line within {timeout} s (have {bytes(self._buf)[:200]!r})")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            data = os.read(self.fd, 1 << 20)
            if not data:
                self.eof = True
            self._buf += data
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line

    def message(self, timeout: float = READ_TIMEOUT) -> Any:
        return json.loads(self.readline(timeout))

    def nothing_within(self, seconds: float) -> bool:
        """True if no bytes at all arrive within ``seconds``."""
        if self._buf:
            return False
        ready, _, _ = select.select([self.fd], [], [], seconds)
        return not ready

    def wait_eof(self, timeout: float = READ_TIMEOUT) -> bytes:
        """Read until EOF; returns what came before it."""
        end = time.monotonic() + timeout
        while not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no EOF")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                data = os.read(self.fd, 1 << 20)
                if not data:
                    self.eof = True
                self._buf += data
        out = bytes(self._buf)
        self._buf.clear()
        return out


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def request(rid: Any, method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"


def notification(method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"


class McpProcess:
    """``phux mcp`` as a subprocess with bounded line I/O; always stopped on exit."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phux", "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.out = LineReader(self.proc.stdout.fileno())
        self._stdin = self.proc.stdin.fileno()

    def send(self, data: bytes) -> None:
        write_all(self._stdin, data)

    def ask(self, rid: Any, method: str, params: Any = None) -> Any:
        self.send(request(rid, method, params))
        return self.out.message()

    def call(self, name: str, arguments: Any = None, rid: Any = 1, timeout: float = 30) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        self.send(request(rid, "tools/call", params))
        return self.out.message(timeout)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def finish(self, timeout: float = 5.0) -> tuple[int, bytes]:
        """Close stdin and wait for the exit; returns (returncode, stderr)."""
        self.close_stdin()
        rc = self.proc.wait(timeout)
        assert self.proc.stderr is not None
        return rc, self.proc.stderr.read()

    def stop(self) -> None:
        import subprocess

        self.close_stdin()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> McpProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PhuxServer:
    """A real ``python -m phux server`` on a socket in a short temp dir; stop() always."""

    START_TIMEOUT = 15.0

    def __init__(self) -> None:
        import tempfile
        from pathlib import Path

        self.dir = Path(tempfile.mkdtemp(prefix="phux-mcp-", dir="/tmp"))
        self.socket = self.dir / "s"
        self.proc: Any = None

    def start(self) -> PhuxServer:
        import socket
        import subprocess
        import sys

        env = {**os.environ, "SHELL": "/bin/sh", "PS1": "$ "}
        argv = [sys.executable, "-m", "phux", "server", "--socket", str(self.socket)]
        argv += ["--log-file", str(self.dir / "server.log")]
        self.proc = subprocess.Popen(
            argv, env=env, cwd=self.dir, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        end = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()}")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(self.socket))
                return self
            except OSError:
                time.sleep(0.02)
            finally:
                probe.close()
        raise TimeoutError("the phux server did not start")

    def restart(self) -> None:
        """Stop the server and start a new one on the same socket."""
        self._kill()
        self.socket.unlink(missing_ok=True)
        self.start()

    def stop(self) -> None:
        import shutil

        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill(self) -> None:
        import signal
        import subprocess

        proc = self.proc
        if proc is not None and proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                proc.send_signal(sig)
                try:
                    proc.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()


@contextlib.contextmanager
def running_server() -> Iterator[PhuxServer]:
    """A started PhuxServer, stopped afterwards (a module fixture's body)."""
    srv = PhuxServer()
    try:
        yield srv.start()
    finally:
        srv.stop()


@contextlib.contextmanager
def initialized(server: PhuxServer, revision: str = "2025-06-18") -> Iterator[McpProcess]:
    """A `phux mcp` on ``server`` past its initialize handshake."""
    env = {**os.environ, "PHUX_SOCKET": str(server.socket)}
    with McpProcess(env=env) as proc:
        reply = proc.ask(0, "initialize", {"protocolVersion": revision})
        assert reply["result"]["protocolVersion"] == revision
        yield proc

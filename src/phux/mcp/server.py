"""The MCP stdio loop: read lines, answer the protocol, run tool calls.

Protocol methods (initialize, ping, tools/list, errors) are answered inline
by the reading thread. Each tool call runs on its own worker thread, so a
long ``phux_wait`` neither stalls pings nor delays stdin EOF handling, and a
host that calls tools in parallel gets parallel answers. Responses are
written whole, one per line, under a lock. Nothing is ever written to
stderr: a tool that fails answers ``isError: true``; a bug in one answers an
internal error.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from phux.mcp import jsonrpc
from phux.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    NULL_ID,
    Invalid,
    Message,
    Reply,
    Request,
)

PROTOCOL_VERSION = "2024-11-05"
# How many tool calls may run at once; one more is refused with a tool error.
MAX_INFLIGHT = 16
# At stdin EOF, how long calls already running get to deliver their answers.
EOF_GRACE_SECONDS = 5.0
_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: the text of its single content block."""

    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    call: Callable[[dict[str, Any]], ToolResult]

    def listing(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }


# Cancelled calls keep running (a blocking client call cannot be interrupted)
# but stop counting against max_inflight; threads in all are bounded by this.
_THREAD_FACTOR = 4


@dataclass
class _Call:
    counted: bool = True
    cancelled: bool = False


class _Writer:
    """Whole messages to a file descriptor, one per line, never interleaved."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.broken = False

    def write(self, message: bytes) -> None:
        data = memoryview(message + b"\n")
        with self._lock:
            if self.broken:
                return
            try:
                while data:
                    try:
                        data = data[os.write(self._fd, data) :]
                    except BlockingIOError:  # a host that handed us a non-blocking pipe
                        select.select([], [self._fd], [])
            except OSError:
                self.broken = True  # the host went away; keep reading until EOF

    def close(self) -> None:
        """Write nothing more (a call still running past the EOF grace stays silent)."""
        with self._lock:
            self.broken = True


class McpServer:
    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        name: str,
        version: str,
        instructions: str | None = None,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        max_inflight: int = MAX_INFLIGHT,
        eof_grace: float = EOF_GRACE_SECONDS,
        max_line_bytes: int = jsonrpc.MAX_LINE_BYTES,
    ) -> None:
        self._max_line_bytes = max_line_bytes
        self._tools = {tool.name: tool for tool in tools}
        self._catalog = {"tools": [tool.listing() for tool in tools]}
        self._info = {"name": name, "version": version}
        self._instructions = instructions
        self._stdin_fd = stdin_fd
        self._out = _Writer(stdout_fd)
        self._max_inflight = max_inflight
        self._inflight = 0  # calls counted against max_inflight (cancelled ones are not)
        self._eof_grace = eof_grace
        self._lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._running: dict[bytes, _Call] = {}

    # ------------------------------------------------------------ the loop

    def serve(self) -> None:
        """Answer messages until stdin reaches EOF."""
        splitter = jsonrpc.LineSplitter(self._max_line_bytes)
        while True:
            try:
                data = os.read(self._stdin_fd, _READ_SIZE)
            except BlockingIOError:  # a host that handed us a non-blocking pipe
                select.select([self._stdin_fd], [], [])
                continue
            except OSError:
                break
            if not data:
                break
            for line in splitter.feed(data):
                self._handle_line(line)
        for line in splitter.finish():
            self._handle_line(line)
        self._drain()
        self._out.close()

    def _drain(self) -> None:
        end = time.monotonic() + self._eof_grace
        while True:
            with self._lock:
                workers = list(self._workers)
            if not workers:
                return
            left = end - time.monotonic()
            if left <= 0:
                return
            workers[0].join(left)

    def _handle_line(self, line: bytes | None) -> None:
        if line is None:
            self._out.write(
                jsonrpc.error_response(
                    NULL_ID,
                    jsonrpc.PARSE_ERROR,
                    f"Parse error: line longer than {self._max_line_bytes} bytes",
                )
            )
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        parsed = jsonrpc.parse_line(line)
        if parsed.batch:
            if any(self._is_tool_call(m) for m in parsed.messages):
                self._spawn(None, lambda: self._answer_batch(parsed.messages))
            else:
                self._write(self._answer_batch(parsed.messages))
            return
        message = parsed.messages[0]
        if isinstance(message, Request) and self._is_tool_call(message):
            assert message.id is not None
            self._spawn(message.id, lambda: self._answer(message))
            return
        self._write(self._answer(message))

    def _write(self, answer: bytes | None) -> None:
        if answer is not None:
            self._out.write(answer)

    @staticmethod
    def _is_tool_call(message: Message) -> bool:
        return (
            isinstance(message, Request)
            and message.id is not None
            and message.method == "tools/call"
        )

    def _answer_batch(self, messages: list[Message]) -> bytes | None:
        answers = [a for a in (self._answer(m) for m in messages) if a is not None]
        return jsonrpc.batch_response(answers) if answers else None

    def _spawn(self, rid: msgspec.Raw | None, compute: Callable[[], bytes | None]) -> None:
        """Run ``compute`` on a worker thread and write its answer (unless cancelled)."""
        key = None if rid is None else bytes(rid)
        call = _Call()
        with self._lock:
            refusal = None
            if key is not None and key in self._running:
                refusal = "Invalid Request: a request with this id is still running"
            elif (
                self._inflight >= self._max_inflight
                or len(self._workers) >= _THREAD_FACTOR * self._max_inflight
            ):
                refusal = "too many tool calls running"
            if refusal is None:
                self._inflight += 1
                if key is not None:
                    self._running[key] = call
        if refusal is not None:
            if rid is None:
                self._write(compute())  # a batch: answer it inline rather than drop it
            elif refusal.startswith("Invalid"):
                self._write(jsonrpc.error_response(rid, jsonrpc.INVALID_REQUEST, refusal))
            else:
                text = f"{refusal} (at most {self._max_inflight} at once); retry shortly"
                self._write(jsonrpc.result_response(rid, _content(ToolResult(text, True))))
            return

        def run() -> None:
            answer = None
            try:
                answer = compute()
            except BaseException:  # pragma: no cover - _answer already catches
                pass
            finally:
                with self._lock:
                    if key is not None:
                        self._running.pop(key, None)
                    if call.counted:
                        self._inflight -= 1
                    cancelled = call.cancelled
                if not cancelled:
                    self._write(answer)
                with self._lock:  # only now: the EOF drain waits for the answer above
                    self._workers.discard(thread)

        thread = threading.Thread(target=run, name="phux-mcp-call", daemon=True)
        with self._lock:
            self._workers.add(thread)
        thread.start()

    # ------------------------------------------------------------ methods

    def _answer(self, message: Message) -> bytes | None:
        """The response to one message, or None when it gets none."""
        if isinstance(message, Reply):
            return None
        if isinstance(message, Invalid):
            return jsonrpc.error_response(message.id or NULL_ID, message.code, message.message)
        if message.id is None:
            self._notify(message)
            return None
        rid = message.id
        try:
            return self._request(rid, message.method, message.params)
        except Exception as exc:  # a bug: answer it rather than die or print
            return jsonrpc.error_response(
                rid, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}"
            )

    def _notify(self, message: Request) -> None:
        if message.method == "notifications/cancelled" and isinstance(message.params, dict):
            target = message.params.get("requestId")
            if isinstance(target, str | int) and not isinstance(target, bool):
                key = jsonrpc.encode(target)
                with self._lock:
                    call = self._running.get(key)
                    if call is not None and not call.cancelled:
                        # Its answer is dropped and it stops counting against the
                        # limit; the client call itself runs to its own timeout.
                        call.cancelled = True
                        call.counted = False
                        self._inflight -= 1
        # notifications/initialized and anything unknown: nothing to do.

    def _request(self, rid: msgspec.Raw, method: str, params: Any) -> bytes:
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": self._info,
            }
            if self._instructions:
                result["instructions"] = self._instructions
            return jsonrpc.result_response(rid, result)
        if method == "ping":
            return jsonrpc.result_response(rid, {})
        if method == "tools/list":
            return jsonrpc.result_response(rid, self._catalog)
        if method == "tools/call":
            return self._call(rid, params)
        return jsonrpc.error_response(rid, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _call(self, rid: msgspec.Raw, params: Any) -> bytes:
        if not isinstance(params, dict):
            return jsonrpc.error_response(
                rid, INVALID_PARAMS, "Invalid params: tools/call needs an object with a name"
            )
        name = params.get("name")
        if not isinstance(name, str):
            return jsonrpc.error_response(
                rid, INVALID_PARAMS, 'Invalid params: tools/call needs a string "name"'
            )
        tool = self._tools.get(name)
        if tool is None:
            return jsonrpc.error_response(
                rid,
                INVALID_PARAMS,
                f"Unknown tool: {name} (available: {', '.join(self._tools)})",
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return jsonrpc.error_response(
                rid, INVALID_PARAMS, 'Invalid params: "arguments" must be an object'
            )
        try:
            outcome = tool.call(arguments)
        except Exception as exc:  # a tool bug still answers, as a tool error
            outcome = ToolResult(f"internal error in {name}: {type(exc).__name__}: {exc}", True)
        return jsonrpc.result_response(rid, _content(outcome))


def _content(outcome: ToolResult) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}


def serve(tools: Sequence[Tool], **kwargs: Any) -> None:
    """Run an :class:`McpServer` on stdin/stdout until EOF."""
    with contextlib.suppress(KeyboardInterrupt):
        McpServer(tools, **kwargs).serve()

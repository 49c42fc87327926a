"""MCP's protocol, whatever carries it: answer the methods, run tool calls.

A :class:`Dispatcher` is one MCP session. Protocol methods (initialize, ping,
tools/list, errors) are answered inline by the thread that reads them. Each tool
call, and each resources method that asks the phux server, runs on its own
worker thread, so a long ``phux_wait`` neither stalls pings nor the transport, and
a host that calls tools in parallel gets parallel answers (a tool may ask, through
:attr:`Tool.queue`, for a place in line taken as its request is read). Answers go
back through the :data:`Send` given with each message; what the session says
unasked (resource notifications) through its :class:`Notify`.

:class:`McpServer` is the stdio transport: lines in, whole lines out under a
lock, and nothing ever written to stderr: a tool that fails answers ``isError:
true``; a bug in one answers an internal error. The Streamable HTTP transport is
:mod:`phux.mcp.http`, which feeds the same :class:`Dispatcher`.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

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
"""The revision spoken until (and unless) ``initialize`` asks for a newer one."""
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions served, oldest first. A client that asks for one of them gets it;
any other request gets the newest, which the client may then refuse. What the
tools show depends on it: tool ``annotations`` from 2025-03-26 (its tool
annotations), ``outputSchema``, ``title`` and ``structuredContent`` from
2025-06-18 (structured tool output). 2025-11-25 adds nothing a tools-only stdio
server must do. JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18)
are answered at every revision, so that every line gets an answer."""
ANNOTATIONS_SINCE = "2025-03-26"
STRUCTURED_SINCE = "2025-06-18"


def _at_least(version: str, since: str) -> bool:
    return PROTOCOL_VERSIONS.index(version) >= PROTOCOL_VERSIONS.index(since)


def negotiate(requested: object) -> str:
    """The revision to answer ``initialize`` with (the MCP lifecycle's version rule)."""
    if isinstance(requested, str) and requested in PROTOCOL_VERSIONS:
        return requested
    return PROTOCOL_VERSIONS[-1]


# How many tool calls may run at once; one more is refused with a tool error.
MAX_INFLIGHT = 16
# At stdin EOF, how long calls already running get to deliver their answers.
EOF_GRACE_SECONDS = 5.0
_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: the text of its single content block and, for a tool
    that declares an output schema, the same JSON as ``structuredContent``
    (encoded JSON text, sent as is from revision 2025-06-18 on)."""

    text: str
    is_error: bool = False
    structured: bytes | None = None


class Place(Protocol):
    """A tool call's place in line, taken when its request is read: see :attr:`Tool.queue`."""

    def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the call (it leaves the line when done)."""
        ...

    def leave(self) -> None:
        """Give the place up without running the call (idempotent)."""
        ...

    def cancel(self) -> None:
        """The host cancelled the request: stop waiting in line, if still waiting."""
        ...


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    call: Callable[[dict[str, Any]], ToolResult]
    output_schema: Callable[[], Mapping[str, Any]] | None = None
    """Builds the JSON Schema of a successful result (on the first ``tools/list``)."""
    annotations: Mapping[str, Any] | None = None
    """MCP tool annotations: readOnlyHint, destructiveHint, idempotentHint, openWorldHint."""
    title: str | None = None
    queue: Callable[[], Place] | None = None
    """Called by the reading thread as the request arrives (so in arrival order):
    the call then runs through the :class:`Place` it returns."""

    def listing(self, version: str = PROTOCOL_VERSION) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        structured = _at_least(version, STRUCTURED_SINCE)
        if structured and self.title is not None:
            out["title"] = self.title
        if structured and self.output_schema is not None:
            out["outputSchema"] = dict(self.output_schema())
        if _at_least(version, ANNOTATIONS_SINCE) and self.annotations is not None:
            annotations = _listed_hints(self.annotations)
            if self.title is not None and not structured:
                annotations.setdefault("title", self.title)  # no top-level title yet
            if annotations:
                out["annotations"] = annotations
        return out


HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
"""The value MCP gives a tool annotation the listing leaves out."""


def _listed_hints(hints: Mapping[str, Any]) -> dict[str, Any]:
    """The hints worth their bytes in a listing (every host pays them on every
    conversation): those that differ from MCP's defaults, without destructiveHint and
    idempotentHint on a read-only tool (MCP: meaningful only when it writes)."""
    read_only = hints.get("readOnlyHint") is True
    return {
        key: value
        for key, value in hints.items()
        if HINT_DEFAULTS.get(key, not value) != value
        and not (read_only and key in ("destructiveHint", "idempotentHint"))
    }


# A cancelled call stops counting against max_inflight at once and ends soon after
# (on_cancel); threads in all are bounded by this meanwhile.
_THREAD_FACTOR = 4


class _CancelScope:
    """What stops a call's work when the host cancels it: callbacks its tool registers
    (:func:`on_cancel`) around what blocks, run by the reading thread at the cancel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            callbacks = list(self._callbacks)
        for callback in callbacks:
            with contextlib.suppress(Exception):  # stopping is best effort
                callback()

    @contextlib.contextmanager
    def on_cancel(self, callback: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            self._callbacks.append(callback)
            cancelled = self.cancelled
        if cancelled:  # cancelled before it started blocking
            callback()
        try:
            yield
        finally:
            with self._lock:
                self._callbacks.remove(callback)


_current = threading.local()


def on_cancel(callback: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
    """While in this context, a cancel of the tool call running on this thread calls
    ``callback`` (from another thread): it must make what blocks return at once, as
    ``Client.interrupt`` does. Outside a tool call, it does nothing."""
    scope: _CancelScope | None = getattr(_current, "scope", None)
    return scope.on_cancel(callback) if scope is not None else contextlib.nullcontext()


@dataclass
class _Call:
    counted: bool = True
    cancelled: bool = False
    place: Place | None = None
    scope: _CancelScope = field(default_factory=_CancelScope)


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


Send = Callable[[bytes | None], None]
"""Where the answer to one incoming message goes: called once, maybe from a worker
thread, with the answer's bytes, or None when it gets none (a notification, a reply,
a call the host cancelled)."""


class Notify(Protocol):
    """Where a session's own notifications go (resources/updated, list_changed): the
    transport's to carry, or to coalesce when its peer reads slowly. ``uri`` is
    None for a list change. Called from any thread; it must not block."""

    def __call__(self, method: str, uri: str | None) -> None: ...


class ResourceNotFound(Exception):
    """No pane answers to this resource URI (JSON-RPC -32002, as MCP asks)."""


class Resources(Protocol):
    """What serves panes as MCP resources (:mod:`phux.mcp.resources`). The blocking
    methods run on a call's worker thread."""

    def listing(self) -> list[dict[str, Any]]: ...

    def templates(self) -> list[dict[str, Any]]: ...

    def read(self, uri: str) -> list[dict[str, Any]]:
        """The resource's contents (raises :class:`ResourceNotFound`)."""
        ...

    def subscribe(self, uri: str, notify: Notify) -> None:
        """Call ``notify("notifications/resources/updated", uri)`` when the pane's screen
        settles after a change (raises :class:`ResourceNotFound`)."""
        ...

    def unsubscribe(self, uri: str, notify: Notify) -> None: ...

    def watch_list(self, notify: Notify) -> None:
        """Call ``notify("notifications/resources/list_changed", None)`` when the set
        of panes changes, until :meth:`forget`."""
        ...

    def forget(self, notify: Notify) -> None:
        """The session ended: drop every subscription it held."""
        ...


RESOURCE_NOT_FOUND = -32002
# The methods whose work may block on the phux server: they run on a worker thread,
# like a tool call, so neither stdin nor the HTTP loop ever waits for them.
_BLOCKING = frozenset({"tools/call", "resources/list", "resources/read", "resources/subscribe"})


class Dispatcher:
    """One MCP session: its negotiated revision, its running calls and their answers.

    Transport-neutral: the stdio loop (:class:`McpServer`) and the Streamable HTTP
    transport (:mod:`phux.mcp.http`, one per ``Mcp-Session-Id``) feed it parsed
    messages with a :data:`Send` for each answer, and give it a :class:`Notify` for
    what the session says unasked. Protocol methods are answered inline; the
    blocking ones (:data:`_BLOCKING`) each run on a worker thread.
    """

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        name: str,
        version: str,
        instructions: str | None = None,
        max_inflight: int = MAX_INFLIGHT,
        resources: Resources | None = None,
        notify: Notify | None = None,
        catalogs: dict[str, bytes] | None = None,
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        # tools/list per revision, built on first use (shareable between sessions).
        self._catalogs: dict[str, bytes] = {} if catalogs is None else catalogs
        self.version = PROTOCOL_VERSION
        self.initialized = False
        """An ``initialize`` was answered (HTTP sessions start with one)."""
        self._info = {"name": name, "version": version}
        self._instructions = instructions
        self._max_inflight = max_inflight
        self._inflight = 0  # calls counted against max_inflight (cancelled ones are not)
        self._lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._running: dict[bytes, _Call] = {}
        self._resources = resources
        self._notify: Notify = notify if notify is not None else _drop
        self._closed = False

    # ------------------------------------------------------------ intake

    def feed(self, parsed: jsonrpc.Parsed, send: Send) -> None:
        """Answer what one line (stdio) or one body (HTTP) carried, through ``send``."""
        if parsed.batch:
            if any(self._blocks(m) for m in parsed.messages):
                self._spawn(None, lambda: self._answer_batch(parsed.messages), send)
            else:
                send(self._answer_batch(parsed.messages))
            return
        message = parsed.messages[0]
        if isinstance(message, Request) and self._blocks(message):
            assert message.id is not None
            place = self._queue(message)
            spawned = self._spawn(message.id, lambda: self._answer(message, place), send, place)
            if not spawned and place is not None:
                place.leave()
            return
        send(self._answer(message))

    def drain(self, grace: float) -> None:
        """Give the calls still running up to ``grace`` seconds to answer."""
        end = time.monotonic() + grace
        while True:
            with self._lock:
                workers = list(self._workers)
            if not workers:
                return
            left = end - time.monotonic()
            if left <= 0:
                return
            workers[0].join(left)

    def close(self) -> None:
        """The session ended: cancel its running calls (their answers go nowhere) and
        drop its resource subscriptions."""
        with self._lock:
            self._closed = True
            calls = list(self._running.values())
            for call in calls:
                if not call.cancelled:
                    call.cancelled = True
                    if call.counted:
                        call.counted = False
                        self._inflight -= 1
        for call in calls:
            if call.place is not None:
                call.place.cancel()
            call.scope.cancel()
        if self._resources is not None:
            self._resources.forget(self._notify)

    def _queue(self, message: Request) -> Place | None:
        """The call's place in line, if its tool keeps one (taken here, in arrival order)."""
        if message.method != "tools/call":
            return None
        params = message.params
        name = params.get("name") if isinstance(params, dict) else None
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None or tool.queue is None:
            return None
        try:
            return tool.queue()
        except Exception:  # a bug must not stop the reading thread: run unqueued
            return None

    @staticmethod
    def _blocks(message: Message) -> bool:
        return (
            isinstance(message, Request) and message.id is not None and message.method in _BLOCKING
        )

    def _answer_batch(self, messages: list[Message]) -> bytes | None:
        answers = [a for a in (self._answer(m) for m in messages) if a is not None]
        return jsonrpc.batch_response(answers) if answers else None

    def _spawn(
        self,
        rid: msgspec.Raw | None,
        compute: Callable[[], bytes | None],
        send: Send,
        place: Place | None = None,
    ) -> bool:
        """Run ``compute`` on a worker thread and send its answer (unless cancelled);
        False when the call was refused (and answered) instead."""
        key = None if rid is None else bytes(rid)
        call = _Call(place=place)
        with self._lock:
            refusal = None
            if self._closed:
                refusal = "the session has ended"
            elif key is not None and key in self._running:
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
                send(compute())  # a batch: answer it inline rather than drop it
            elif refusal.startswith("Invalid"):
                send(jsonrpc.error_response(rid, jsonrpc.INVALID_REQUEST, refusal))
            else:
                text = f"{refusal} (at most {self._max_inflight} at once); retry shortly"
                send(jsonrpc.result_response(rid, self._content(ToolResult(text, True))))
            return False

        def run() -> None:
            answer = None
            _current.scope = call.scope
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
                send(None if cancelled else answer)
                with self._lock:  # only now: the drain waits for the answer above
                    self._workers.discard(thread)

        thread = threading.Thread(target=run, name="phux-mcp-call", daemon=True)
        with self._lock:
            self._workers.add(thread)
        thread.start()
        return True

    # ------------------------------------------------------------ methods

    def _answer(self, message: Message, place: Place | None = None) -> bytes | None:
        """The response to one message, or None when it gets none."""
        try:
            if isinstance(message, Reply):
                return None
            if isinstance(message, Invalid):
                return jsonrpc.error_response(message.id or NULL_ID, message.code, message.message)
            if message.id is None:
                self._on_notification(message)
                return None
            rid = message.id
            try:
                return self._request(rid, message.method, message.params, place)
            except Exception as exc:  # a bug: answer it rather than die or print
                return jsonrpc.error_response(
                    rid, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}"
                )
        finally:
            if place is not None:
                place.leave()  # a no-op once the call ran

    def _on_notification(self, message: Request) -> None:
        if message.method == "notifications/cancelled" and isinstance(message.params, dict):
            target = message.params.get("requestId")
            if isinstance(target, str | int) and not isinstance(target, bool):
                key = jsonrpc.encode(target)
                with self._lock:
                    call = self._running.get(key)
                    if call is not None and not call.cancelled:
                        # Its answer is dropped, it stops counting against the limit,
                        # and its work is stopped (on_cancel).
                        call.cancelled = True
                        call.counted = False
                        self._inflight -= 1
                        if call.place is not None:
                            call.place.cancel()
                        scope = call.scope
                    else:
                        scope = None
                if scope is not None:
                    scope.cancel()  # outside the lock: its callbacks may take others
        # notifications/initialized and anything unknown: nothing to do.

    def _request(
        self, rid: msgspec.Raw, method: str, params: Any, place: Place | None = None
    ) -> bytes:
        if method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            self.version = negotiate(requested)
            self.initialized = True
            capabilities: dict[str, Any] = {"tools": {}}
            if self._resources is not None:
                capabilities["resources"] = {"subscribe": True, "listChanged": True}
            result: dict[str, Any] = {
                "protocolVersion": self.version,
                "capabilities": capabilities,
                "serverInfo": self._info,
            }
            if self._instructions:
                result["instructions"] = self._instructions
            return jsonrpc.result_response(rid, result)
        if method == "ping":
            return jsonrpc.result_response(rid, {})
        if method == "tools/list":
            return jsonrpc.result_response(rid, msgspec.Raw(self.catalog(self.version)))
        if method == "tools/call":
            return self._call(rid, params, place)
        if method.startswith("resources/") and self._resources is not None:
            return self._resource_request(rid, method, params, self._resources)
        return jsonrpc.error_response(rid, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _resource_request(
        self, rid: msgspec.Raw, method: str, params: Any, resources: Resources
    ) -> bytes:
        # List changes are followed from a session's first resources request on: a
        # host that only calls tools costs the server no watching connection.
        resources.watch_list(self._notify)
        if method == "resources/list":
            return jsonrpc.result_response(rid, {"resources": resources.listing()})
        if method == "resources/templates/list":
            return jsonrpc.result_response(rid, {"resourceTemplates": resources.templates()})
        if method not in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
            return jsonrpc.error_response(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str):
            return jsonrpc.error_response(
                rid, INVALID_PARAMS, f'Invalid params: {method} needs a string "uri"'
            )
        try:
            if method == "resources/read":
                return jsonrpc.result_response(rid, {"contents": resources.read(uri)})
            if method == "resources/subscribe":
                resources.subscribe(uri, self._notify)
            else:
                resources.unsubscribe(uri, self._notify)
        except ResourceNotFound as exc:
            return jsonrpc.error_response(
                rid, RESOURCE_NOT_FOUND, f"Resource not found: {exc}", {"uri": uri}
            )
        return jsonrpc.result_response(rid, {})

    def catalog(self, version: str) -> bytes:
        """The ``tools/list`` result at ``version``, as sent."""
        with self._lock:
            cached = self._catalogs.get(version)
        if cached is None:
            listing = {"tools": [tool.listing(version) for tool in self._tools.values()]}
            cached = jsonrpc.encode(listing)
            with self._lock:
                self._catalogs[version] = cached
        return cached

    def _content(self, outcome: ToolResult) -> dict[str, Any]:
        content: dict[str, Any] = {
            "content": [{"type": "text", "text": outcome.text}],
            "isError": outcome.is_error,
        }
        if (
            outcome.structured is not None
            and not outcome.is_error
            and _at_least(self.version, STRUCTURED_SINCE)
        ):
            content["structuredContent"] = msgspec.Raw(outcome.structured)
        return content

    def _call(self, rid: msgspec.Raw, params: Any, place: Place | None = None) -> bytes:
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
            outcome = place.call(arguments) if place is not None else tool.call(arguments)
        except Exception as exc:  # a tool bug still answers, as a tool error
            outcome = ToolResult(f"internal error in {name}: {type(exc).__name__}: {exc}", True)
        return jsonrpc.result_response(rid, self._content(outcome))


def _drop(method: str, uri: str | None) -> None:
    """A session nobody listens to: its notifications go nowhere."""


def notification(method: str, uri: str | None) -> bytes:
    """The JSON-RPC notification a :class:`Notify` call stands for."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if uri is not None:
        message["params"] = {"uri": uri}
    return jsonrpc.encode(message)


class McpServer:
    """The stdio transport: one :class:`Dispatcher`, lines in on stdin, lines out on
    stdout, until stdin reaches EOF."""

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
        resources: Resources | None = None,
    ) -> None:
        self._max_line_bytes = max_line_bytes
        self._stdin_fd = stdin_fd
        self._out = _Writer(stdout_fd)
        self._eof_grace = eof_grace
        self.dispatcher = Dispatcher(
            tools,
            name=name,
            version=version,
            instructions=instructions,
            max_inflight=max_inflight,
            resources=resources,
            notify=self._notify,
        )

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
        self.dispatcher.drain(self._eof_grace)
        self._out.close()
        self.dispatcher.close()

    def _handle_line(self, line: bytes | None) -> None:
        if line is None:
            self._send(
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
        self.dispatcher.feed(jsonrpc.parse_line(line), self._send)

    def _send(self, answer: bytes | None) -> None:
        if answer is not None:
            self._out.write(answer)

    def _notify(self, method: str, uri: str | None) -> None:
        self._out.write(notification(method, uri))


def serve(tools: Sequence[Tool], **kwargs: Any) -> None:
    """Run an :class:`McpServer` on stdin/stdout until EOF."""
    with contextlib.suppress(KeyboardInterrupt):
        McpServer(tools, **kwargs).serve()

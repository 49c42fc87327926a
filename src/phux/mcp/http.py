"""``phux mcp --http``: MCP's Streamable HTTP transport (revisions 2025-03-26 to 2025-11-25).

One endpoint, ``/mcp``. POST carries one JSON-RPC message (or a 2025-03-26 batch):
a request is answered with ``application/json``, notifications and replies with
202. ``initialize`` opens a session (``Mcp-Session-Id``), each a
:class:`~phux.mcp.server.Dispatcher` of its own; every later request names it (400
without one, 404 for one that ended); DELETE ends it. GET opens the session's
server-sent events stream, which carries the resource notifications: one stream a
session (a new GET takes over), notifications coalesced per URI while the peer
reads slowly, so a peer that never reads costs one pending set, and a write that
does not finish in :data:`SEND_TIMEOUT` ends that stream alone.

Guards, in order: the path; ``Origin`` (present and not allowed: 403, the DNS
rebinding protection the spec asks for) and, on a loopback bind, ``Host``;
``Authorization: Bearer TOKEN`` (401 with ``WWW-Authenticate``); the method;
``MCP-Protocol-Version`` (one we do not speak: 400); the body's size (413 past
:data:`MAX_BODY`, and that connection is closed). Every refusal is a JSON-RPC error
with no id, and none of them stops the server.

The HTTP/1.1 framing is h11 (sans-I/O, from the python-hyper project) on trio,
which phux's server already uses: this module is imported only by ``phux mcp
--http``, so the stdio adapter starts as fast as before. Tool calls still run on
the Dispatcher's worker threads; their answers come back to the trio loop
through its token.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from phux.mcp import jsonrpc
from phux.mcp.jsonrpc import Invalid, Request
from phux.mcp.server import PROTOCOL_VERSIONS, Dispatcher, Resources, Tool, notification

ENDPOINT = "/mcp"
MAX_BODY = 4 * 1024 * 1024
"""The largest POST body read (the stdio adapter's line limit is larger, but each
HTTP connection holds its body whole)."""
MAX_HEADERS = 64 * 1024
MAX_CONNECTIONS = 128
MAX_SESSIONS = 64
"""Past this, ``initialize`` ends the least recently used session (its client gets
404 and, as the spec says, initializes again)."""
SESSION_MAX_INFLIGHT = 16
READ_TIMEOUT = 30.0
"""Seconds a request's head and body may take to arrive."""
IDLE_TIMEOUT = 120.0
"""Seconds a kept-alive connection may wait for its next request."""
SEND_TIMEOUT = 30.0
"""Seconds one write may take before the connection is given up (a peer that reads nothing)."""
KEEPALIVE = 15.0
"""Seconds between SSE comments on an idle event stream (a dead peer is noticed)."""
_RECV = 64 * 1024

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_bind(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (HOST may be ``[IPv6]``) -> (host, port); default host 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: expected [HOST:]PORT with a port from 0 to 65535")
    return host, int(port)


@dataclass
class _Box:
    """One POST's answer, handed over from whichever thread computed it."""

    done: trio.Event = field(default_factory=trio.Event)
    value: bytes | None = None

    def set(self, value: bytes | None) -> None:
        if not self.done.is_set():
            self.value = value
            self.done.set()


class HttpSession:
    """One MCP session over HTTP: its Dispatcher and its pending notifications."""

    def __init__(self, sid: str, token: trio.lowlevel.TrioToken) -> None:
        self.sid = sid
        self._token = token
        self.dispatcher: Dispatcher | None = None
        self.pending: dict[tuple[str, str | None], None] = {}
        self.wake = trio.Event()
        self.closed = trio.Event()
        self.stream: object | None = None  # the GET stream now serving it (a token)
        self.used = time.monotonic()

    def notify(self, method: str, uri: str | None) -> None:
        """Thread-safe: hand the notification to the loop (coalesced per URI)."""
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._push, method, uri)

    def _push(self, method: str, uri: str | None) -> None:
        self.pending[(method, uri)] = None
        self.wake.set()

    def close(self) -> None:
        self.closed.set()
        self.wake.set()
        if self.dispatcher is not None:
            self.dispatcher.close()


class HttpTransport:
    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        token: str,
        name: str,
        version: str,
        instructions: str | None = None,
        resources: Resources | None = None,
        allowed_origins: Sequence[str] = (),
        loopback: bool = True,
    ) -> None:
        self._tools = list(tools)
        self._token = token.encode()
        self._name = name
        self._version = version
        self._instructions = instructions
        self._resources = resources
        self._allowed_origins = {o.rstrip("/").lower() for o in allowed_origins}
        self._loopback = loopback
        self._catalogs: dict[str, bytes] = {}
        self._sessions: dict[str, HttpSession] = {}
        self._connections = 0
        self.port = 0

    # ------------------------------------------------------------ serving

    async def serve(
        self, host: str, port: int, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(port, host=host)
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        try:
            await trio.serve_listeners(self._connection, listeners)
        finally:
            for session in list(self._sessions.values()):
                session.close()
            self._sessions.clear()

    async def _connection(self, stream: trio.SocketStream) -> None:
        if self._connections >= MAX_CONNECTIONS:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                with trio.move_on_after(1):
                    await stream.send_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n"
                        b"content-length: 0\r\n\r\n"
                    )
            await stream.aclose()
            return
        self._connections += 1
        try:
            await _Conn(self, stream).run()
        except Exception:  # the peer went away, or a bug: this connection alone ends
            pass
        finally:
            self._connections -= 1
            with contextlib.suppress(Exception):
                await stream.aclose()

    # ------------------------------------------------------------ sessions

    def new_session(self) -> HttpSession:
        while len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions.values(), key=lambda s: s.used)
            self.end_session(oldest.sid)
        sid = secrets.token_urlsafe(24)
        session = HttpSession(sid, trio.lowlevel.current_trio_token())
        session.dispatcher = Dispatcher(
            self._tools,
            name=self._name,
            version=self._version,
            instructions=self._instructions,
            max_inflight=SESSION_MAX_INFLIGHT,
            resources=self._resources,
            notify=session.notify,
            catalogs=self._catalogs,
        )
        self._sessions[sid] = session
        return session

    def session(self, sid: str) -> HttpSession | None:
        session = self._sessions.get(sid)
        if session is not None:
            session.used = time.monotonic()
        return session

    def end_session(self, sid: str) -> bool:
        session = self._sessions.pop(sid, None)
        if session is None:
            return False
        session.close()
        return True

    # ------------------------------------------------------------ guards

    def origin_allowed(self, origin: str) -> bool:
        """An ``--allow-origin`` one, or this adapter's own loopback address (a page it
        served, were it to serve one); ``null`` and every other site are refused."""
        origin = origin.rstrip("/").lower()
        if origin in self._allowed_origins:
            return True
        try:
            url = urlsplit(origin)
            port = url.port
        except ValueError:
            return False
        return (
            url.scheme == "http"
            and port == self.port
            and url.hostname is not None
            and is_loopback(url.hostname)
        )

    def host_allowed(self, host: str) -> bool:
        """On a loopback bind, a Host that names another machine is a rebinding attempt."""
        if not self._loopback:
            return True
        try:
            name = urlsplit("//" + host).hostname
        except ValueError:
            return False
        return name is not None and is_loopback(name)

    def token_ok(self, authorization: str) -> bool:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(value.strip().encode(), self._token)


def _error_body(code: int, message: str) -> bytes:
    return jsonrpc.error_response(jsonrpc.NULL_ID, code, message)


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class _Conn:
    """One HTTP/1.1 connection: requests one after another (keep-alive)."""

    def __init__(self, transport: HttpTransport, stream: trio.SocketStream) -> None:
        self.t = transport
        self.stream = stream
        self.h = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADERS)

    async def _event(self, timeout: float) -> Any:
        with trio.fail_after(timeout):
            while True:
                event = self.h.next_event()
                if event is not h11.NEED_DATA:
                    return event
                data = await self.stream.receive_some(_RECV)
                self.h.receive_data(data)

    async def _send(self, *events: Any) -> None:
        data = b"".join(self.h.send(e) or b"" for e in events)
        with trio.fail_after(SEND_TIMEOUT):
            await self.stream.send_all(data)

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str = "application/json",
        headers: Sequence[tuple[str, str]] = (),
        close: bool = False,
    ) -> None:
        hdrs = [("content-length", str(len(body)))]
        if body:
            hdrs.append(("content-type", content_type))
        if close:
            hdrs.append(("connection", "close"))
        hdrs += list(headers)
        await self._send(
            h11.Response(status_code=status, headers=hdrs), h11.Data(data=body), h11.EndOfMessage()
        )

    async def run(self) -> None:
        first = True
        while True:
            try:
                event = await self._event(READ_TIMEOUT if first else IDLE_TIMEOUT)
            except (trio.TooSlowError, h11.RemoteProtocolError) as exc:
                if isinstance(exc, h11.RemoteProtocolError) and self.h.our_state in (
                    h11.IDLE,
                    h11.SEND_RESPONSE,
                ):
                    body = _error_body(jsonrpc.INVALID_REQUEST, f"Bad HTTP request: {exc}")
                    with contextlib.suppress(h11.LocalProtocolError):
                        await self.respond(exc.error_status_hint, body, close=True)
                return
            first = False
            if isinstance(event, h11.ConnectionClosed) or not isinstance(event, h11.Request):
                return
            keep = await self._request(event)
            if not keep or self.h.our_state is h11.MUST_CLOSE:
                return
            try:
                self.h.start_next_cycle()
            except h11.LocalProtocolError:
                return

    async def _request(self, request: h11.Request) -> bool:
        """Serve one request; False when the connection must close after it."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        method = request.method.decode("ascii", "replace")
        try:
            self._check(request.target.decode("latin-1"), method, headers)
            body = await self._body(headers)
            if method == "POST":
                return await self._post(body, headers)
            if method == "GET":
                await self._get(headers)
                return False
            return await self._delete(headers)
        except _Refused as refusal:
            close = refusal.status == 413 or self.h.their_state is not h11.DONE
            body = _error_body(jsonrpc.INVALID_REQUEST, refusal.message)
            await self.respond(refusal.status, body, headers=refusal.headers, close=close)
            return not close

    def _check(self, target: str, method: str, headers: dict[str, str]) -> None:
        path = target.split("?", 1)[0]
        if path != ENDPOINT:
            raise _Refused(404, f"Not found: the MCP endpoint is {ENDPOINT}")
        origin = headers.get("origin")
        if origin is not None and not self.t.origin_allowed(origin):
            raise _Refused(403, f"Forbidden: origin {origin} is not allowed")
        if not self.t.host_allowed(headers.get("host", "")):
            raise _Refused(403, "Forbidden: the Host header names another machine")
        if not self.t.token_ok(headers.get("authorization", "")):
            raise _Refused(
                401,
                "Unauthorized: send Authorization: Bearer TOKEN (phux mcp --print-token)",
                [("www-authenticate", 'Bearer realm="phux"')],
            )
        if method not in ("POST", "GET", "DELETE"):
            raise _Refused(405, f"Method not allowed: {method}", [("allow", "GET, POST, DELETE")])
        version = headers.get(VERSION_HEADER)
        if version is not None and version not in PROTOCOL_VERSIONS:
            raise _Refused(
                400,
                f"Bad Request: unsupported MCP-Protocol-Version {version} "
                f"(supported: {', '.join(PROTOCOL_VERSIONS)})",
            )

    def _session(self, headers: dict[str, str]) -> HttpSession:
        sid = headers.get(SESSION_HEADER)
        if sid is None:
            raise _Refused(400, "Bad Request: no Mcp-Session-Id (send initialize first)")
        session = self.t.session(sid)
        if session is None:
            raise _Refused(404, "Not found: no such session (it ended; initialize again)")
        return session

    async def _body(self, headers: dict[str, str]) -> bytes:
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY:
            raise _Refused(413, f"Payload too large: a message is at most {MAX_BODY} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                event = await self._event(READ_TIMEOUT)
            except trio.TooSlowError:
                raise _Refused(408, "Request timeout: the body did not arrive") from None
            except h11.RemoteProtocolError as exc:
                raise _Refused(400, f"Bad HTTP request: {exc}") from None
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY:
                    raise _Refused(413, f"Payload too large: a message is at most {MAX_BODY} bytes")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                raise _Refused(400, "Bad Request: the body ended early")

    async def _post(self, body: bytes, headers: dict[str, str]) -> bool:
        accept = headers.get("accept", "*/*")
        if "application/json" not in accept and "*/*" not in accept:
            raise _Refused(406, "Not acceptable: answers are application/json")
        parsed = jsonrpc.parse_line(body.strip())
        messages = parsed.messages
        initialize = (
            not parsed.batch
            and isinstance(messages[0], Request)
            and messages[0].method == "initialize"
            and messages[0].id is not None
        )
        if initialize:
            session = self.t.new_session()
        elif not parsed.batch and isinstance(messages[0], Invalid):
            # Unparseable or not JSON-RPC: answered whatever session it names.
            bad = messages[0]
            answer = jsonrpc.error_response(bad.id or jsonrpc.NULL_ID, bad.code, bad.message)
            await self.respond(400, answer)
            return True
        else:
            session = self._session(headers)
        dispatcher = session.dispatcher
        assert dispatcher is not None
        wants_answer = any(
            isinstance(m, Invalid) or (isinstance(m, Request) and m.id is not None)
            for m in messages
        )
        if not wants_answer:
            dispatcher.feed(parsed, _ignore)
            await self.respond(202)
            return True
        box = _Box()
        token = trio.lowlevel.current_trio_token()

        def send(answer: bytes | None) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(box.set, answer)

        dispatcher.feed(parsed, send)
        await box.done.wait()
        extra = [(SESSION_HEADER, session.sid)] if initialize else []
        if box.value is None:  # cancelled, or the session ended meanwhile
            await self.respond(202, headers=extra)
            return True
        await self.respond(200, box.value, headers=extra)
        return True

    async def _get(self, headers: dict[str, str]) -> None:
        if "text/event-stream" not in headers.get("accept", ""):
            raise _Refused(406, "Not acceptable: the GET stream is text/event-stream")
        session = self._session(headers)
        me = object()
        session.stream = me  # a new stream takes over from an older one
        session.wake.set()
        await self._send(
            h11.Response(
                status_code=200,
                headers=[
                    ("content-type", "text/event-stream"),
                    ("cache-control", "no-store"),
                    ("connection", "close"),
                ],
            )
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_eof, nursery.cancel_scope)
            with contextlib.suppress(
                trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError
            ):
                await self._events(session, me)
            nursery.cancel_scope.cancel()
        with contextlib.suppress(Exception):
            await self._send(h11.EndOfMessage())

    async def _watch_eof(self, scope: trio.CancelScope) -> None:
        """The peer sends nothing on a stream it reads: any byte, or EOF, ends it."""
        with contextlib.suppress(Exception):
            await self.stream.receive_some(_RECV)
        scope.cancel()

    async def _events(self, session: HttpSession, me: object) -> None:
        session.wake.set()  # deliver what is pending already
        while session.stream is me and not session.closed.is_set():
            with trio.move_on_after(KEEPALIVE):
                await session.wake.wait()
            if session.stream is not me or session.closed.is_set():
                return
            if not session.wake.is_set():
                await self._send(h11.Data(data=b": keepalive\n\n"))
                continue
            session.wake = trio.Event()
            pending, session.pending = session.pending, {}
            data = b"".join(
                b"event: message\ndata: " + notification(method, uri) + b"\n\n"
                for method, uri in pending
            )
            if data:
                try:
                    await self._send(h11.Data(data=data))
                except trio.TooSlowError:
                    # A peer that does not read: keep what it did not get, end this stream.
                    session.pending = {**pending, **session.pending}
                    raise trio.BrokenResourceError("the peer does not read") from None

    async def _delete(self, headers: dict[str, str]) -> bool:
        session = self._session(headers)
        self.t.end_session(session.sid)
        await self.respond(200)
        return True


def _ignore(answer: bytes | None) -> None:
    """Notifications and replies get no answer."""

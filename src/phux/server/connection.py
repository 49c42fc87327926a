"""One client connection: handshake, request dispatch, and the sender task.

The receive loop decodes frames and handles each request synchronously
against :class:`ServerState` (so every request is one atomic step); replies
and pushed frames go through the connection's :class:`Outbox`, which only the
sender task drains. Nothing a client does (or fails to do) blocks the PTY
readers or any other connection.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import select
import socket
import struct
import weakref
from collections.abc import Callable
from typing import Any

import trio

from phux.server.audit import AuditLog, read_entries
from phux.server.log import log
from phux.server.metadata import MetaSubscription, RequestError, check_key, entries
from phux.server.state import ServerState, check_size, host_signal
from phux.server.subscriber import Outbox, Source, Subscription
from phux.server.terminal import Terminal
from phux.server.waiting_room import Peer
from phux.wire import (
    MAX_FRAME,
    PROTOCOL_VERSION,
    FrameReader,
    ServerHandshake,
    WireError,
    encode_frame,
)
from phux.wire.errors import DetachReason, ErrorCode
from phux.wire.frames import (
    CLIENT_FRAMES,
    AuditList,
    Detach,
    Detached,
    Error,
    Frame,
    Hello,
    HelloOk,
    Input,
    Kill,
    ListAudit,
    ListTerminals,
    MetadataChanged,
    MetadataKeys,
    MetadataValue,
    MetaDelete,
    MetaGet,
    MetaList,
    MetaSet,
    MetaSubscribe,
    MetaUnsubscribe,
    Ok,
    Ping,
    Pong,
    Resize,
    Role,
    SendSignal,
    Shutdown,
    Spawn,
    Subscribe,
    SubscribeEvents,
    Unsubscribe,
)
from phux.wire.framing import CLIENT_TYPES, peek_request_id
from phux.wire.handshake import MINOR_AUDIT, MINOR_TERMINAL_STATE

RECEIVE_BYTES = 256 * 1024
SEND_BATCH_BYTES = 256 * 1024
FLUSH_TIMEOUT_S = 2.0
"""How long a closing connection may take to receive its last frames."""
SLOW_CONSUMER_LINGER_S = 30.0
"""How long a client detached for not reading has to come back and read its DETACHED
(its queue is dropped first: what waits is that frame, a socket and an fd)."""

_CLIENT_TYPES = frozenset(CLIENT_FRAMES)

REPLIES_PAUSE = 1024 * 1024
"""Queued replies and events past which a connection's next request waits for them to
be sent (at most half its reply backlog, ``max_control_backlog``)."""
PEER_CHECK_S = 0.05
"""While a connection's input backlog is full its frames are not read, so its EOF
is not seen either: how often to look whether the peer hung up meanwhile."""


def _peer_hung_up(sock: trio.socket.SocketType) -> bool:
    """Whether the peer closed its end, even with unread data still queued (Linux)."""
    rdhup = getattr(select, "POLLRDHUP", 0)
    poller = select.poll()
    poller.register(sock.fileno(), rdhup | select.POLLHUP | select.POLLERR)
    try:
        events = poller.poll(0)
    except OSError:
        return True
    return any(mask & (rdhup | select.POLLHUP | select.POLLERR) for _, mask in events)


_AUDIT_READERS: list[trio.CapacityLimiter] = []


def _audit_readers() -> trio.CapacityLimiter:
    """Two audit reads at a time for the whole server: each may hold a reply of
    several MiB, and a client may send many LIST_AUDITs at once."""
    if not _AUDIT_READERS:
        _AUDIT_READERS.append(trio.CapacityLimiter(2))
    return _AUDIT_READERS[0]


def peer_credentials(sock: trio.socket.SocketType) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


_SIZED = itertools.count(1)
"""Orders the primaries' sizes: the most recent one set wins (Subscription.sized_at)."""


def give_size_back(leaving: Subscription) -> None:
    """A primary left (unsubscribed, or its connection closed) while the terminal has its
    size: the terminal takes the size of the most recent primary still subscribed, so the
    window that remains is filled again (tmux's rule: the clients attached decide)."""
    term = leaving.terminal
    if leaving.size is None or not term.alive or term.size != leaving.size:
        return  # not a primary's size, or someone resized it since: theirs stands
    sized = [s for s in term.subscribers if s.role is Role.PRIMARY and s.size is not None]
    if sized:
        cols, rows = max(sized, key=lambda s: s.sized_at).size or leaving.size
        term.resize(cols, rows)


def _closed_frame(term: Source) -> bytes:
    return term.encode_closed()


def _idle_to_close(
    connections: list[ClientConnection], silent_since: float
) -> ClientConnection | None:
    """The connection that has been silent longest, if it is silent since ``silent_since``
    and holds nothing: no subscription of any kind and no input, reply or event waiting
    (a person attached, a watcher or a client mid-request is never taken)."""
    idle = [
        c
        for c in connections
        if c.heard_at <= silent_since
        and not c.subs
        and not c.meta_subs
        and not c.wants_events
        and not c.pending_input
        and not c.outbox.control_bytes
    ]
    return min(idle, key=lambda c: c.heard_at, default=None)


class ClientConnection:
    def __init__(
        self,
        state: ServerState[ClientConnection],
        stream: trio.SocketStream,
        server_id: str,
        peer: Peer,
        handshake_over: Callable[[], None] | None = None,
    ) -> None:
        self.state = state
        self._handshake_over = handshake_over
        """Told once, at HELLO or at the end if HELLO never came: the next connection of
        the same process may be served (phux.server.waiting_room)."""
        self.config = state.config
        self.stream = stream
        self.server_id = server_id
        self.outbox = Outbox(
            self.config.subscriber_queue_bytes,
            _closed_frame,
            control_limit=self.config.max_control_backlog,
            total_limit=self.config.max_connection_queue,
            on_overflow=self._overflowed,
            budget=state.queue_budget,
        )
        self.handshake = ServerHandshake()
        self.subs: dict[int, Subscription] = {}
        self.meta_subs: dict[int, MetaSubscription] = {}
        self.wants_events = False
        self.pending_input = 0
        self.input_terminals: weakref.WeakSet[Terminal] = weakref.WeakSet()
        """Terminals this connection sent INPUT to: its queued input is dropped on close
        (weak: a long-lived connection must not keep forgotten terminals alive)."""
        self._input_room = trio.Event()
        self._awaited: set[Terminal] = set()
        self._reading = True
        self._cancel: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._reader: FrameReader | None = None
        self._partial = 0
        """What this connection's incomplete frame counts in ``state.partial_bytes``."""
        self._lingering = FLUSH_TIMEOUT_S
        self.peer_pid, self.peer_uid = peer
        """The peer process's pid and uid, read once on accepting (SO_PEERCRED)."""
        self.peer = f"pid {self.peer_pid} uid {self.peer_uid}"
        self.connected_at = 0.0
        self.heard_at = 0.0
        """When its last frame was read (trio clock): what makes a connection idle."""
        self.client_name = ""
        self._handlers: dict[type[Frame], Callable[[Any], None]] = {
            Hello: self._hello,
            Ping: self._ping,
            Detach: self._detach,
            Input: self._input,
            Spawn: self._spawn,
            Resize: self._resize,
            SendSignal: self._send_signal,
            Kill: self._kill,
            ListTerminals: self._list,
            ListAudit: self._list_audit,
            Subscribe: self._subscribe,
            SubscribeEvents: self._subscribe_events,
            Unsubscribe: self._unsubscribe,
            MetaGet: self._meta_get,
            MetaSet: self._meta_set,
            MetaDelete: self._meta_delete,
            MetaList: self._meta_list,
            MetaSubscribe: self._meta_subscribe,
            MetaUnsubscribe: self._meta_unsubscribe,
            Shutdown: self._shutdown,
        }
        assert set(self._handlers) == _CLIENT_TYPES

    # ------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        try:
            await self._serve()
        finally:
            self._turn_over()

    def _turn_over(self) -> None:
        done, self._handshake_over = self._handshake_over, None
        if done is not None:
            done()

    async def _serve(self) -> None:
        if not await self._check_peer():
            return
        self._make_room_to_handshake()
        self.connected_at = self.heard_at = trio.current_time()
        self.state.admit(self)
        try:
            async with trio.open_nursery() as nursery:
                self._cancel = nursery.cancel_scope
                self._nursery = nursery
                nursery.start_soon(self._send_loop)
                nursery.start_soon(self._hello_deadline)
                await self._receive_loop()
                if self.outbox.closing:  # let the last frames out, within a bound
                    deadline = trio.current_time() + self._lingering
                    nursery.cancel_scope.deadline = min(nursery.cancel_scope.deadline, deadline)
                else:  # the peer went away
                    nursery.cancel_scope.cancel()
            if self.outbox.closing:
                await self._linger_close()
        finally:
            self._cleanup()
            self.stream.socket.close()

    def _refusal(self) -> str | None:
        """Why this connection's HELLO is refused: its process already has its share of
        connections past HELLO (by SO_PEERCRED's pid), or the server is full and none
        of the others is idle enough to make room. Asked at HELLO, not on accepting: a
        connection refused at once is one a flooder opens again at once, in a loop."""
        mine = self.state.per_process[self.peer_pid]
        per_process = self.config.max_connections_per_process
        if mine >= per_process:
            return (
                f"too many connections from process {self.peer_pid}: {mine} open, the "
                f"server's limit per process is {per_process}"
            )
        return self._connections_full()

    def _connections_full(self) -> str | None:
        """Why one more connection past HELLO is refused, if the others are at the limit
        and none of them is idle enough to make room (see _idle_to_close); if one is, it
        is closed (at HELLO: a connection that never says HELLO costs nobody theirs)."""
        limit = self.config.max_connections
        past_hello = self.state.past_hello  # (without this one: it is asked before)
        if len(past_hello) < limit:
            return None
        done = [c for c in past_hello if not c.outbox.closing]
        if len(done) < limit:
            return None
        idle = _idle_to_close(done, trio.current_time() - self.config.idle_close_s)
        if idle is None:
            return f"too many connections: the server's limit is {limit}"
        log.info("closing %s: idle, holding nothing, and the server is full", idle.peer)
        idle.close_with(DetachReason.IDLE, "idle, and the server needed room for a new client")
        return None

    def _make_room_to_handshake(self) -> None:
        """Past ``max_handshaking`` connections without HELLO, close the oldest of them:
        idle connections then churn instead of keeping a new client out."""
        handshaking = self.state.handshaking
        if len(handshaking) < self.config.max_handshaking:
            return
        waiting = [c for c in handshaking if not c.outbox.closing]  # (closing: on their way out)
        if len(waiting) < self.config.max_handshaking:
            return
        oldest = waiting[0]
        log.info("closing %s: no HELLO yet, and a newer connection needs its room", oldest.peer)
        oldest.outbox.push(
            Error(
                code=ErrorCode.HANDSHAKE_REQUIRED,
                message="no HELLO yet, and newer connections need the room",
            )
        )
        oldest._close_soon()

    async def _linger_close(self) -> None:
        """Half-close, then discard what the peer still sends until it closes (bounded).

        Closing a Unix socket with unread data makes the peer's next read fail with
        ECONNRESET instead of a clean EOF after our last frame.
        """
        self._cleanup()
        with trio.move_on_after(FLUSH_TIMEOUT_S):
            try:
                self.stream.socket.shutdown(socket.SHUT_WR)
                while await self.stream.receive_some(RECEIVE_BYTES):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def _check_peer(self) -> bool:
        uid = self.peer_uid
        if uid == os.geteuid():
            return True
        log.warning("refused connection from %s: not the server's uid %d", self.peer, os.geteuid())
        err = Error(
            code=ErrorCode.PERMISSION_DENIED,
            message=f"uid {uid} may not use this server (it belongs to uid {os.geteuid()})",
        )
        await self._refuse_early(err)
        return False

    async def _refuse_early(self, err: Error) -> None:
        """Send one ERROR and close, before the connection is served at all."""
        with trio.move_on_after(FLUSH_TIMEOUT_S):
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await self.stream.send_all(encode_frame(err))
        self.outbox.closing = True
        await self._linger_close()
        self.stream.socket.close()

    async def _hello_deadline(self) -> None:
        timeout = self.config.hello_timeout_s
        await trio.sleep(timeout)
        if not self.handshake.done and not self.outbox.closing:
            log.info("closing %s: no HELLO within %gs", self.peer, timeout)
            self.outbox.push(
                Error(code=ErrorCode.HANDSHAKE_REQUIRED, message=f"no HELLO within {timeout:g}s")
            )
            self._close_soon()

    def _cleanup(self) -> None:
        state = self.state
        self._release_partial()
        for term in list(self.input_terminals):
            term.drop_input(self)
        self.input_terminals.clear()
        for sub in self.subs.values():
            if sub.terminal.remove_subscriber(sub):
                give_size_back(sub)
        self.subs.clear()
        for msub in self.meta_subs.values():
            state.meta.subscriptions.discard(msub)
        self.meta_subs.clear()
        self.outbox.clear()
        self.outbox.closing = True
        state.forget(self, self.peer_pid)

    def close_with(self, reason: DetachReason, message: str = "") -> None:
        """Queue DETACHED, then close once it is sent; stop reading requests."""
        self.outbox.push(Detached(reason=reason, message=message))
        linger = SLOW_CONSUMER_LINGER_S if reason is DetachReason.SLOW_CONSUMER else None
        self._close_soon(linger)

    def _close_soon(self, linger: float | None = None) -> None:
        """Close once what is queued is sent, or after ``linger`` (FLUSH_TIMEOUT_S) if the
        peer does not read it (the receive loop may be waiting for bytes that never come)."""
        self.outbox.push_close()
        self._reading = False
        self._lingering = linger or FLUSH_TIMEOUT_S
        self._input_room.set()
        if self._cancel is not None:
            deadline = trio.current_time() + self._lingering
            self._cancel.deadline = min(self._cancel.deadline, deadline)

    def abort(self) -> None:
        if self._cancel is not None:
            self._cancel.cancel()

    async def _send_loop(self) -> None:
        try:
            while True:
                batch, close = await self.outbox.next_batch(SEND_BATCH_BYTES)
                if batch:
                    await self.stream.send_all(batch[0] if len(batch) == 1 else b"".join(batch))
                if close:
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        self.abort()

    async def _receive_loop(self) -> None:
        # Until HELLO only small frames are expected: a client cannot make the server
        # hold a 16 MiB partial frame before it has said who it is.
        reader = FrameReader(
            self.config.max_hello_frame,
            peer_types=CLIENT_TYPES,
            max_items=self.config.max_frame_items,
        )
        self._reader = reader
        while self._reading:
            while self._input_backlog_full() and self._reading:
                self._input_room = trio.Event()
                with trio.move_on_after(PEER_CHECK_S):
                    await self._input_room.wait()
                if _peer_hung_up(self.stream.socket):
                    return  # its queued input is dropped: nobody waits for it any more
            try:
                data = await self.stream.receive_some(RECEIVE_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not data:
                return
            reader.feed(data)
            while self._reading:
                try:
                    frame = reader.next_frame()
                except WireError as exc:
                    self._release_partial()
                    if exc.recoverable:
                        refusal = self.handshake.check_bad_frame(exc)
                        if refusal is not None:
                            self._refuse(refusal)
                            return
                        self.outbox.push(Error(code=exc.code, message=str(exc)))
                        continue
                    log.info("protocol error from %s: %s", self.peer, exc)
                    self.outbox.push(Error(code=exc.code, message=str(exc)))
                    self.close_with(DetachReason.PROTOCOL_ERROR, str(exc))
                    return
                if frame is None:
                    self._hold_partial(reader)
                    break
                self._release_partial()
                self.heard_at = trio.current_time()
                self._handle(frame)
                if self.outbox.control_bytes > self._replies_pause:
                    # Its replies wait to be sent: its next request is read once they
                    # went, so a client pipelining thousands is answered at the pace it
                    # reads (never detached as a slow consumer for it).
                    if not await self._replies_sent():
                        return
                else:
                    # The other connections get a turn between one client's requests.
                    await trio.lowlevel.checkpoint()

    @property
    def _replies_pause(self) -> int:
        """Queued replies and events past which this connection's requests wait."""
        return min(REPLIES_PAUSE, self.config.max_control_backlog // 2)

    async def _replies_sent(self) -> bool:
        """Wait until this connection's replies are sent down to half the pause; False
        when the peer hung up meanwhile (its EOF is not read while waiting)."""
        while self._reading and self.outbox.control_bytes > self._replies_pause // 2:
            with trio.move_on_after(PEER_CHECK_S):
                await self.outbox.replies_below(self._replies_pause // 2)
            if _peer_hung_up(self.stream.socket):
                return False
        return True

    def _hold_partial(self, reader: FrameReader) -> None:
        """Count the incomplete frame at the front of ``reader`` in the server's bound on
        them, once; refuse it if it is large and would pass the bound.

        The refused connection is closed after the ERROR: the frame may be a piece
        of an input unit, and the rest of a unit must not be typed with a hole in it.
        """
        if self._partial or not self._reading:
            return  # counted already: it is the same frame until one is taken
        head = reader.incomplete()
        if head is None:
            return
        frame_type, size, body = head
        config, state = self.config, self.state
        limit = config.max_partial_frames
        if size <= config.max_hello_frame or state.partial_bytes + size <= limit:
            self._partial = size
            state.partial_bytes += size
            return
        if len(body) < 16 and reader.buffered < size:
            return  # the request id is in the next few bytes: answer with it
        held = state.partial_bytes
        log.warning(
            "refused a %d-byte frame from %s: incomplete frames hold %d bytes, at most %d",
            size,
            self.peer,
            held,
            limit,
        )
        message = (
            f"frame of {size} bytes refused: incomplete frames from all clients may hold "
            f"at most {limit} bytes and {held} are held; try again later"
        )
        request_id = peek_request_id(frame_type, body)
        self.reply_error(request_id, ErrorCode.RESOURCE_EXHAUSTED, message)
        self._close_soon()

    def _release_partial(self) -> None:
        self.state.partial_bytes -= self._partial
        self._partial = 0

    # ------------------------------------------------------------ dispatch

    def _handle(self, frame: Frame) -> None:
        refusal = self.handshake.check(frame)
        if refusal is not None:
            self._refuse(refusal)
            return
        # The reader lets only client-originated types through, and each has a handler.
        handler = self._handlers[type(frame)]
        request_id = getattr(frame, "request_id", None)
        if request_id == 0:
            # 0 is BOOTSTRAP_BEGIN's "nobody asked" (spec/proto.md §5).
            self.reply_error(0, ErrorCode.INVALID_COMMAND, "request id 0 is reserved")
            return
        try:
            handler(frame)
        except RequestError as exc:
            self.reply_error(request_id, exc.code, exc.message)
        except Exception as exc:
            log.exception("internal error handling %s from %s", type(frame).__name__, self.peer)
            self.reply_error(request_id, ErrorCode.INTERNAL_ERROR, f"internal error: {exc}")

    def _refuse(self, refusal: Error) -> None:
        """Answer a handshake violation; a fatal one also closes the connection."""
        self.outbox.push(refusal)
        if self.handshake.fatal:
            self.outbox.push_close()
            self._reading = False

    @property
    def minor(self) -> int:
        """The protocol minor the client spoke in HELLO: nothing newer is sent to it."""
        return self.handshake.minor

    def reply_error(self, request_id: int | None, code: ErrorCode, message: str) -> None:
        self.outbox.push(Error(code=code, message=message, request_id=request_id))

    def input_done(self, request_id: int, size: int, exited: str | None = None) -> None:
        """An INPUT was written (``exited`` None) or dropped because the terminal ended."""
        self.pending_input -= size
        self._input_room.set()
        if exited is None:
            self.outbox.push(Ok(request_id=request_id))
        else:
            self.reply_error(request_id, ErrorCode.TERMINAL_EXITED, exited)

    def _input_backlog_full(self) -> bool:
        limit = self.config.max_input_backlog
        if self._awaited:
            # A terminal waits for this connection's next piece of a unit: read on
            # (to twice the limit), or a unit could wait on input stuck behind another.
            limit *= 2
        return self.pending_input > limit

    def awaiting_unit(self, term: Terminal, waiting: bool) -> None:
        """``term`` is (or no longer is) waiting for this connection's next piece."""
        if waiting:
            self._awaited.add(term)
            self._input_room.set()
        else:
            self._awaited.discard(term)

    def input_cancelled(self, request_id: int, size: int, message: str) -> None:
        """An INPUT was discarded unwritten (or part-written): an urgent INPUT came first."""
        self.pending_input -= size
        self._input_room.set()
        self.reply_error(request_id, ErrorCode.INPUT_CANCELLED, message)

    def _overflowed(self) -> None:
        why = self.outbox.overflow_reason
        log.warning("detaching %s: it does not read: %s", self.peer, why)
        self.outbox.clear()
        self.close_with(DetachReason.SLOW_CONSUMER, f"the client does not read: {why}")

    # ------------------------------------------------------------ handlers

    def _hello(self, frame: Hello) -> None:
        refusal = self._refusal()
        self.state.said_hello(self, self.peer_pid, admitted=refusal is None)
        self._turn_over()
        if refusal is not None:
            log.warning("refused connection from %s: %s", self.peer, refusal)
            self.outbox.push(Error(code=ErrorCode.RESOURCE_EXHAUSTED, message=refusal))
            self._close_soon()
            return
        self.client_name = frame.client_name
        if self._reader is not None:
            self._reader.max_frame = MAX_FRAME
        major, minor, patch = PROTOCOL_VERSION
        self.outbox.push(
            HelloOk(
                server_name="phux",
                major=major,
                minor=minor,
                patch=patch,
                server_id=self.server_id,
                pid=os.getpid(),
                max_frame=MAX_FRAME,
                max_metadata_value=self.config.max_metadata_value,
                max_subscriptions=self.config.max_subscriptions,
                journal_bytes=self.config.journal_bytes,
            )
        )

    def _ping(self, frame: Ping) -> None:
        self.outbox.push(Pong(token=frame.token))

    def _detach(self, frame: Detach) -> None:
        self.close_with(DetachReason.REQUESTED)

    def _shutdown(self, frame: Shutdown) -> None:
        log.info("shutdown requested by %s", self.peer)
        self.outbox.push(Ok(request_id=frame.request_id))
        self.state.shutdown_requested.set()

    def _spawn(self, frame: Spawn) -> None:
        term = self.state.spawn(frame)
        self.outbox.push(self.state.spawned_frame(term, frame.request_id))

    def _input(self, frame: Input) -> None:
        term = self.state.get_alive(frame.terminal)
        try:
            self.state.check_input_room(term, len(frame.data))
        except RequestError:
            if frame.more:
                # What was typed stays a prefix of the unit, never a unit with a hole.
                term.cancel_rest_of_unit(self)
            raise
        self.state.audit_input(self, term, frame.data)
        self.pending_input += len(frame.data)
        self.input_terminals.add(term)
        term.queue_input(self, frame.request_id, frame.data, more=frame.more, urgent=frame.urgent)

    def _resize(self, frame: Resize) -> None:
        check_size(frame.cols, frame.rows)  # a request's own fields first (proto.md §2.1)
        term = self.state.get_alive(frame.terminal)
        term.resize(frame.cols, frame.rows)
        mine = self.subs.get(term.id)
        if mine is not None and mine.role is Role.PRIMARY:
            # The primary's window changed: the size to give back when a later one leaves.
            mine.size, mine.sized_at = (frame.cols, frame.rows), next(_SIZED)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _send_signal(self, frame: SendSignal) -> None:
        signum = host_signal(frame.signal)
        term = self.state.get_alive(frame.terminal)
        term.send_signal(signum)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _kill(self, frame: Kill) -> None:
        self.state.kill(frame.terminals)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _list(self, frame: ListTerminals) -> None:
        self.outbox.push(self.state.terminal_list(frame.request_id, frame.filter))

    def _list_audit(self, frame: ListAudit) -> None:
        audit = self.state.audit
        if audit is None:
            self.outbox.push(AuditList(request_id=frame.request_id))
            return
        assert self._nursery is not None  # requests are handled inside run()
        self._nursery.start_soon(self._answer_audit, frame, audit)

    async def _answer_audit(self, frame: ListAudit, audit: AuditLog) -> None:
        """Read the files in a thread: up to a few MiB of JSON lines is no work for the loop.
        The reply may overtake later requests' (spec/proto.md §5 allows it)."""
        try:
            entries, truncated = await trio.to_thread.run_sync(
                functools.partial(
                    read_entries,
                    audit.path,
                    audit.keep,
                    server_id=self.state.server_id,
                    terminal=frame.terminal,
                    since_ms=frame.since_ms,
                    limit=frame.limit,
                ),
                abandon_on_cancel=True,
                limiter=_audit_readers(),
            )
        except Exception as exc:
            log.exception("reading the input audit for %s", self.peer)
            self.reply_error(frame.request_id, ErrorCode.INTERNAL_ERROR, f"internal error: {exc}")
            return
        self.outbox.push(
            AuditList(
                request_id=frame.request_id,
                entries=entries,
                audit_file=os.fspath(audit.path),
                truncated=truncated,
            )
        )

    def _subscribe(self, frame: Subscribe) -> None:
        # Its own fields, the terminal, the connection's state, then limits (proto.md §2.1).
        try:
            role = Role(frame.role)
        except ValueError:
            raise RequestError(ErrorCode.INVALID_COMMAND, f"unknown role {frame.role}") from None
        if (frame.cols is None) != (frame.rows is None):
            raise RequestError(ErrorCode.INVALID_COMMAND, "cols and rows go together")
        size: tuple[int, int] | None = None
        if role is Role.PRIMARY and frame.cols is not None and frame.rows is not None:
            check_size(frame.cols, frame.rows)
            size = (frame.cols, frame.rows)
        term = self.state.get(frame.terminal)
        if term.id in self.subs:
            raise RequestError(
                ErrorCode.INVALID_COMMAND, f"already subscribed to terminal {term.id}"
            )
        if len(self.subs) >= self.config.max_subscriptions:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"at most {self.config.max_subscriptions} terminal subscriptions per connection",
            )
        if size is not None and term.alive:
            term.resize(*size)
        wants_state = self.minor >= MINOR_TERMINAL_STATE
        if wants_state:
            term.baseline_foreground()
        sub = Subscription(
            self.outbox,
            term,
            role,
            wants_state=wants_state,
            # A client of an older minor cannot have meant the field (nor place the frame).
            wants_input=frame.input and self.minor >= MINOR_AUDIT,
        )
        if size is not None:
            sub.size, sub.sized_at = size, next(_SIZED)
        term.add_subscriber(sub)
        self.subs[term.id] = sub
        self.outbox.push_bootstrap(sub, frame.request_id)

    def _unsubscribe(self, frame: Unsubscribe) -> None:
        sub = self.subs.pop(frame.terminal, None)
        if sub is None:
            raise RequestError(
                ErrorCode.NOT_SUBSCRIBED, f"not subscribed to terminal {frame.terminal}"
            )
        if sub.terminal.remove_subscriber(sub):
            give_size_back(sub)
        self.outbox.drop(sub, keep_bootstrap=True)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _subscribe_events(self, frame: SubscribeEvents) -> None:
        if not self.wants_events and self.minor >= MINOR_TERMINAL_STATE:
            for term in self.state.terminals.values():
                term.baseline_foreground()
        self.wants_events = True
        self.outbox.push(Ok(request_id=frame.request_id))

    def _meta_get(self, frame: MetaGet) -> None:
        check_key(frame.key)
        scope = self.state.scope(frame.terminal, writing=False)
        self.outbox.push(
            MetadataValue(request_id=frame.request_id, key=frame.key, value=scope.get(frame.key))
        )

    def _meta_set(self, frame: MetaSet) -> None:
        self.state.meta_set(frame.terminal, frame.key, frame.value)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _meta_delete(self, frame: MetaDelete) -> None:
        self.state.meta_delete(frame.terminal, frame.key)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _meta_list(self, frame: MetaList) -> None:
        scope = self.state.scope(frame.terminal, writing=False)
        self.outbox.push(
            MetadataKeys(request_id=frame.request_id, entries=entries(scope, frame.prefix))
        )

    def _meta_subscribe(self, frame: MetaSubscribe) -> None:
        if frame.request_id in self.meta_subs:
            raise RequestError(
                ErrorCode.INVALID_COMMAND,
                f"metadata subscription {frame.request_id} already exists on this connection",
            )
        if len(self.meta_subs) >= self.config.max_subscriptions:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"at most {self.config.max_subscriptions} metadata subscriptions per connection",
            )
        msub = MetaSubscription(frame.request_id, frame.prefix, self._deliver_meta)
        self.meta_subs[frame.request_id] = msub
        self.state.meta.subscriptions.add(msub)
        self.outbox.push(Ok(request_id=frame.request_id))

    def _deliver_meta(
        self, sub_id: int, key: str, terminal: int | None, value: bytes | None
    ) -> None:
        self.outbox.push(
            MetadataChanged(subscription=sub_id, key=key, terminal=terminal, value=value)
        )

    def _meta_unsubscribe(self, frame: MetaUnsubscribe) -> None:
        msub = self.meta_subs.pop(frame.subscription, None)
        if msub is None:
            raise RequestError(
                ErrorCode.NOT_SUBSCRIBED, f"no metadata subscription {frame.subscription}"
            )
        self.state.meta.subscriptions.discard(msub)
        self.outbox.push(Ok(request_id=frame.request_id))

"""The client's core: one server connection, what arrives on it and the mirrors.

:class:`ClientCore` owns the connection (opened lazily and reused), routes what
arrives on it to the terminal mirrors and the sinks, resolves targets from the
listing, keeps ``keep_warm`` mirrors (subscription + engine) subscribed between
calls, LRU-evicted (0 for one-shot CLI use), and writes input. Reads subscribe as
a VIEWER and replay into a local engine: they never resize. Input goes out as
INPUT frames by terminal id and a call returns once the server acknowledged it.

The operations (:mod:`phux.client.run`, ``wait``, ``watch``, ``history``,
``notes``, ...) take a ClientCore and use it; :class:`phux.client.client.Client`
adds the verbs and calls them. Nothing here imports an operation.

Not thread-safe: use one client per thread. The one exception is
:meth:`ClientCore.interrupt`, which another thread may call to make a blocked call
raise ConnectionLost promptly.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    InputNotRead,
    InvalidArgument,
    PhuxError,
    ProtocolError,
    ServerError,
    ServerTooOld,
    TargetNotFound,
    TerminalGone,
)
from phux.client.mirror import DEFAULT_HISTORY, Mirror
from phux.client.selectors import (
    KEY_FOCUS,
    Current,
    Pane,
    Selector,
    Snapshot,
    expand,
    narrowing_filter,
    parse_selector,
    resolve,
    resolves_alone,
    session_filter,
    split_host,
)
from phux.runtime_paths import resolve_socket_path
from phux.signed_marks import pane_key, pane_shell
from phux.wire.errors import DetachReason, ErrorCode
from phux.wire.frames import (
    Detached,
    Frame,
    Input,
    ListTerminals,
    MetaSet,
    Role,
    Subscribe,
    SubscribeEvents,
    TerminalFilter,
    TerminalList,
    Unsubscribe,
)
from phux.wire.handshake import MINOR_AUDIT

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Self

    from phux.client.keys import KeyModes

# Largest INPUT body we send in one frame (the frame limit is 16 MiB).
MAX_INPUT_FRAME = 8 * 1024 * 1024
# Frames read per pump after the first one (a batch for wait's evaluation).
MAX_BATCH_FRAMES = 256

Sink = Callable[[Frame], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _not_read(pane: Pane, written: int, total: int) -> InputNotRead:
    """The write to ``pane`` timed out: the server answers every other request at
    once, so its program did not take the input."""
    fg = pane.foreground
    program = f" ({fg.name})" if fg is not None and fg.name else ""
    return InputNotRead(
        f"timed out: the program in pane {pane.id}{program} is not reading its input; "
        f"the {total - written} of {total} bytes it had not taken are dropped and will "
        "not be typed later"
    )


class ClientCore:
    def __init__(
        self,
        socket: str | os.PathLike[str] | None = None,
        *,
        keep_warm: int = 0,
        client_name: str = "phux",
        env: Mapping[str, str] | None = None,
        host: str | None = None,
    ) -> None:
        self.keep_warm = max(0, keep_warm)
        self.client_name = client_name
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.host: str | None = host or self.env.get("PHUX_HOST") or None
        """Where the server is: None here, else ``[USER@]HOST`` reached over ssh."""
        self._socket_arg = None if socket is None else os.fspath(socket)
        self.socket_path: str = (
            resolve_socket_path(socket) if self.host is None else f"ssh://{self.host}"
        )
        self._conn: Connection | None = None
        self._mirrors: dict[int, Mirror] = {}
        self._warm: OrderedDict[int, None] = OrderedDict()
        self._in_use: dict[int, int] = {}
        self._unsub_rids: list[int] = []
        self._sinks: list[Sink] = []
        self._cancelled = False
        self._events_subscribed = False

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._reset()

    def interrupt(self) -> None:
        """Make a call blocked in another thread raise ConnectionLost promptly.

        Thread-safe: shuts the current connection's socket down (a blocked
        ``recv``/``send`` returns at once), so the blocked call fails with
        ConnectionLost and the client forgets the connection; the next call
        reconnects. A no-op when no connection is open.
        """
        conn = self._conn
        if conn is not None:
            conn.interrupt()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop for good (an MCP call the host cancelled): what blocks in another thread
        raises ConnectionLost at once, as with :meth:`interrupt`, and so does every
        later call, a connection being opened meanwhile included. Thread-safe."""
        self._cancelled = True
        self.interrupt()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reset(self) -> None:
        self._conn = None
        self._mirrors.clear()
        self._warm.clear()
        self._in_use.clear()
        self._unsub_rids.clear()
        self._events_subscribed = False

    def connection(self, deadline: Deadline) -> Connection:
        if self._conn is None or self._conn.closed:
            self._reset()
            if self._cancelled:
                raise ConnectionLost("the call was cancelled")
            if self.host is None:
                self._conn = Connection.open(self.socket_path, deadline, self.client_name)
            else:
                self._conn = Connection.open_host(
                    self.host, self._socket_arg, deadline, self.env, self.client_name
                )
            if self._cancelled:  # cancelled while connecting: cancel() saw no connection
                self._conn.interrupt()
                raise ConnectionLost("the call was cancelled")
        return self._conn

    @property
    def local_anchor(self) -> str:
        """A path on this machine that stands for the server, for per-server local
        files (run's locks): the socket, or for a remote server a name in the default
        socket's directory."""
        if self.host is None:
            return self.socket_path
        safe = "".join(c if c.isalnum() or c in "@.-_" else "_" for c in self.host)
        return os.path.join(os.path.dirname(resolve_socket_path(None, self.env)), f"ssh-{safe}")

    def _target_host(self, target: str | None) -> str | None:
        """Take a ``HOST/`` prefix off ``target`` and point this client at that host
        (before its first connection; one client drives one server at a time)."""
        host, rest = split_host(target)
        if host is None:
            return target
        if host != self.host:
            if self._conn is not None and not self._conn.closed:
                raise InvalidArgument(
                    f"{target!r} is on {host}, but this client drives "
                    f"{self.host or 'the local server'}",
                    remedy="use one client (or one phux command) per host",
                )
            self.host = host
            self.socket_path = f"ssh://{host}"
        return rest

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """Forget a connection that broke, so the next call reconnects."""
        try:
            yield
        except (ConnectionLost, ProtocolError):
            if self._conn is not None:
                self._conn.close()
            self._reset()
            raise

    @property
    def server_id(self) -> str:
        conn = self._conn
        return conn.hello.server_id if conn is not None and conn.hello is not None else ""

    # ------------------------------------------------------------ frames

    def pump(self, deadline: Deadline, until: Callable[[], bool] | None = None) -> None:
        """Wait (until ``deadline``) for pushed frames, then apply every one already here.

        ``until``: stop applying once it holds; the frames after stay queued for the
        next pump. A new mirror is handed over at its bootstrap's end: output read in
        the same batch reaches the hooks its caller adds then (``wait`` searches it),
        not only the engine. (A kept mirror needs no such stop: the listing it
        catches up with is answered after every byte it counted, before any later.)

        Raises DeadlineExceeded when nothing arrived in time.
        """
        with self._guard():
            conn = self.connection(deadline)
            frame = conn.take_pushed()
            if frame is None:
                conn.read_one(deadline)
                # The rest of the batch: what is already readable, bounded so a
                # flood is applied as it comes rather than piling up unapplied.
                for _ in range(MAX_BATCH_FRAMES):
                    if not conn.read_nowait():
                        break
                frame = conn.take_pushed()
            while frame is not None:
                self._route(frame)
                if until is not None and until():
                    break
                frame = conn.take_pushed()
            self._drop_stale()
            self._collect_unsubscribes()

    def _drop_stale(self) -> None:
        """Unsubscribe the warm mirrors that fell a flood behind (``Mirror.stale``)."""
        for tid in [t for t in self._warm if self._mirrors[t].stale]:
            self._unsubscribe(tid)

    def drain(self) -> None:
        """Apply every frame readable right now, without waiting.

        A broken connection raises ConnectionLost (or ProtocolError) and is
        forgotten, as in every other method, so the next call reconnects.
        """
        conn = self._conn
        if conn is None:
            return
        with self._guard():
            for _ in range(MAX_BATCH_FRAMES):
                if not conn.read_nowait():
                    break
            while (frame := conn.take_pushed()) is not None:
                self._route(frame)
            self._drop_stale()
            self._collect_unsubscribes()

    def _route(self, frame: Frame) -> None:
        if isinstance(frame, Detached):
            try:
                reason = DetachReason(frame.reason).name.lower()
            except ValueError:
                reason = str(frame.reason)
            raise ConnectionLost(f"the server detached us ({reason}) {frame.message}".rstrip())
        terminal = getattr(frame, "terminal", None)
        if isinstance(terminal, int):
            mirror = self._mirrors.get(terminal)
            if mirror is not None:
                mirror.handle(frame)
        for sink in list(self._sinks):
            sink(frame)

    def _collect_unsubscribes(self) -> None:
        if not self._unsub_rids or self._conn is None:
            return
        left = []
        for rid in self._unsub_rids:
            try:
                if self._conn.take_reply(rid) is None:
                    left.append(rid)
            except ServerError:
                pass
        self._unsub_rids = left

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def remove_sink(self, sink: Sink) -> None:
        with contextlib.suppress(ValueError):
            self._sinks.remove(sink)

    def subscribe_events(self, deadline: Deadline) -> None:
        if not self._events_subscribed:
            self.connection(deadline).call(lambda rid: SubscribeEvents(request_id=rid), deadline)
            self._events_subscribed = True

    # ------------------------------------------------------------ snapshot + resolution

    def list_terminals(self, deadline: Deadline, only: TerminalFilter | None = None) -> Snapshot:
        """Every terminal, or those ``only`` names: a server older than 1.4 lists every
        one whatever the filter, so a caller must not take a filtered snapshot as
        holding nothing else (resolving a target over more panes gives the same pane)."""
        with self._guard():
            reply = self.connection(deadline).call_expect(
                lambda rid: ListTerminals(request_id=rid, filter=only), TerminalList, deadline
            )
        return Snapshot.from_wire(reply.terminals)

    def list_session(self, session: str, deadline: Deadline) -> Snapshot:
        """The terminals of ``session`` (and any others, from an older server)."""
        return self.list_terminals(deadline, session_filter(session))

    def _listing_for(self, selector: Selector, deadline: Deadline) -> Snapshot:
        """A listing that resolves ``selector`` as the whole one would: with a thousand
        terminals, a whole listing is ~250 KB to send and ~100 ms to decode, and every
        verb starts by resolving its target."""
        only = narrowing_filter(selector, self.env)
        if only is not None:
            snap = self.list_terminals(deadline, only)
            if resolves_alone(selector, snap, self.env):
                return snap
        return self.list_terminals(deadline)

    def resolve(self, target: str | None, deadline: Deadline) -> Pane:
        """Selector -> one pane (the client-side TerminalInfo). ``HOST/selector``
        names a pane on another machine (phux.client.remote)."""
        target = self._target_host(target)
        # Syntax errors before touching the server.
        selector = Current() if target is None else parse_selector(target)
        return resolve(target, self._listing_for(selector, deadline), self.env)

    def listed_after_subscribe(self, pane: Pane, mirror: Mirror, deadline: Deadline) -> Pane:
        """``pane`` with a foreground ``mirror`` can judge changes by: TERMINAL_STATE
        reports changes from a listing taken after SUBSCRIBE (spec/L1.md §8.1), and
        the one ``pane`` came from was taken before it, so until a TERMINAL_STATE
        came the pane is listed again (a program may have ended in between)."""
        return pane if mirror.foreground_known else self.resolve(pane.id, deadline)

    def resolve_all(self, target: str, deadline: Deadline) -> list[Pane]:
        """Selector -> every pane it names (no narrowing)."""
        target = self._target_host(target) or ""
        selector = parse_selector(target)
        return expand(selector, self._listing_for(selector, deadline), target, self.env)

    # ------------------------------------------------------------ mirrors

    def mirror(
        self,
        pane: Pane,
        deadline: Deadline,
        *,
        engine: bool = True,
        history: int = DEFAULT_HISTORY,
        input_events: bool = False,
        fresh: bool = False,
    ) -> Mirror:
        """A bootstrapped mirror of ``pane``, up to date with the listing it came from.

        ``input_events``: the subscription also brings INPUT_WRITTEN (protocol 1.3),
        the bytes every client's input put on the PTY; for sinks (``add_sink``). A
        mirror that brings them serves a caller that does not ask for them too.
        ``fresh``: bootstrap anew rather than reuse a warm mirror kept from an
        earlier call (unless another operation is using it): a warm mirror stamps
        the OSC 133 marks it reads with the time this client read them, at its next
        call, while a bootstrap's checkpoint carries the times the server's replica
        stamped as the bytes came (``history``)."""
        with self._guard():
            tid = pane.terminal
            existing = self._mirrors.get(tid)
            if fresh and existing is not None and tid not in self._in_use:
                self._unsubscribe(tid)
                existing = None
            if existing is not None and tid in self._in_use:
                # Shared with an operation still running on this client (a watch
                # stream): an engine mirror serves everyone.
                if engine and not existing.with_engine:
                    raise InvalidArgument(f"terminal {pane.id} is busy in this client")
                self._in_use[tid] += 1
                try:
                    while existing.alive and (
                        not existing.ready or existing.next_seq < pane.next_seq
                    ):
                        self.pump(deadline)
                except BaseException:
                    self._in_use[tid] -= 1
                    raise
                return existing
            if existing is not None and (
                existing.with_engine != engine
                or existing.history != history
                or (input_events and not existing.input_events)
                or existing.stale
            ):
                self._unsubscribe(tid)
                existing = None
            if existing is not None:
                self._warm.pop(tid, None)
                existing.warm = False
                self._in_use[tid] = 1
                try:
                    while existing.alive and (
                        not existing.ready or existing.next_seq < pane.next_seq
                    ):
                        self.pump(deadline)
                except BaseException:
                    self._unsubscribe(tid)
                    raise
                existing.last_output = time.monotonic()
                return existing
            return self._subscribe(
                pane, deadline, engine=engine, history=history, input_events=input_events
            )

    def _subscribe(
        self,
        pane: Pane,
        deadline: Deadline,
        *,
        engine: bool,
        history: int,
        raw: bool = False,
        input_events: bool = False,
    ) -> Mirror:
        conn = self.connection(deadline)
        if input_events and conn.minor < MINOR_AUDIT:
            raise ServerTooOld(
                f"the server speaks protocol 1.{conn.minor}: it cannot show the input written "
                f"to a pane (that needs 1.{MINOR_AUDIT})"
            )
        tid = pane.terminal
        mirror = Mirror(tid, engine=engine, history=history, raw=raw)
        mirror.mark_key = pane_key(pane.metadata)
        if pane_shell(pane.metadata) == "sh":
            # No C mark: the engine infers its commands' starts from the foreground.
            mirror.shell_pid = pane.pid
            mirror.listed_foreground = pane.foreground
        mirror.input_events = input_events
        rid = conn.submit(
            lambda r: Subscribe(request_id=r, terminal=tid, role=Role.VIEWER, input=input_events)
        )
        mirror.request_id = rid
        self._mirrors[tid] = mirror
        self._in_use[tid] = 1
        try:
            while not mirror.ready:
                try:
                    conn.take_reply(rid)
                except ServerError as exc:
                    raise self._terminal_error(exc, pane) from None
                self.pump(deadline, lambda: mirror.ready)
        except BaseException:
            self._in_use.pop(tid, None)
            if self._mirrors.get(tid) is mirror:
                del self._mirrors[tid]
                if mirror.state != Mirror.SUBSCRIBING or mirror.ever_ready:
                    self._unsubscribe_frame(tid)
                elif self._conn is not None and not self._conn.closed:
                    # The SUBSCRIBE may still succeed later: undo it blindly.
                    self._unsubscribe_frame(tid)
            raise
        mirror.last_output = time.monotonic()
        return mirror

    def scan_mirror(self, pane: Pane, deadline: Deadline, *, input_events: bool = False) -> Mirror:
        """A mirror without an engine that keeps its bootstrap's bytes (``mirror.raw``)
        for a caller that scans them, as a one-shot ``run`` does; release it after."""
        with self._guard():
            return self._subscribe(
                pane, deadline, engine=False, history=0, raw=True, input_events=input_events
            )

    def shows_input(self, deadline: Deadline) -> bool:
        """Whether the server can report the input written to a pane (INPUT_WRITTEN)."""
        return self.connection(deadline).minor >= MINOR_AUDIT

    def release(self, mirror: Mirror) -> None:
        """Done with a mirror: keep it warm (LRU) or unsubscribe."""
        tid = mirror.terminal
        if self._mirrors.get(tid) is not mirror:
            return
        users = self._in_use.get(tid, 0) - 1
        if users > 0:
            self._in_use[tid] = users
            return
        self._in_use.pop(tid, None)
        if (
            self.keep_warm > 0
            and mirror.alive
            and mirror.with_engine
            and mirror.history == DEFAULT_HISTORY
        ):
            mirror.bytes_hooks.clear()
            mirror.resize_hooks.clear()
            mirror.gap_hooks.clear()
            mirror.warm = True
            self._warm[tid] = None
            self._warm.move_to_end(tid)
            while len(self._warm) > self.keep_warm:
                old, _ = self._warm.popitem(last=False)
                self._unsubscribe(old)
            return
        self._unsubscribe(tid)

    def _unsubscribe(self, tid: int) -> None:
        self._warm.pop(tid, None)
        self._in_use.pop(tid, None)
        if self._mirrors.pop(tid, None) is not None:
            self._unsubscribe_frame(tid)

    def _unsubscribe_frame(self, tid: int) -> None:
        conn = self._conn
        if conn is None or conn.closed:
            return
        with contextlib.suppress(PhuxError):
            self._unsub_rids.append(conn.submit(lambda r: Unsubscribe(request_id=r, terminal=tid)))

    @staticmethod
    def _terminal_error(exc: ServerError, pane: Pane) -> PhuxError:
        if exc.wire_code == ErrorCode.TERMINAL_NOT_FOUND:
            return TargetNotFound(f"terminal {pane.id} no longer exists")
        if exc.wire_code == ErrorCode.TERMINAL_EXITED:
            return TerminalGone(f"terminal {pane.id} has exited")
        return exc

    # ------------------------------------------------------------ input

    def write(self, pane: Pane, data: bytes, deadline: Deadline, *, urgent: bool = False) -> None:
        """Send bytes to a terminal; returns once the server acknowledged every write."""
        self.write_unit(pane, [data], deadline, urgent=urgent)

    def write_unit(
        self, pane: Pane, writes: Sequence[bytes], deadline: Deadline, *, urgent: bool = False
    ) -> None:
        """Send ``writes`` as one input unit: the server writes them to the PTY one
        after another (each its own write) with no other client's input in between,
        however many INPUT frames they take. ``urgent`` (an interrupt key) jumps the
        terminal's queue and discards what was queued before it (spec/L1.md §7).

        Giving up (the deadline passes) closes the connection, which makes the
        server drop whatever of it is still unwritten: input that timed out is
        never typed later.
        """
        with self._guard():
            conn = self.connection(deadline)
            tid = pane.terminal
            pieces = [
                data[i : i + MAX_INPUT_FRAME]
                for data in writes
                for i in range(0, len(data), MAX_INPUT_FRAME)
            ] or [b""]
            last = len(pieces) - 1

            def make(piece: bytes, more: bool) -> Callable[[int], Frame]:
                return lambda rid: Input(
                    request_id=rid, terminal=tid, data=piece, more=more, urgent=urgent
                )

            failed: ServerError | None = None
            written = 0  # the bytes typed: the pieces before the first one refused
            try:
                rids = [
                    conn.submit(make(piece, i < last and not urgent), deadline)
                    for i, piece in enumerate(pieces)
                ]
                for rid, piece in zip(rids, pieces, strict=True):
                    try:  # every reply, so none is left behind unread
                        conn.wait_reply(rid, deadline)
                        if failed is None:
                            written += len(piece)
                    except ServerError as exc:
                        failed = failed or exc
            except DeadlineExceeded:
                self.close()
                raise _not_read(pane, written, sum(map(len, pieces))) from None
            except ConnectionLost:
                if failed is None:
                    raise
                # The server refused a piece (e.g. a limit) and closed: that is the news.
                self.close()
            if failed is not None:
                error = self._terminal_error(failed, pane)
                if written:
                    # A retry would type the start again: say exactly what went in
                    # (the server cancels the rest of a unit once a piece is refused).
                    total = sum(map(len, pieces))
                    error.message = (
                        f"typed {written} of {total} bytes, then: {error.message}; "
                        "the rest was not typed"
                    )
                    error.args = (error.message,)
                raise error from None

    def _one_shot(self, pane: Pane) -> bool:
        """No mirror of ``pane`` is kept or held: one reading, then unsubscribe."""
        return self.keep_warm == 0 and pane.terminal not in self._mirrors

    def modes(self, pane: Pane, deadline: Deadline) -> KeyModes:
        """The terminal's input modes (application cursor keys, bracketed paste, kitty keys)."""
        from phux.client.keys import KeyModes

        if self._one_shot(pane):
            return self._scanned_modes(pane, deadline)
        mirror = self.mirror(pane, deadline)
        try:
            engine = mirror.engine
            if engine is None:
                return KeyModes()
            modes = engine.modes
            return KeyModes(
                app_cursor=modes.app_cursor,
                bracketed_paste=modes.bracketed_paste,
                kitty=modes.kitty_keys,
            )
        finally:
            self.release(mirror)

    def _scanned_modes(self, pane: Pane, deadline: Deadline) -> KeyModes:
        """The modes from the bootstrap's bytes, without the engine when they are plain.

        A one-shot client keeps no mirror: it subscribes without an engine,
        keeps the bytes a fresh engine would be fed, and scans them for the
        mode sequences (:mod:`phux.client.modes`). Bytes the scanner is unsure
        of are replayed into an engine after all, so the answer is the engine's.
        """
        from phux.client.keys import KeyModes
        from phux.client.modes import scan_modes

        with self._guard():
            mirror = self._subscribe(pane, deadline, engine=False, history=0, raw=True)
        try:
            data = bytes(mirror.raw or b"")
            modes = scan_modes(data)
            if modes is None:
                from phux.engine import Terminal

                engine = Terminal(max(mirror.cols, 1), max(mirror.rows, 1), history=0)
                engine.feed(data)
                seen = engine.modes
                modes = KeyModes(
                    app_cursor=seen.app_cursor,
                    bracketed_paste=seen.bracketed_paste,
                    kitty=seen.kitty_keys,
                )
            return modes
        finally:
            self.release(mirror)

    def used(self, pane: Pane, deadline: Deadline) -> None:
        """Record that a verb writes to ``pane`` (``phux.focus_ms``, spec/L3.md §2): it
        becomes its session's active pane, which a session name and the default target
        resolve to. Only writes and selections call this, never reads, so that reading
        another pane does not move where the next ``run SESSION`` goes.

        Costs no round trip: the META_SET is only submitted. The server handles a
        connection's requests in order, so whatever the verb awaits next (its
        SUBSCRIBE, its INPUT) is answered after the use was recorded; the reply
        itself is collected later and dropped (an exited pane refuses it).
        """
        if not pane.alive:
            return
        with self._guard():
            conn = self.connection(deadline)
            self._collect_unsubscribes()
            stamp = str(_now_ms()).encode()
            tid = pane.terminal
            self._unsub_rids.append(
                conn.submit(
                    lambda rid: MetaSet(request_id=rid, key=KEY_FOCUS, value=stamp, terminal=tid),
                    deadline,
                )
            )

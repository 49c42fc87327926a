"""The Client: one server connection and the agent operations over it.

Every method takes one ``deadline`` covering connect, handshake and the work.
The connection opens lazily and is reused; ``keep_warm`` terminal mirrors
(subscription + engine) stay subscribed between calls, LRU-evicted (0 for
one-shot CLI use). Reads subscribe as a VIEWER and replay into a local
engine: they never resize. Input goes out as INPUT frames by terminal id and
a call returns once the server acknowledged the write.

Not thread-safe: use one Client per thread. The one exception is
:meth:`Client.interrupt`, which another thread may call to make a blocked call
raise ConnectionLost promptly.
"""

from __future__ import annotations

import contextlib
import os
import re
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
    InvalidName,
    PhuxError,
    ProtocolError,
    ServerError,
    ServerRefused,
    ServerTooOld,
    SessionExists,
    TargetNotFound,
    TerminalGone,
)
from phux.client.mirror import DEFAULT_HISTORY, Mirror
from phux.client.selectors import (
    KEY_FOCUS,
    KEY_PANE,
    KEY_SESSION,
    KEY_SLOT,
    KEY_TAGS,
    KEY_WINDOW,
    KEY_WINDOW_NAME,
    Current,
    Pane,
    Selector,
    Session,
    Snapshot,
    expand,
    narrowing_filter,
    parse_selector,
    pick_pane,
    resolve,
    resolves_alone,
    session_filter,
    slot_value,
    split_host,
    validate_session_name,
)
from phux.runtime_paths import resolve_socket_path
from phux.signed_marks import pane_key, pane_shell
from phux.wire.errors import DetachReason, ErrorCode
from phux.wire.frames import (
    Detached,
    EnvVar,
    Frame,
    Input,
    Kill,
    ListTerminals,
    MetaEntry,
    MetaSet,
    Resize,
    Role,
    SendSignal,
    Signal,
    Spawn,
    Subscribe,
    SubscribeEvents,
    TerminalFilter,
    TerminalList,
    TerminalSpawned,
    Unsubscribe,
)
from phux.wire.handshake import MINOR_AUDIT

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from phux.client.keys import KeyModes
    from phux.client.models import (
        HistoryResult,
        NewPaneResult,
        NewResult,
        ScreenState,
        WaitResult,
    )
    from phux.client.run import RunOutcome
    from phux.client.watch import WatchStream

# Largest INPUT body we send in one frame (the frame limit is 16 MiB).
MAX_INPUT_FRAME = 8 * 1024 * 1024
AUTO_NAME_ATTEMPTS = 64
# Frames read per pump after the first one (a batch for wait's evaluation).
MAX_BATCH_FRAMES = 256
# Tags and window names appear in selectors (``#tag``, ``name:tag``, comma-joined).
_TAG_FORBIDDEN = re.compile(r"[,:.\s\x00-\x1f\x7f]")

Sink = Callable[[Frame], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_env(assignments: Sequence[str]) -> dict[str, str]:
    """tmux's ``-e VAR=VALUE`` words -> {VAR: VALUE} (a later VAR wins); VALUE may be
    empty or hold ``=``. InvalidArgument names the first bad word."""
    out: dict[str, str] = {}
    for word in assignments:
        name, eq, value = word.partition("=")
        if not eq:
            raise InvalidArgument(f"bad -e {word!r}: write VAR=VALUE")
        out[name] = value
    check_env(out)
    return out


def check_env(env: Mapping[str, str]) -> None:
    """Refuse variable names a shell cannot use and NUL bytes, which a PTY's
    environment cannot carry."""
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise InvalidArgument(
                f"bad environment variable name {name!r}: letters, digits and _, "
                "not starting with a digit"
            )
        if name == "PHUX_TERMINAL":
            # The pane's own id, which `.` inside it resolves by: the server's to set.
            raise InvalidArgument("PHUX_TERMINAL is set by the server (the pane's id)")
        if "\x00" in value:
            raise InvalidArgument(f"the value of {name} contains a NUL byte")


def env_vars(env: Mapping[str, str] | None) -> list[EnvVar]:
    """SPAWN's ``env``: set in the pane over the server's own environment."""
    if not env:
        return []
    check_env(env)
    return [EnvVar(name=k, value=v) for k, v in env.items()]


def parse_signal(name: str) -> Signal:
    """``INT``, ``SIGINT``, ``int`` or ``2`` -> Signal; InvalidArgument otherwise."""
    text = name.strip().upper()
    if text.startswith("SIG"):
        text = text[3:]
    if text.isdigit():
        try:
            return Signal(int(text))
        except ValueError:
            pass
    elif text in Signal.__members__:
        return Signal[text]
    names = ", ".join(Signal.__members__)
    raise InvalidArgument(f"unknown signal {name!r} (known: {names})")


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


class Client:
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

    def __enter__(self) -> Client:
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

    def pump(self, deadline: Deadline) -> None:
        """Wait (until ``deadline``) for pushed frames, then apply every one already here.

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
            else:
                self._route(frame)
            while (frame := conn.take_pushed()) is not None:
                self._route(frame)
            self._collect_unsubscribes()

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
            ):
                self._unsubscribe(tid)
                existing = None
            if existing is not None:
                self._warm.pop(tid, None)
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
                self.pump(deadline)
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
        """The terminal's input modes (application cursor keys, bracketed paste)."""
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

    # ------------------------------------------------------------ verbs

    def ls(self, deadline: Deadline) -> list[Session]:
        """Every session, sorted by name: the live ones, then (``exited``) those whose
        panes all exited and that the server still keeps."""
        return self.ls_panes(deadline)[0]

    def ls_panes(self, deadline: Deadline) -> tuple[list[Session], dict[str, list[Pane]]]:
        """:meth:`ls` and each session's panes (window, pane, id order), from one
        listing: a live session's live panes, an exited session's retained ones."""
        snap = self.list_terminals(deadline)
        live = snap.sessions()
        gone = snap.retained_sessions()
        sessions = [*self._sessions_of(live), *self._sessions_of(gone, exited=True)]
        return sorted(sessions, key=lambda s: s.name), {**live, **gone}

    @staticmethod
    def _sessions_of(sessions: dict[str, list[Pane]], *, exited: bool = False) -> list[Session]:
        return [
            Session(
                name=name,
                window_count=len({p.window for p in panes}),
                attached_client_count=max(p.primaries for p in panes),
                terminals=[p.terminal for p in panes],
                exited=exited,
            )
            for name, panes in sessions.items()
        ]

    def snapshot(
        self,
        target: str | None = None,
        *,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
        deadline: Deadline,
    ) -> ScreenState:
        """The ScreenState of the pane ``target`` names (see :meth:`snapshot_data`)."""
        from phux.engine.screen_state import screen_state

        return screen_state(
            self.snapshot_data(
                target, scrollback=scrollback, cells=cells, version=version, deadline=deadline
            )
        )

    def snapshot_data(
        self,
        target: str | None = None,
        *,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
        deadline: Deadline,
    ) -> dict[str, Any]:
        """:meth:`snapshot` as plain data (``msgspec.to_builtins`` of the Struct, key
        order included), without importing msgspec: ``phux snapshot`` prints it.
        ``version``: None the current shape; 3 the previous one (per-cell ``cells``),
        kept for one version."""
        if scrollback is not None and scrollback < 0:
            raise InvalidArgument("scrollback must be absent, 0 (all history) or a row count")
        pane = self.resolve(target, deadline)
        # A read: it does not make the pane its session's active pane (spec/L3.md §2).
        # A one-shot client asked for the viewport only never looks at history:
        # an engine without it skips building the rows a checkpoint's scrollback
        # (and any flood since) scrolls through, most of the replay's cost.
        history = 0 if self._one_shot(pane) and scrollback is None else DEFAULT_HISTORY
        mirror = self.mirror(pane, deadline, history=history)
        try:
            from phux.client.pane_state import project_mirror

            assert mirror.engine is not None
            try:
                data = mirror.engine.project_data(
                    pane=pane.terminal, scrollback=scrollback, cells=cells, version=version
                )
            except ValueError as exc:  # an unknown schema version
                raise InvalidArgument(str(exc)) from None
            program, state = project_mirror(pane, mirror)
            if program is not None:
                data["program"] = program
            data["state"] = state
            return data
        finally:
            self.release(mirror)

    def send_keys(
        self, target: str, keys: Sequence[str], deadline: Deadline, *, literal: bool = False
    ) -> Pane:
        """Type KEYS into the pane ``target`` names, as one write; returns that pane once
        it was acknowledged (``SendKeysResult.of`` turns it into the JSON shape).
        ``literal``: every word is text, even one that names a key (tmux's ``-l``)."""
        from phux.client.keys import (
            KeyModes,
            encode_keys,
            is_interrupt,
            needs_modes,
            validate_keys,
        )

        if isinstance(keys, str):
            keys = [keys]
        if not keys:
            raise InvalidArgument("send-keys needs at least one key")
        if not literal:
            validate_keys(keys)
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        self.used(pane, deadline)
        modes = self.modes(pane, deadline) if not literal and needs_modes(keys) else KeyModes()
        data = encode_keys(keys, modes, literal=literal)
        # One call, one unit (however many frames it takes); interrupt keys alone jump the queue.
        self.write(pane, data, deadline, urgent=not literal and is_interrupt(data))
        return pane

    def paste(self, target: str, text: str | bytes, deadline: Deadline) -> Pane:
        """Send text as one paste (bracketed when the program enabled bracketed paste);
        returns the pane it went to."""
        from phux.client.keys import paste_bytes

        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        self.used(pane, deadline)
        modes = self.modes(pane, deadline)
        self.write(pane, paste_bytes(text, modes), deadline)
        return pane

    def run(
        self,
        target: str,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        force: bool = False,
        deadline: Deadline,
    ) -> RunOutcome:
        """Run a command in the pane's shell (:mod:`phux.client.run`); ``RunResult.of``
        turns the outcome into the JSON shape.

        ``command``: a string is a shell command line; a sequence of several words
        is quoted word by word. Refuses (PaneBusy) unless the pane is at an idle
        shell prompt, or ``force``.
        """
        from phux.client.run import run_command

        return run_command(self, target, command, timeout=timeout, deadline=deadline, force=force)

    def wait(
        self,
        target: str | None = None,
        *,
        until: str | None = None,
        regex: str | None = None,
        idle_ms: int | None = None,
        timeout: float | None = None,
        prompt: bool = False,
        exit: bool = False,
        deadline: Deadline,
    ) -> WaitResult:
        """Block until a condition holds (:mod:`phux.client.wait`): text, a regex,
        idle output, the shell at an idle prompt (``prompt``) or the pane's program
        exited (``exit``, with its status in ``exit_code``)."""
        from phux.client.wait import wait_for

        return wait_for(
            self,
            target,
            until=until,
            regex=regex,
            idle_ms=idle_ms,
            timeout=timeout,
            deadline=deadline,
            prompt=prompt,
            exit=exit,
        )

    def watch(
        self,
        target: str | None = None,
        *,
        until_event: str | None = None,
        idle_ms: int | None = None,
        timeout: float | None = None,
        deadline: Deadline,
    ) -> WatchStream:
        from phux.client.watch import WatchStream

        return WatchStream(
            self,
            target,
            until_event=until_event,
            idle_ms=idle_ms,
            timeout=timeout,
            deadline=deadline,
        )

    def new(
        self,
        name: str | None = None,
        *,
        cwd: str | None = None,
        command: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cols: int = 80,
        rows: int = 24,
        shell_integration: bool = True,
        deadline: Deadline,
    ) -> NewResult:
        """Create a session (a seed terminal with L3 metadata). A taken name raises
        SessionExists; ``name=None`` takes the smallest free numeric name.
        ``shell_integration=False`` opts the pane out (spec/shell-integration.md)."""
        from phux.client.models import NewResult

        if name is not None:
            why = validate_session_name(name)
            if why is not None:
                raise InvalidName(f"invalid session name {name!r}: {why}")
        if isinstance(command, str):
            command = [command]
        workdir = cwd if cwd is not None else os.getcwd()
        env = dict(env or {})
        if not shell_integration:
            env["PHUX_SHELL_INTEGRATION"] = "0"
        env_list = env_vars(env)
        attempts = 1 if name is not None else AUTO_NAME_ATTEMPTS
        taken: set[str] = set()
        for _ in range(attempts):
            chosen = name
            if chosen is None:
                taken |= set(self.list_terminals(deadline).sessions())
                n = 0
                while str(n) in taken:
                    n += 1
                chosen = str(n)
            metadata = [
                MetaEntry(key=KEY_SESSION, value=chosen.encode()),
                MetaEntry(key=KEY_WINDOW, value=b"0"),
                MetaEntry(key=KEY_PANE, value=b"0"),
                MetaEntry(key=KEY_FOCUS, value=str(_now_ms()).encode()),
                MetaEntry(key=KEY_SLOT, value=slot_value(chosen, 0, 0)),
            ]
            try:
                with self._guard():
                    reply = self.connection(deadline).call_expect(
                        _spawn_request(command, workdir, env_list, cols, rows, metadata),
                        TerminalSpawned,
                        deadline,
                    )
            except ServerError as exc:
                if exc.wire_code == ErrorCode.UNIQUE_CONFLICT:
                    if name is not None:
                        raise SessionExists(f"session {name!r} already exists") from None
                    taken.add(chosen)
                    continue
                if exc.wire_code == ErrorCode.SPAWN_FAILED:
                    raise InvalidArgument(
                        f"cannot start the session: {exc.message}",
                        remedy="check that COMMAND is an installed program and -c an "
                        "existing directory",
                    ) from None
                raise
            return NewResult(session=chosen, terminal_id=reply.terminal)
        raise SessionExists("could not find a free numeric session name")

    def kill(self, target: str, deadline: Deadline) -> list[int]:
        """Kill what the selector names: a whole session or window atomically, or one pane."""
        for attempt in range(2):
            panes = self.resolve_all(target, deadline)
            if target == ".":
                panes = [pick_pane(panes)]  # the current pane, never a whole session
            if not any(p.alive for p in panes):
                # Already killed or exited (retained): one answer by name and by id.
                raise TerminalGone(f"{target} has already exited")
            ids = [p.terminal for p in panes if p.alive]
            try:
                with self._guard():
                    self.connection(deadline).call(_kill_request(ids), deadline)
            except ServerError as exc:
                racy = exc.wire_code in (ErrorCode.TERMINAL_EXITED, ErrorCode.TERMINAL_NOT_FOUND)
                if racy and attempt == 0:
                    continue  # a pane ended between the listing and the kill: list again
                raise ServerRefused(f"the server refused to kill {target}: {exc.message}") from None
            return ids
        raise AssertionError("unreachable")

    def rename(self, session: str, new_name: str, deadline: Deadline) -> None:
        why = validate_session_name(new_name)
        if why is not None:
            raise InvalidName(f"invalid session name {new_name!r}: {why}")
        sessions = self.list_terminals(deadline).sessions()
        panes = sessions.get(session)
        if not panes:
            raise TargetNotFound(f"no session named {session!r}")
        if new_name == session:
            return
        if new_name in sessions:
            raise SessionExists(
                f"session {new_name!r} already exists",
                remedy="choose another NEW name (`phux ls` lists the taken ones)",
            )
        with self._guard():
            conn = self.connection(deadline)

            def make(terminal: int, key: str, value: bytes) -> Callable[[int], Frame]:
                return lambda rid: MetaSet(request_id=rid, key=key, value=value, terminal=terminal)

            name = new_name.encode()
            rids = [conn.submit(make(p.terminal, KEY_SESSION, name)) for p in panes]
            # The panes' places follow the name (the slot names the session).
            rids += [
                conn.submit(
                    make(p.terminal, KEY_SLOT, slot_value(new_name, p.window or 0, p.pane or 0))
                )
                for p in panes
            ]
            for rid in rids:
                with contextlib.suppress(ServerError):  # a pane that just exited
                    conn.wait_reply(rid, deadline)
        from phux.client.notes import move_session_notes

        move_session_notes(self, session, new_name, deadline)  # notes follow the name

    def resize(self, target: str, cols: int, rows: int, deadline: Deadline) -> None:
        if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
            raise InvalidArgument(f"size {cols}x{rows} is out of range (1..1000 each)")
        pane = self.resolve(target, deadline)
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: Resize(
                        request_id=rid, terminal=pane.terminal, cols=cols, rows=rows
                    ),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None

    def signal(self, target: str, name: str, deadline: Deadline) -> None:
        sig = parse_signal(name)
        pane = self.resolve(target, deadline)
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: SendSignal(request_id=rid, terminal=pane.terminal, signal=sig),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None

    def history(
        self, target: str | None, *, last: int | None = None, deadline: Deadline
    ) -> HistoryResult:
        """The commands the pane's shell ran (see :mod:`phux.client.history`)."""
        from phux.client.history import pane_history

        return pane_history(self, target, last=last, deadline=deadline)

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

    # ------------------------------------------------------------ windows, panes, tags

    def new_window(
        self,
        session: str,
        *,
        name: str | None = None,
        command: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        select: bool = False,
        deadline: Deadline,
    ) -> NewPaneResult:
        """Add a window to a live session: its pane 0 runs ``command`` (default: the
        shell), sized like the session's active pane (spec/L3.md §2). ``env``: variables
        set in the pane over the server's environment. ``select``: the new pane becomes
        the session's active pane (else the active pane stays where it was)."""
        if name is not None and (not name or _TAG_FORBIDDEN.search(name) or name.isdigit()):
            raise InvalidName(
                f"invalid window name {name!r}: non-numeric, no `:`, `.`, `,`, spaces"
            )
        while True:  # another client took the index meanwhile: list again
            panes = self.list_session(session, deadline).session(session)
            if not panes:
                raise TargetNotFound(f"no session named {session!r}")
            window = max((p.window or 0) for p in panes) + 1
            like = pick_pane(panes)
            made = self._spawn_pane(
                session, window, 0, name, like, command, cwd, env, select, deadline
            )
            if made is not None:
                return made

    def split(
        self,
        target: str,
        *,
        command: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        select: bool = False,
        deadline: Deadline,
    ) -> NewPaneResult:
        """Add a pane to the window of the pane ``target`` names (next pane index);
        ``env`` and ``select`` as for :meth:`new_window`."""
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        if pane.session is None:
            raise InvalidArgument(f"terminal {pane.id} belongs to no session")
        window = pane.window or 0
        while True:  # another client took the index meanwhile: list again
            siblings = [
                p
                for p in self.list_session(pane.session, deadline).session(pane.session)
                if (p.window or 0) == window
            ]
            index = max((p.pane or 0) for p in siblings or [pane]) + 1
            made = self._spawn_pane(
                pane.session,
                window,
                index,
                pane.window_name,
                pane,
                command,
                cwd,
                env,
                select,
                deadline,
            )
            if made is not None:
                return made

    def _spawn_pane(
        self,
        session: str,
        window: int,
        index: int,
        window_name: str | None,
        like: Pane,
        command: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        select: bool,
        deadline: Deadline,
    ) -> NewPaneResult | None:
        """SPAWN the pane at (``window``, ``index``); None when a live pane holds that
        place already (``phux.slot``, unique: the server decides at once). Unless
        ``select``, the pane gets no ``phux.focus_ms``: the session's active pane
        stays the one it was (tmux's ``split-window -d``)."""
        from phux.client.models import NewPaneResult

        if isinstance(command, str):
            command = [command]
        metadata = [
            MetaEntry(key=KEY_SESSION, value=session.encode()),
            MetaEntry(key=KEY_WINDOW, value=str(window).encode()),
            MetaEntry(key=KEY_PANE, value=str(index).encode()),
            MetaEntry(key=KEY_SLOT, value=slot_value(session, window, index)),
        ]
        if select:
            metadata.append(MetaEntry(key=KEY_FOCUS, value=str(_now_ms()).encode()))
        if window_name is not None:
            metadata.append(MetaEntry(key=KEY_WINDOW_NAME, value=window_name.encode()))
        workdir = cwd if cwd is not None else os.getcwd()
        try:
            with self._guard():
                reply = self.connection(deadline).call_expect(
                    lambda rid: Spawn(
                        request_id=rid,
                        argv=list(command),
                        cwd=workdir,
                        env=env_vars(env),
                        cols=like.cols,
                        rows=like.rows,
                        metadata=sorted(metadata, key=lambda e: e.key),
                        unique_keys=[KEY_SLOT],
                    ),
                    TerminalSpawned,
                    deadline,
                )
        except ServerError as exc:
            if exc.wire_code == ErrorCode.UNIQUE_CONFLICT:
                return None
            if exc.wire_code == ErrorCode.SPAWN_FAILED:
                raise InvalidArgument(
                    f"cannot start the pane: {exc.message}",
                    remedy="check that COMMAND is an installed program and -c an "
                    "existing directory",
                ) from None
            raise
        return NewPaneResult(session=session, window=window, pane=index, terminal_id=reply.terminal)

    def tag(
        self, target: str, tags: Sequence[str], deadline: Deadline, *, remove: bool = False
    ) -> list[str]:
        """Add (or with ``remove``, take away) tags on the pane ``target`` names, for
        ``#tag`` and ``name:tag`` selectors; returns the pane's tags after."""
        for tag in tags:
            if not tag or _TAG_FORBIDDEN.search(tag):
                raise InvalidName(
                    f"invalid tag {tag!r}: tags are non-empty, without `,`, `:`, `.` or spaces"
                )
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        if remove:
            after = [t for t in pane.tags if t not in tags]
        else:
            after = list(dict.fromkeys([*pane.tags, *tags]))
        value = ",".join(after).encode()
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: MetaSet(
                        request_id=rid, key=KEY_TAGS, value=value, terminal=pane.terminal
                    ),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None
        return after

    def focus(self, pane: Pane, deadline: Deadline) -> None:
        """Record that a client focused/used this pane (``phux.focus_ms``)."""
        with self._guard():
            self.connection(deadline).call(
                lambda rid: MetaSet(
                    request_id=rid,
                    key=KEY_FOCUS,
                    value=str(_now_ms()).encode(),
                    terminal=pane.terminal,
                ),
                deadline,
            )


def _spawn_request(
    argv: Sequence[str],
    cwd: str,
    env: list[EnvVar],
    cols: int,
    rows: int,
    metadata: list[MetaEntry],
) -> Callable[[int], Frame]:
    return lambda rid: Spawn(
        request_id=rid,
        argv=list(argv),
        cwd=cwd,
        env=env,
        cols=cols,
        rows=rows,
        metadata=metadata,
        unique_keys=[KEY_SESSION],
    )


def _kill_request(ids: list[int]) -> Callable[[int], Frame]:
    return lambda rid: Kill(request_id=rid, terminals=ids)


__all__ = ["Client", "parse_signal", "pick_pane"]

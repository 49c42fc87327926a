"""The server's state: terminals by id, connections, metadata, and the atomic operations.

Every method here is synchronous. Because the server runs on one trio loop, a
method that does not await is one atomic step: no other request, and no
observer, can see the state half way through it. Spawn-with-unique-keys and
multi-terminal kill rely on exactly that.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

import trio

from phux.runtime_paths import run_lock_path
from phux.server.audit import AuditLog
from phux.server.config import ServerConfig
from phux.server.echo_first import EchoFirst
from phux.server.exits import ExitWatch
from phux.server.journal import JournalBudget
from phux.server.listing import ListingCache
from phux.server.log import log
from phux.server.memory import MemoryFacts
from phux.server.metadata import MetadataHub, RequestError, check_key, check_value, entries
from phux.server.pty_process import describe_spawn_error, spawn_on_pty
from phux.server.replica import ReplicaHost
from phux.server.shell_integration import KEY_VARIABLE, VARIABLE, inject, wanted
from phux.server.subscriber import Outbox, QueueBudget
from phux.server.terminal import Terminal
from phux.signed_marks import KEY_METADATA, SHELL_METADATA
from phux.wire.errors import ErrorCode
from phux.wire.frames import Signal, Spawn, TerminalFilter, TerminalList, TerminalSpawned
from phux.wire.handshake import MINOR_TERMINAL_STATE

MAX_DIMENSION = 1000


def check_size(cols: int, rows: int) -> None:
    if not (1 <= cols <= MAX_DIMENSION and 1 <= rows <= MAX_DIMENSION):
        raise RequestError(
            ErrorCode.INVALID_COMMAND,
            f"size {cols}x{rows} out of range: cols and rows must be 1..{MAX_DIMENSION}",
        )


def host_signal(number: int) -> int:
    try:
        name = Signal(number).name
    except ValueError:
        raise RequestError(ErrorCode.INVALID_COMMAND, f"unknown signal number {number}") from None
    return int(getattr(signal, f"SIG{name}"))


class Listener(Protocol):
    """What the state uses of a client connection
    (:class:`phux.server.connection.ClientConnection`, which imports this module): who
    it is, for the audit, and whether and where it takes the server's events."""

    @property
    def client_name(self) -> str: ...

    @property
    def peer_pid(self) -> int: ...

    @property
    def peer_uid(self) -> int: ...

    @property
    def minor(self) -> int: ...

    @property
    def wants_events(self) -> bool: ...

    @property
    def outbox(self) -> Outbox: ...


Conn = TypeVar("Conn", bound=Listener)


class ServerState(Generic[Conn]):
    """The terminals, the connections (of type ``Conn``: the state only needs them to
    be a :class:`Listener`) and the metadata, and the operations on them."""

    def __init__(self, config: ServerConfig, nursery: trio.Nursery) -> None:
        self.config = config
        self.nursery = nursery
        self.terminals: dict[int, Terminal] = {}
        self.connections: set[Conn] = set()
        # Kept beside ``connections`` so that a newcomer's limits cost no walk over a
        # thousand clients (a flood of connections without HELLO churns one per accept).
        self.handshaking: dict[Conn, None] = {}
        """Connections that have not sent HELLO, oldest first."""
        self.past_hello: set[Conn] = set()
        self.per_process: Counter[int] = Counter()
        """Connections past HELLO by the peer's pid."""
        self.meta = MetadataHub()
        self.listing = ListingCache(config.list_reread)
        self._next_id = 1
        self.activity = trio.Event()
        """Set (and replaced) whenever terminals or connections come or go."""
        self.shutdown_requested = trio.Event()
        self.replicas = ReplicaHost(config, nursery)
        self.exits = ExitWatch()
        """Every terminal's process exit, through one task (phux.server.exits)."""
        nursery.start_soon(self.exits.run, name="exits")
        self.memory_facts = MemoryFacts(self.set_fact, self.replicas.helper_pids)
        self.replicas.on_helpers = self._helpers_changed
        self.replicas.start_publishing(self.set_fact)
        self.queue_budget = QueueBudget(config.max_queued_total, relieve=self._relieve_queues)
        """Bytes queued in every connection's outbox together."""
        self.journal_budget = JournalBudget(config.max_journal_total, self._relieve_journals)
        """Output bytes all terminals' journals hold together."""
        self.echo_first = EchoFirst(config.echo_first_s)
        """A terminal typed into is read before the floods (phux.server.echo_first)."""
        self.partial_bytes = 0
        """Bytes the connections' incomplete incoming frames take, counted at their
        announced lengths (``ServerConfig.max_partial_frames``)."""
        self.server_id = ""
        self.audit: AuditLog | None = None
        if config.audit_file is not None:
            self.audit = AuditLog(
                config.audit_file, config.audit_max_bytes, config.audit_keep, config.audit_data
            )

    # ------------------------------------------------------------ facts about the server

    def _helpers_changed(self, pids: list[int]) -> None:
        self.set_fact("replica_pids", " ".join(map(str, pids)))

    def set_fact(self, name: str, value: str) -> None:
        """Publish ``phux.server.NAME`` in the global metadata (spec/L3.md §3), on change."""
        key = f"phux.server.{name}"
        raw = value.encode()
        if self.meta.global_scope.get(key) != raw:
            self.meta.global_scope[key] = raw
            self.meta.changed(key, None, raw)

    def audit_input(self, conn: Conn, term: Terminal, data: bytes) -> None:
        if self.audit is None:
            return
        md = term.metadata
        session = md.get("phux.session")
        target = None
        if session is not None:
            window = md.get("phux.window", b"0").decode(errors="replace")
            pane = md.get("phux.pane", b"0").decode(errors="replace")
            target = f"{session.decode(errors='replace')}:{window}.{pane}"
        self.audit.record(
            server_id=self.server_id,
            terminal=term.id,
            target=target,
            client=conn.client_name,
            pid=conn.peer_pid,
            uid=conn.peer_uid,
            data=data,
        )

    # ------------------------------------------------------------ activity

    def admit(self, conn: Conn) -> None:
        """``conn`` is open (and has not sent HELLO yet)."""
        self.connections.add(conn)
        self.handshaking[conn] = None
        self.touch()

    def said_hello(self, conn: Conn, pid: int, admitted: bool) -> None:
        """``conn``, from process ``pid``, sent HELLO, and is now served (``admitted``)
        or being refused."""
        self.handshaking.pop(conn, None)
        if admitted:
            self.past_hello.add(conn)
            self.per_process[pid] += 1

    def forget(self, conn: Conn, pid: int) -> None:
        """``conn``, from process ``pid``, is gone (it may be told more than once)."""
        self.connections.discard(conn)
        self.handshaking.pop(conn, None)
        if conn in self.past_hello:
            self.past_hello.discard(conn)
            self.per_process[pid] -= 1
            if not self.per_process[pid]:
                del self.per_process[pid]
        self.touch()

    def touch(self) -> None:
        self.set_fact("clients", str(len(self.connections)))
        self.activity.set()
        self.activity = trio.Event()

    @property
    def live_terminals(self) -> int:
        return sum(1 for t in self.terminals.values() if not t.closed)

    # ------------------------------------------------------------ lookups

    def get(self, tid: int) -> Terminal:
        term = self.terminals.get(tid)
        if term is None:
            raise RequestError(ErrorCode.TERMINAL_NOT_FOUND, f"no terminal {tid}")
        return term

    def get_alive(self, tid: int) -> Terminal:
        term = self.get(tid)
        if not term.alive:
            raise RequestError(ErrorCode.TERMINAL_EXITED, f"terminal {tid} has exited")
        return term

    # ------------------------------------------------------------ limits

    def _relieve_queues(self) -> None:
        """All queues together are full: the client with the most queued (the one not
        reading, as a rule) is detached, not whoever queues next."""
        biggest = max(self.connections, key=lambda c: c.outbox.queued_bytes, default=None)
        if biggest is not None and biggest.outbox.queued_bytes > 0:
            limit = self.config.max_queued_total
            biggest.outbox.overflow(f"the {limit} bytes the server queues for all are used")

    def _relieve_journals(self) -> None:
        """The journals together passed the budget: the largest shrink, to 7/8 of it.

        One a replica compacts cannot just drop its oldest bytes (a bootstrap would
        start mid-stream): each whose replica lags waits (its reader pauses) until the
        replica has parsed all it was fed, and the replica's checkpoint then replaces
        the journal. A caught-up replica keeps at most ``compact_bytes`` after its
        checkpoint: smaller journals are left alone, so a terminal with little output
        never waits for others' floods. Without a replica the largest journals lose
        their oldest bytes, as the journal's own bound does.
        """
        config = self.config
        budget = self.journal_budget
        excess = budget.used - (budget.limit - budget.limit // 8)
        largest = sorted(
            (t for t in self.terminals.values() if t.journal.size_bytes),
            key=lambda t: t.journal.size_bytes,
            reverse=True,
        )
        for term in largest:
            if excess <= 0:
                break
            journal = term.journal
            size = journal.size_bytes
            if not journal.compacting:
                journal.shrink(min(excess, size))
                excess -= size - journal.size_bytes
            elif size > config.compact_bytes:
                # Nothing goes before its replica has caught up, however long that
                # takes: every one that lags waits, or the others would go on growing.
                self.replicas.catch_up(term)
        log.info("journals over their budget: %d bytes held, at most %d", budget.used, budget.limit)

    def check_input_room(self, term: Terminal, size: int) -> None:
        """Refuse INPUT that would pass the terminal's or the server's input cap (the
        program is not reading). Input to a terminal with nothing queued always fits
        its own cap, so one INPUT of any size can reach a program that reads."""
        config = self.config
        if term.queued_input and term.queued_input + size > config.max_terminal_input:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"terminal {term.id} is not reading its input: {term.queued_input} bytes "
                f"queued, at most {config.max_terminal_input}",
            )
        total = sum(t.queued_input for t in self.terminals.values())
        if total + size > config.max_input_total:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"the server has {total} bytes of input queued for programs that do not "
                f"read it, at most {config.max_input_total}",
            )

    # ------------------------------------------------------------ spawn

    def spawn(self, req: Spawn) -> Terminal:
        # Its own fields, then the server's limit, then uniqueness (proto.md §2.1).
        check_size(req.cols, req.rows)
        metadata: dict[str, bytes] = {}
        for entry in req.metadata:
            check_key(entry.key)
            check_value(entry.key, entry.value, self.config.max_metadata_value)
            metadata[entry.key] = entry.value
        for key in req.unique_keys:
            if key not in metadata:
                raise RequestError(
                    ErrorCode.INVALID_COMMAND, f"unique key {key!r} has no value in metadata"
                )
        if self.live_terminals >= self.config.max_terminals:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"too many terminals: the server's limit is {self.config.max_terminals}",
            )
        for key in req.unique_keys:
            value = metadata[key]
            for other in self.terminals.values():
                if other.alive and other.metadata.get(key) == value:
                    shown = value.decode("utf-8", "replace")
                    raise RequestError(
                        ErrorCode.UNIQUE_CONFLICT,
                        f"{key}={shown!r} is already held by terminal {other.id}",
                    )
        tid = self._next_id
        argv = list(req.argv) or [os.environ.get("SHELL") or "/bin/sh"]
        env = dict(os.environ)
        env["TERM"] = "xterm-256color"
        env["PHUX_SOCKET"] = str(self.config.socket_path)
        env["PHUX_TERMINAL"] = str(tid)
        overrides = {var.name: var.value for var in req.env}
        env.update(overrides)
        # The variable is the server's knob, not the program's.
        env.pop(VARIABLE, None)
        # The pane's mark key and shell are the server's word, never a client's.
        metadata.pop(KEY_METADATA, None)
        metadata.pop(SHELL_METADATA, None)
        start = argv
        if wanted(overrides, self.config.shell_integration):
            start, facts = inject(argv, env)
            metadata.update(facts)
        else:
            env.pop(KEY_VARIABLE, None)
        try:
            process = spawn_on_pty(start, req.cwd, env, req.cols, req.rows)
        except OSError as exc:
            message = describe_spawn_error(argv, req.cwd, exc)
            log.info("spawn failed: %s", message)
            raise RequestError(ErrorCode.SPAWN_FAILED, message) from None
        except (ValueError, TypeError) as exc:  # e.g. NUL in an argument
            raise RequestError(ErrorCode.SPAWN_FAILED, f"cannot start {argv[0]!r}: {exc}") from None
        self._next_id += 1
        term = Terminal(
            tid,
            process,
            self.config,
            req.cols,
            req.rows,
            metadata,
            self._closed,
            on_state=self._state_changed,
            interested=self._state_followed,
            journal_budget=self.journal_budget,
            echo_first=self.echo_first,
            exits=self.exits,
        )
        self.terminals[tid] = term
        self.replicas.add(term)
        self.nursery.start_soon(term.run, name=f"terminal-{tid}")
        log.info("terminal %d spawned: pid %d argv %r", tid, term.pid, argv)
        self.touch()
        event = self.spawned_frame(term, None)
        for conn in self.connections:
            if conn.wants_events:
                conn.outbox.push(event)
        for key in sorted(metadata):
            self.meta.changed(key, tid, metadata[key])
        return term

    @staticmethod
    def spawned_frame(term: Terminal, request_id: int | None) -> TerminalSpawned:
        cols, rows = term.size
        return TerminalSpawned(
            terminal=term.id,
            pid=term.pid,
            cols=cols,
            rows=rows,
            request_id=request_id,
            metadata=entries(term.metadata),
        )

    # ------------------------------------------------------------ kill and exit

    def kill(self, ids: Sequence[int]) -> None:
        """All or nothing, in one step: validate every id, then mark and signal them all."""
        if not ids:
            raise RequestError(ErrorCode.INVALID_COMMAND, "KILL names no terminal")
        terms = [self.get_alive(tid) for tid in ids]
        for term in dict.fromkeys(terms):
            term.kill(self.nursery)
            log.info("terminal %d killed", term.id)
        self.touch()

    def _closed(self, term: Terminal) -> None:
        """A terminal's process was reaped and its output drained."""
        log.info("terminal %d closed: %r", term.id, term.exit_status)
        with contextlib.suppress(OSError):  # `run` locks of a closed terminal are moot
            os.unlink(run_lock_path(self.config.socket_path, term.id))
        # Its metadata stays readable (read-only) while it is retained: its session
        # name is how an agent finds the final screen and exit status (spec/L3.md §1).
        closed = term.encode_closed()
        subscribed = {sub.outbox for sub in term.subscribers}
        for conn in self.connections:
            if conn.wants_events and conn.outbox not in subscribed:
                conn.outbox.push_encoded(closed)
        self.nursery.start_soon(self._forget_later, term)
        self.touch()

    # ------------------------------------------------------------ foreground state

    def state_listeners(self) -> list[Conn]:
        """Connections that follow every terminal's state (events, and a minor that has it)."""
        return [
            conn
            for conn in self.connections
            if conn.wants_events and conn.minor >= MINOR_TERMINAL_STATE
        ]

    def _state_followed(self, term: Terminal) -> bool:
        return any(sub.wants_state for sub in term.subscribers) or bool(self.state_listeners())

    def _state_changed(self, term: Terminal, encoded: bytes) -> None:
        """TERMINAL_STATE to the terminal's subscribers, ordered with its output, and to
        events subscribers that do not follow the terminal (once per connection)."""
        subscribed = set()
        for sub in term.subscribers:
            if sub.wants_state:
                sub.push_frame(encoded)
                subscribed.add(sub.outbox)
        for conn in self.state_listeners():
            if conn.outbox not in subscribed:
                conn.outbox.push_encoded(encoded)

    async def _forget_later(self, term: Terminal) -> None:
        await trio.sleep(self.config.retention_s)
        self.terminals.pop(term.id, None)
        self.replicas.forget(term.id)
        term.journal.release()
        dropped, term.metadata = term.metadata, {}
        for key in sorted(dropped):
            self.meta.changed(key, term.id, None)
        log.info("terminal %d forgotten", term.id)

    # ------------------------------------------------------------ list

    def terminal_list(self, request_id: int, only: TerminalFilter | None = None) -> TerminalList:
        return self.listing.terminal_list(request_id, self.terminals, self.meta.global_scope, only)

    # ------------------------------------------------------------ metadata

    def scope(self, terminal: int | None, *, writing: bool) -> dict[str, bytes]:
        if terminal is None:
            return self.meta.global_scope
        term = self.get_alive(terminal) if writing else self.get(terminal)
        return term.metadata

    def meta_set(self, terminal: int | None, key: str, value: bytes) -> None:
        check_key(key)
        check_value(key, value, self.config.max_metadata_value)
        scope = self.scope(terminal, writing=True)
        scope[key] = value
        if terminal is not None:
            self.terminals[terminal].stamp += 1
        self.meta.changed(key, terminal, value)

    def meta_delete(self, terminal: int | None, key: str) -> None:
        check_key(key)
        scope = self.scope(terminal, writing=True)
        if scope.pop(key, None) is not None:
            if terminal is not None:
                self.terminals[terminal].stamp += 1
            self.meta.changed(key, terminal, None)

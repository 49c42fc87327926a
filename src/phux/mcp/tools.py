"""The phux tools: argument checking, one client call each, JSON rendering.

Each tool is a thin wrapper over the :class:`phux.client.Client` method the
matching CLI verb uses; the only shape of its own is the MCP one the seed
gives (raw ``ls`` counts, the ``outcome`` bodies of ``run`` and ``wait``).
The adapter is long-lived, so it keeps one warm ``Client`` per socket (see
:class:`ClientPool`): a repeated snapshot or wait of a pane it has already
touched needs no new subscription or bootstrap. The calls that write to a
pane take turns on it in arrival order (:mod:`phux.mcp.panes`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import msgspec

from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    PhuxError,
    ProtocolError,
    RunTimedOut,
    ShellNotReady,
)
from phux.client.models import (
    HISTORY_SCHEMA_VERSION,
    HistoryResult,
    KillResult,
    McpRunResult,
    NewPaneResult,
    NewResult,
    RunTimedOutResult,
    SendKeysResult,
    SessionInfo,
    SessionInfoList,
    TagResult,
    WaitOutcome,
)
from phux.client.schemas import object_schema
from phux.client.selectors import split_host
from phux.client.wait import DEFAULT_IDLE_MS
from phux.mcp.names import TITLES, TOOLS
from phux.mcp.notes_tools import NOTES_META, NotesTools
from phux.mcp.panes import PaneLocks, Ticket
from phux.mcp.server import Place, Tool, ToolResult, on_cancel
from phux.runtime_paths import SocketDirError, resolve_socket_path
from phux.timeouts import GRACE, MCP_MAX_TIMEOUT, RUN_TIMEOUT, TIMEOUTS, WAIT_TIMEOUT

if TYPE_CHECKING:
    from phux.client import Client

A = TypeVar("A", bound=msgspec.Struct)

KEEP_WARM = 8
"""Terminal mirrors (subscription + engine) each socket's client keeps warm, LRU."""
MAX_SOCKETS = 4
"""Distinct sockets with a warm client; the least recently used one is closed."""
CALL_DEADLINE = 30.0
"""Overall deadline of the tools that do not block on a condition."""
RUN_DEFAULT_TIMEOUT = RUN_TIMEOUT

# A client whose call failed this way may hold a dead or confused connection.
_BROKEN = (ConnectionLost, DeadlineExceeded, ProtocolError)

# Bounds keep absurd values out (phux.timeouts.MCP_MAX_TIMEOUT says why an hour).
MAX_TIMEOUT_SECS = MCP_MAX_TIMEOUT
MAX_IDLE_MS = 1_000_000_000
Timeout = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIMEOUT_SECS)]
RunTimeout = Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT_SECS)]
IdleMs = Annotated[int, msgspec.Meta(ge=0, le=MAX_IDLE_MS)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]


# ---------------------------------------------------------------- arguments


class _Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None
    host: str | None = None


class LsArgs(_Args):
    pass


class SnapshotArgs(_Args):
    target: str | None = None
    scrollback: NonNegInt | None = None
    cells: bool = False
    schema_version: Literal[3, 4] | None = None


class SendKeysArgs(_Args):
    target: str
    keys: Annotated[list[str], msgspec.Meta(min_length=1)]


class RunArgs(_Args):
    target: str
    command: str
    timeout_secs: RunTimeout = RUN_DEFAULT_TIMEOUT
    force: bool = False


class WaitArgs(_Args):
    target: str | None = None
    until: str | None = None
    regex: str | None = None
    idle_ms: IdleMs | None = None
    prompt: bool = False
    exit: bool = False
    timeout_secs: Timeout = WAIT_TIMEOUT


class HistoryArgs(_Args):
    target: str
    last: NonNegInt | None = None


class NewArgs(_Args):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    shell_integration: bool = True


class PasteArgs(_Args):
    target: str
    text: str


class KillArgs(_Args):
    target: str


class NewWindowArgs(_Args):
    session: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    select: bool = False


class SplitArgs(_Args):
    target: str
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    select: bool = False


class TagArgs(_Args):
    target: str
    tags: Annotated[list[str], msgspec.Meta(min_length=1)]
    remove: bool = False


class BadArguments(Exception):
    pass


def parse_args(kind: type[A], arguments: dict[str, Any]) -> A:
    try:
        return msgspec.convert(arguments, kind, strict=False)
    except msgspec.ValidationError as exc:
        text = str(exc).replace("`$.", "`").replace(" - at `$`", "")
        raise BadArguments(text) from None


# ---------------------------------------------------------------- clients


@dataclass
class _Entry:
    client: Client
    busy: bool = False


def _default_factory(path: str, keep_warm: int) -> Client:
    from phux.client import Client

    return Client(path, keep_warm=keep_warm, client_name="phux-mcp")


def _remote_client(host: str, socket: str | None, keep_warm: int) -> Client:
    """A client of the server on ``host``, over ssh (kept warm like a local one)."""
    from phux.client import Client

    return Client(socket, keep_warm=keep_warm, client_name="phux-mcp", host=host)


class ClientPool:
    """One warm :class:`Client` per distinct socket, for the adapter's life.

    A call takes its socket's client; a call made while that client is busy
    with another (the host called tools in parallel) gets a cold one-shot
    client instead. A client whose connection broke is dropped, so the next
    call reconnects (to a restarted server, say).
    """

    def __init__(
        self,
        factory: Callable[[str, int], Client] = _default_factory,
        *,
        keep_warm: int = KEEP_WARM,
        max_sockets: int = MAX_SOCKETS,
    ) -> None:
        self._factory = factory
        self._keep_warm = keep_warm
        self._max = max_sockets
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    @contextmanager
    def client(self, socket: str | None, host: str | None = None) -> Iterator[tuple[Client, bool]]:
        """Yield ``(client, reused)``; reused means the client served an earlier call.
        ``host``: the server on that machine, over ssh (``socket`` is then its socket)."""
        if host is None:
            path = resolve_socket_path(socket)

            def make(keep_warm: int) -> Client:
                return self._factory(path, keep_warm)

        else:
            path = f"ssh://{host}" + (f"?socket={socket}" if socket else "")

            def make(keep_warm: int) -> Client:
                return _remote_client(host, socket, keep_warm)

        evicted: list[Client] = []
        with self._lock:
            entry = self._entries.get(path)
            oneshot = entry is not None and entry.busy
            reused = entry is not None and not oneshot
            if entry is None:
                entry = _Entry(make(self._keep_warm))
                self._entries[path] = entry
                evicted = self._evict(keep=path)
            if not oneshot:
                entry.busy = True
                self._entries.move_to_end(path)
        for old in evicted:
            _close(old)
        if reused:
            # A warm connection may have died since its last call (the server
            # restarted, say): find out before the call, which may not be safe
            # to repeat, and start afresh. Draining also applies the output
            # that arrived meanwhile to the warm mirrors.
            try:
                entry.client.drain()
            except PhuxError:
                _close(entry.client)
                entry.client = make(self._keep_warm)
                reused = False
        if oneshot:  # a parallel call on this socket: a cold client of its own
            client = make(0)
            try:
                with on_cancel(client.cancel):  # a cancel stops what blocks in it
                    yield client, False
            finally:
                _close(client)
            return
        broken = True
        try:
            with on_cancel(entry.client.cancel):
                yield entry.client, reused
            broken = entry.client.cancelled  # it serves no later call
        except PhuxError as exc:
            broken = isinstance(exc, _BROKEN)
            raise
        finally:
            with self._lock:
                entry.busy = False
                if broken and self._entries.get(path) is entry:
                    del self._entries[path]
            if broken:
                _close(entry.client)

    def _evict(self, keep: str) -> list[Client]:
        """Drop idle clients beyond the bound, least recently used first (lock held)."""
        out: list[Client] = []
        for path in list(self._entries):
            if len(self._entries) <= self._max:
                break
            entry = self._entries[path]
            if path != keep and not entry.busy:
                out.append(self._entries.pop(path).client)
        return out

    def close(self) -> None:
        with self._lock:
            entries = [e for e in self._entries.values() if not e.busy]
            self._entries.clear()
        for entry in entries:
            _close(entry.client)


def _close(client: Client) -> None:
    with contextlib.suppress(Exception):  # closing is best effort, never noisy
        client.close()


# ---------------------------------------------------------------- rendering


def pretty(value: Any) -> str:
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


def _interrupts(keys: Sequence[str]) -> bool:
    """Keys made only of the tty's interrupt keys (the client sends those urgent)."""
    from phux.client.keys import encode_keys, is_interrupt

    try:
        return is_interrupt(encode_keys(keys))
    except PhuxError:
        return False  # an unknown key name: send_keys itself will say so


def _pane_key(client: Client, terminal: int) -> tuple[str, int]:
    """Which pane a turn is for: terminal ids are per server (one adapter may drive
    several, local and over ssh), so the server's address is part of it."""
    return (client.socket_path, terminal)


class _Queued:
    """A writer call holding the ticket it took on arrival (a server :class:`Place`)."""

    def __init__(self, method: Callable[..., ToolResult], ticket: Ticket) -> None:
        self._method = method
        self._ticket = ticket

    def call(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            return self._method(arguments, self._ticket)
        finally:
            self._ticket.leave()

    def leave(self) -> None:
        self._ticket.leave()

    def cancel(self) -> None:
        self._ticket.cancel()


def _error_text(exc: BaseException) -> str:
    code = getattr(exc, "code", "")
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    remedy = getattr(exc, "remedy", "")
    text = f"{code}: {message}" if code else message
    return f"{text} ({remedy})" if remedy else text


# ---------------------------------------------------------------- the tools


_TARGET_GRAMMAR = (
    "TARGET grammar (resolved client-side, as in the CLI): `.` current (the active pane of "
    "the session last acted on), `=` the pane active before that, `name` session: its active "
    "pane (an exited session's name still works while the server keeps its panes), `name:N` "
    "or `name:tag` window, `name:N.M` pane, `@N` pane id (pins one pane), `#tag` tagged panes "
    "(phux_tag). A target that names several panes narrows to the active one, else the "
    "first. The active pane moves only when a call writes to a pane (phux_send_keys, "
    "phux_paste, phux_run), selects one (select=true) or creates a session; reads "
    "(phux_snapshot, phux_wait, phux_history, phux_ls) never move it."
)
_SOCKET_PROP = {
    "type": "string",
    "description": "Server socket path. Default: $PHUX_SOCKET, then "
    "$XDG_RUNTIME_DIR/phux/phux.sock, then /tmp/phux-$UID/phux.sock.",
}
_HOST_PROP = {
    "type": "string",
    "description": "Drive the phux server on this machine ([USER@]HOST) over ssh; a target "
    "may say HOST/selector instead. Default: this machine.",
}
_LONG_WAITS = (
    "MCP clients commonly abandon a request after about 60 s, so keep timeout_secs at 50 or "
    "less and, while the outcome is timed_out, call again: state persists between calls."
)


_TURNS = (
    "Calls that write to one pane (phux_run, phux_send_keys, phux_paste) take turns on it in "
    "the order they arrived, so parallel calls never type into each other; waited_ms in the "
    'result is how long this call waited for its turn (phux_kill and ["C-c"] alone do not '
    "wait: they interrupt)."
)


def _schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**properties, "socket": _SOCKET_PROP, "host": _HOST_PROP},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


class PhuxTools(NotesTools):
    """The catalog, bound to a :class:`ClientPool`."""

    def __init__(self, pool: ClientPool | None = None) -> None:
        self.pool = pool or ClientPool()
        self.locks = PaneLocks()

    def close(self) -> None:
        self.pool.close()

    # ------------------------------------------------------------ plumbing

    def _invoke(
        self,
        kind: type[A],
        arguments: dict[str, Any],
        work: Callable[[Client, A], Any],
        *,
        retry_stale: bool,
    ) -> ToolResult:
        try:
            args = parse_args(kind, arguments)
        except BadArguments as exc:
            return ToolResult(f"invalid arguments: {exc}", True)
        socket = getattr(args, "socket", None)
        host = getattr(args, "host", None)
        prefix, target = split_host(getattr(args, "target", None))
        if prefix is not None:
            # HOST/selector: a pane on another machine (one adapter drives many).
            host = prefix
            args.target = target  # type: ignore[attr-defined]
        try:
            for attempt in (1, 2):
                try:
                    with self.pool.client(socket, host) as (client, reused):
                        return _render(work(client, args))
                except ConnectionLost:
                    # A warm client's connection to a server that has since
                    # restarted: a side-effect-free call tries once more.
                    if not (retry_stale and reused and attempt == 1):
                        raise
            raise AssertionError("unreachable")  # pragma: no cover
        except PhuxError as exc:
            return ToolResult(_error_text(exc), True)
        except (SocketDirError, OSError, ValueError) as exc:
            return ToolResult(_error_text(exc), True)

    @contextmanager
    def _turn(self, ticket: Ticket | None) -> Iterator[Ticket]:
        """The call's ticket: the one taken on arrival, else one taken now."""
        own = ticket is None
        turn = self.locks.ticket() if ticket is None else ticket
        try:
            yield turn
        finally:
            if own:
                turn.leave()

    def _queue(self, method: Callable[..., ToolResult]) -> Place:
        # ``method`` is a writer tool's method: (arguments, ticket) -> ToolResult.
        return _Queued(method, self.locks.ticket())

    # ------------------------------------------------------------ tools

    def ls(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: LsArgs) -> Any:
            infos, panes = client.ls_panes(deadline=Deadline.after(CALL_DEADLINE))
            rows = sorted(infos, key=lambda info: info.name)
            return SessionInfoList(
                sessions=[SessionInfo.of(info, panes.get(info.name, [])) for info in rows]
            )

        return self._invoke(LsArgs, arguments, work, retry_stale=True)

    def snapshot(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: SnapshotArgs) -> Any:
            # The plain data encodes to the Struct's JSON without building the Struct.
            return client.snapshot_data(
                args.target,
                scrollback=args.scrollback,
                cells=args.cells,
                version=args.schema_version,
                deadline=Deadline.after(CALL_DEADLINE),
            )

        return self._invoke(SnapshotArgs, arguments, work, retry_stale=True)

    def send_keys(self, arguments: dict[str, Any], ticket: Ticket | None = None) -> ToolResult:
        def work(client: Client, args: SendKeysArgs) -> Any:
            deadline = Deadline.after(CALL_DEADLINE)
            pane = client.resolve(args.target, deadline)
            if _interrupts(args.keys):
                # C-c (C-\, C-z) alone interrupts: it must reach a running phux_run
                # now, as the server sends it ahead of queued input.
                turn.leave()
                return SendKeysResult.of(client.send_keys(pane.id, args.keys, deadline=deadline))
            with turn.hold(_pane_key(client, pane.terminal), pane.id, deadline) as waited:
                sent = client.send_keys(pane.id, args.keys, deadline=deadline)
            return SendKeysResult.of(sent, waited)

        with self._turn(ticket) as turn:
            return self._invoke(SendKeysArgs, arguments, work, retry_stale=False)

    def paste(self, arguments: dict[str, Any], ticket: Ticket | None = None) -> ToolResult:
        def work(client: Client, args: PasteArgs) -> Any:
            deadline = Deadline.after(CALL_DEADLINE)
            pane = client.resolve(args.target, deadline)
            with turn.hold(_pane_key(client, pane.terminal), pane.id, deadline) as waited:
                sent = client.paste(pane.id, args.text, deadline=deadline)
            return SendKeysResult.of(sent, waited)

        with self._turn(ticket) as turn:
            return self._invoke(PasteArgs, arguments, work, retry_stale=False)

    def run(self, arguments: dict[str, Any], ticket: Ticket | None = None) -> ToolResult:
        def work(client: Client, args: RunArgs) -> Any:
            timeout = args.timeout_secs
            started = time.monotonic()
            # The wait for the pane's turn counts against timeout_secs, as the CLI's
            # wait for the run lock does.
            limit = Deadline.after(timeout)
            pane = client.resolve(args.target, limit)
            with turn.hold(_pane_key(client, pane.terminal), pane.id, limit) as waited:
                # What is left of timeout_secs, but never so little that the command
                # could time out before it was even typed.
                left = max(timeout - (time.monotonic() - started), min(timeout, 1.0))
                deadline = Deadline.after(left + GRACE)
                try:
                    outcome = client.run(
                        pane.id, args.command, timeout=left, force=args.force, deadline=deadline
                    )
                except ShellNotReady:
                    raise  # nothing was typed: an error, not a command still running
                except RunTimedOut as exc:
                    return RunTimedOutResult(
                        command=exc.command, duration_ms=exc.duration_ms, waited_ms=waited
                    )
            return McpRunResult.of_outcome(outcome, waited)

        with self._turn(ticket) as turn:
            return self._invoke(RunArgs, arguments, work, retry_stale=False)

    def wait(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: WaitArgs) -> Any:
            timeout = args.timeout_secs
            deadline = Deadline.after(timeout + GRACE)
            result = client.wait(
                args.target,
                until=args.until,
                regex=args.regex,
                idle_ms=args.idle_ms,
                prompt=args.prompt,
                exit=args.exit,
                timeout=timeout,
                deadline=deadline,
            )
            return WaitOutcome(
                outcome="met" if result.met else "timed_out",
                polls=result.checks,
                state=result.screen.state if args.prompt or args.exit else msgspec.UNSET,
                program=result.screen.program if args.prompt or args.exit else msgspec.UNSET,
                exit_code=result.exit_code if args.exit else msgspec.UNSET,
            )

        text = arguments.get("until") is not None or arguments.get("regex") is not None
        if arguments.get("until") is not None and arguments.get("regex") is not None:
            return ToolResult("invalid arguments: give until or regex, not both", True)
        if sum((text, bool(arguments.get("prompt")), bool(arguments.get("exit")))) > 1:
            return ToolResult("invalid arguments: give one of until/regex, prompt, exit", True)
        return self._invoke(WaitArgs, arguments, work, retry_stale=True)

    def history(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: HistoryArgs) -> Any:
            return client.history(
                args.target, last=args.last, deadline=Deadline.after(CALL_DEADLINE)
            )

        return self._invoke(HistoryArgs, arguments, work, retry_stale=True)

    def new(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: NewArgs) -> Any:
            return client.new(
                args.name,
                cwd=args.cwd,
                command=args.command,
                env=args.env,
                shell_integration=args.shell_integration,
                deadline=Deadline.after(CALL_DEADLINE),
            )

        return self._invoke(NewArgs, arguments, work, retry_stale=False)

    def kill(self, arguments: dict[str, Any]) -> ToolResult:
        # Not queued behind the pane's writers: killing is how a stuck phux_run is ended.
        def work(client: Client, args: KillArgs) -> Any:
            ids = client.kill(args.target, deadline=Deadline.after(CALL_DEADLINE))
            return KillResult(killed=[f"@{terminal}" for terminal in ids])

        return self._invoke(KillArgs, arguments, work, retry_stale=False)

    def new_window(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: NewWindowArgs) -> Any:
            return client.new_window(
                args.session,
                name=args.name,
                command=args.command,
                cwd=args.cwd,
                env=args.env,
                select=args.select,
                deadline=Deadline.after(CALL_DEADLINE),
            )

        return self._invoke(NewWindowArgs, arguments, work, retry_stale=False)

    def split(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: SplitArgs) -> Any:
            return client.split(
                args.target,
                command=args.command,
                cwd=args.cwd,
                env=args.env,
                select=args.select,
                deadline=Deadline.after(CALL_DEADLINE),
            )

        return self._invoke(SplitArgs, arguments, work, retry_stale=False)

    def tag(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: TagArgs) -> Any:
            after = client.tag(
                args.target, args.tags, Deadline.after(CALL_DEADLINE), remove=args.remove
            )
            return TagResult(tags=list(after))

        return self._invoke(TagArgs, arguments, work, retry_stale=False)

    # ------------------------------------------------------------ catalog

    def catalog(self, *, read_only: bool = False) -> list[Tool]:
        """The tools in the order of :data:`phux.mcp.names.TOOLS`, the one list."""
        table: dict[str, tuple[str, dict[str, Any], Callable[..., ToolResult]]] = {
            "phux_ls": (LS_DOC, _schema({}), self.ls),
            "phux_snapshot": (SNAPSHOT_DOC, SNAPSHOT_SCHEMA, self.snapshot),
            "phux_send_keys": (SEND_KEYS_DOC, SEND_KEYS_SCHEMA, self.send_keys),
            "phux_run": (RUN_DOC, RUN_SCHEMA, self.run),
            "phux_wait": (WAIT_DOC, WAIT_SCHEMA, self.wait),
            "phux_new": (NEW_DOC, NEW_SCHEMA, self.new),
            "phux_history": (HISTORY_DOC, HISTORY_SCHEMA, self.history),
            "phux_paste": (PASTE_DOC, PASTE_SCHEMA, self.paste),
            "phux_kill": (KILL_DOC, KILL_SCHEMA, self.kill),
            "phux_new_window": (NEW_WINDOW_DOC, NEW_WINDOW_SCHEMA, self.new_window),
            "phux_split": (SPLIT_DOC, SPLIT_SCHEMA, self.split),
            "phux_tag": (TAG_DOC, TAG_SCHEMA, self.tag),
            **self.notes_catalog(_schema),
        }
        assert list(table) == [name for name, _, _ in TOOLS]
        return [
            self._described(Tool(name, *table[name]))
            for name, _, ro in TOOLS
            if ro or not read_only
        ]

    def _described(self, tool: Tool) -> Tool:
        """``tool`` with its title, annotations, output schema and queue from TOOL_META."""
        meta = TOOL_META.get(tool.name)
        if meta is None:
            return tool
        return dataclasses.replace(
            tool,
            title=meta.title,
            annotations=meta.annotations,
            output_schema=meta.output,
            queue=functools.partial(self._queue, tool.call) if meta.queued else None,
        )


@dataclass(frozen=True)
class ToolMeta:
    title: str
    annotations: dict[str, bool]
    output: Callable[[], dict[str, Any]] | None
    queued: bool = False
    """It writes to a pane: it takes its turn there in arrival order."""


def _hints(
    *, read_only: bool, destructive: bool, idempotent: bool, open_world: bool
) -> dict[str, bool]:
    return {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }


_READ = _hints(read_only=True, destructive=False, idempotent=True, open_world=False)
# Typing into a shell can do anything the shell can, to anything it reaches.
_TYPE = _hints(read_only=False, destructive=True, idempotent=False, open_world=True)


def _screen_schema() -> dict[str, Any]:
    from phux.engine.screen_state import ScreenState

    return object_schema(ScreenState, schema_version=(3, 4))


TOOL_META: dict[str, ToolMeta] = {
    "phux_ls": ToolMeta(TITLES["phux_ls"], _READ, lambda: object_schema(SessionInfoList)),
    "phux_snapshot": ToolMeta(TITLES["phux_snapshot"], _READ, _screen_schema),
    "phux_send_keys": ToolMeta(
        TITLES["phux_send_keys"], _TYPE, lambda: object_schema(SendKeysResult), queued=True
    ),
    "phux_run": ToolMeta(
        TITLES["phux_run"],
        _TYPE,
        lambda: object_schema(McpRunResult, RunTimedOutResult),
        queued=True,
    ),
    "phux_wait": ToolMeta(TITLES["phux_wait"], _READ, lambda: object_schema(WaitOutcome)),
    "phux_new": ToolMeta(
        TITLES["phux_new"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewResult),
    ),
    "phux_paste": ToolMeta(
        TITLES["phux_paste"], _TYPE, lambda: object_schema(SendKeysResult), queued=True
    ),
    "phux_history": ToolMeta(
        TITLES["phux_history"],
        _READ,
        lambda: object_schema(HistoryResult, schema_version=HISTORY_SCHEMA_VERSION),
    ),
    "phux_kill": ToolMeta(
        TITLES["phux_kill"],
        _hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        lambda: object_schema(KillResult),
    ),
    "phux_new_window": ToolMeta(
        TITLES["phux_new_window"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewPaneResult),
    ),
    "phux_split": ToolMeta(
        TITLES["phux_split"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewPaneResult),
    ),
    "phux_tag": ToolMeta(
        TITLES["phux_tag"],
        _hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        lambda: object_schema(TagResult),
    ),
    **{name: ToolMeta(TITLES[name], *meta) for name, meta in NOTES_META.items()},
}
"""Per tool: the MCP metadata newer protocol revisions show (see phux.mcp.server)."""


def _render(value: Any) -> ToolResult:
    raw = msgspec.json.encode(value)
    text = msgspec.json.format(raw, indent=2).decode()
    # Only Structs have a declared schema; structuredContent must be an object.
    return ToolResult(text, structured=raw if raw.startswith(b"{") else None)


# ---------------------------------------------------------------- descriptions

LS_DOC = (
    "List the sessions on the running phux server (does not start one). Returns "
    '{"sessions": [{"name", "window_count", "attached_client_count", "exited", "panes": [{"id", '
    '"window", "window_name", "index", "cols", "rows", "tags", "title", "cwd", "program", '
    '"state"}]}]}, sorted by name; a pane\'s program is its foreground program, its state '
    "prompt | continuation | running | hidden_input | tui | exited. exited is true for a "
    "session whose panes all exited and that the server still keeps (its name still reaches "
    "them). "
    "Note: these are the raw counts; the CLI's `ls --json` calls them windows/attached. "
    "Returns at once (at most 30 s against a wedged server)."
)

SNAPSHOT_DOC = (
    "Read a pane's screen as structured data (ScreenState 4: schema_version, pane, cols, rows, "
    "cursor, lines, scrollback, title, wrapped, alternate, styles when asked, program = the "
    "foreground program, state = prompt | continuation | running | hidden_input | tui | "
    "exited). Side-effect-free: never attaches or resizes, and the session's active pane "
    "stays. target is optional (default: `.`). scrollback: absent = viewport only, 0 = all "
    "retained history, N = the newest N history rows; empty while alternate is true (a "
    "full-screen program: history belongs to the main screen). cells=true adds `styles`: "
    "runs of styled text {row, col, width, text, semantic?, style} with only the "
    "non-default SGR flags and colours "
    "(schema_version=3 gives the old per-cell `cells` instead, for one version). Repeated "
    "snapshots of a pane are served from a warm local mirror. Returns at once (at most 30 s). "
    + _TARGET_GRAMMAR
)

SNAPSHOT_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector; default: last session."},
        "scrollback": {
            "type": "integer",
            "minimum": 0,
            "description": "Absent: viewport only; 0: all history; N: newest N history rows.",
        },
        "cells": {
            "type": "boolean",
            "default": False,
            "description": "Include the styled text runs and OSC 133 marks (`styles`).",
        },
        "schema_version": {
            "type": "integer",
            "enum": [3, 4],
            "description": "3: the previous shape, per-cell `cells` (kept for one version).",
        },
    }
)

SEND_KEYS_DOC = (
    "Send keys to a pane (no attach, no resize). Each entry of keys is a named key (Enter, "
    "Tab, Escape, BSpace, Up, Down, Left, Right, Home, End, PageUp, PageDown, F1-F12, C-c, "
    "M-x, ...) or a literal string typed as is, tmux-style: to run a command send "
    '["make test", "Enter"]. Returns {"sent": true, "pane": "@N", "waited_ms"} once the pane '
    "has the bytes; it does not wait for any output (use phux_wait). "
    + _TURNS
    + " Returns at once when the pane is free (at most 30 s in all). "
    + _TARGET_GRAMMAR
)
SEND_KEYS_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "Named keys or literal strings, sent in order.",
        },
    },
    ["target", "keys"],
)

_AFTER_TIMED_OUT = (
    "Do not call phux_run again for a command that timed out: that would type a second "
    "command into the first. Call phux_wait with prompt = true until the prompt returns, "
    "then phux_snapshot to read the output, or phux_send_keys "
    '["C-c"] to interrupt it.'
)
RUN_DOC = (
    "Run a shell command in a pane and return its RunResult: "
    '{"command", "exit_code", "output", "duration_ms", "truncated", "waited_ms"}. In panes '
    "phux started with bash, zsh, fish or sh it types exactly the command and Enter (the "
    "shell's OSC 133 marks give the output and exit code), else it brackets the command with "
    "printed markers. It refuses at once, typing nothing, unless the pane is at an idle shell "
    "prompt: an error `pane_busy` naming what holds the pane (vim, less, python3, cat, a "
    "continuation prompt, pending input, a hidden-input prompt); force=true types anyway. "
    "An unbalanced quote is interrupted with C-c and reported (`incomplete_command`); the "
    "pane dying meanwhile is `pane_exited`. A line that runs no command returns at once "
    "(a comment: exit_code 0, no output; a syntax error: exit_code 2, the shell's message). "
    "Blocks until the command finishes (and its next "
    f"prompt is drawn) or timeout_secs pass (default {RUN_TIMEOUT:g}, more than 0); on "
    'timeout it returns {"outcome": "timed_out", "command", "duration_ms", "waited_ms"} and '
    "the command keeps running. "
    + _AFTER_TIMED_OUT
    + " MCP clients commonly abandon a request after about 60 s, so keep timeout_secs at 50 "
    "or less: for a command that may run longer, start it with phux_send_keys "
    '[command, "Enter"] and call phux_wait with prompt = true. '
    + _TURNS
    + " "
    + TIMEOUTS
    + " "
    + _TARGET_GRAMMAR
)
RUN_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "command": {"type": "string", "description": "The command line to run."},
        "timeout_secs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": RUN_DEFAULT_TIMEOUT,
            "description": f"Stop waiting after this long (default {RUN_TIMEOUT:g}; more than "
            f"0, at most {MAX_TIMEOUT_SECS:g}); the command keeps running.",
        },
        "force": {
            "type": "boolean",
            "default": False,
            "description": "Type the command even when the pane is not at an idle shell prompt.",
        },
    },
    ["target", "command"],
)

WAIT_DOC = (
    "Block until a pane meets a condition: until = some visible line contains this text; "
    "regex = a Python regex matches some visible line; "
    "prompt = true: the pane's shell is at an idle prompt (with shell integration: its "
    "prompt drawn, nothing typed; without: the shell holds the terminal and the screen was "
    "still for idle_ms); exit = true: the pane's program exited; else the screen has been "
    f"still for idle_ms (default {DEFAULT_IDLE_MS} ms). Give at most one of until, regex, "
    'prompt, exit. Returns {"outcome": "met" | "timed_out", "polls": N}, plus "state" and '
    '"program" with prompt or exit, and "exit_code" (the status, 128+N for signal N) with '
    "exit; a timeout is an outcome, not an error. Side-effect-free. Blocks up to "
    f"timeout_secs (default {WAIT_TIMEOUT:g}; 0 checks the current state once, watching "
    "only as long as the condition needs: idle_ms of quiet, or 100 ms for a prompt). "
    + _LONG_WAITS
    + " Tip: match text that only the command's output prints, not the command line you "
    "typed (its echo is visible too). target is optional (default: `.`). " + _TARGET_GRAMMAR
)
WAIT_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector; default: last session."},
        "until": {"type": "string", "description": "Succeed once a visible line contains this."},
        "regex": {
            "type": "string",
            "description": "Succeed once this Python regex matches a visible line.",
        },
        "prompt": {
            "type": "boolean",
            "default": False,
            "description": "Succeed once the pane's shell is at an idle prompt.",
        },
        "exit": {
            "type": "boolean",
            "default": False,
            "description": "Succeed once the pane's program exited (gives exit_code).",
        },
        "idle_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_IDLE_MS,
            "description": "Succeed once the screen is unchanged this long (ms).",
        },
        "timeout_secs": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": WAIT_TIMEOUT,
            "description": f"Give up after this long (default {WAIT_TIMEOUT:g}; 0 checks the "
            f"current state once; at most {MAX_TIMEOUT_SECS:g}). Keep <= 50.",
        },
    }
)

HISTORY_DOC = (
    "List the commands a pane's shell ran, oldest first, rebuilt from the pane's own output "
    "(the OSC 133 marks of the shell integration phux injects into bash, zsh, fish and sh): "
    "commands typed by agents and by a person attached alike, the newest 1024, also those "
    "whose output left the pane's history (output empty, truncated true). "
    'Returns {"schema_version": 1, "pane": "@N", "commands": [{"command", '
    '"cwd", "exit_code", "started_ms", "duration_ms", "running", "output", "truncated"}]}; '
    "exit_code/started_ms/duration_ms are null when unknown, truncated when the start of the "
    "output left the history. last = only the newest N commands. Side-effect-free; returns "
    "at once (at most 30 s). " + _TARGET_GRAMMAR
)
HISTORY_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "last": {
            "type": "integer",
            "minimum": 0,
            "description": "Only the newest N commands (default: all).",
        },
    },
    ["target"],
)

_ENV_DOC = (
    "A pane's environment is the server's (not this adapter's: the agent's venv or exported "
    "variables do not reach it), plus PHUX_TERMINAL, PHUX_SOCKET and TERM, plus env, which "
    "wins."
)
_ENV_PROP = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": 'Variables set in the pane over the server\'s environment ({"VAR": '
    '"value"}, tmux\'s -e).',
}
NEW_DOC = (
    "Create a named session on the running server without attaching (does not start a "
    "server: with none running it fails). command is the seed pane's argv (default: the "
    "server's shell); cwd its working directory. A shell gets phux's invisible prompt and "
    "command marks unless shell_integration is false. A name already in use is rejected. "
    + _ENV_DOC
    + ' Returns {"session": NAME, "terminal_id": N}; target the pane as NAME (the session\'s '
    "active pane, which moves when another pane is written to) or @N (this pane, always). "
    "Returns at once (at most 30 s)."
)
NEW_SCHEMA = _schema(
    {
        "name": {"type": "string", "minLength": 1, "description": "Name of the new session."},
        "command": {
            "type": "array",
            "items": {"type": "string"},
            "description": "argv of the seed pane; omit or [] for the default shell.",
        },
        "cwd": {"type": "string", "description": "Working directory of the seed pane."},
        "env": _ENV_PROP,
        "shell_integration": {
            "type": "boolean",
            "description": "false: start a shell without phux's prompt/command marks "
            "(default true).",
        },
    },
    ["name"],
)

PASTE_DOC = (
    "Paste text into a pane as one paste: bracketed (ESC [200~ ... ESC [201~) when the "
    "program there enabled bracketed paste, so an editor or shell takes it as text and runs "
    "nothing by itself; typed as is otherwise. Unlike phux_send_keys, no word is a key name. "
    'Returns {"sent": true, "pane": "@N", "waited_ms"} once the pane has the bytes. '
    + _TURNS
    + " Returns at once when the pane is free (at most 30 s in all). "
    + _TARGET_GRAMMAR
)
PASTE_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "text": {"type": "string", "description": "The text to paste (newlines included)."},
    },
    ["target", "text"],
)

KILL_DOC = (
    "Kill what target names, as `phux kill` does: a session (all its panes), a window, or "
    'one pane (`.` is the current pane only). Returns {"killed": ["@N", ...]}. Destructive: '
    "the programs there end. It does not wait for other calls on the pane, so it also ends "
    "a phux_run that is stuck. Returns at once (at most 30 s). " + _TARGET_GRAMMAR
)
KILL_SCHEMA = _schema(
    {"target": {"type": "string", "description": "Session, window or pane selector."}},
    ["target"],
)

_ARGV_PROP = {
    "type": "array",
    "items": {"type": "string"},
    "description": "argv of the new pane; omit or [] for the default shell.",
}
_CWD_PROP = {"type": "string", "description": "Working directory of the new pane."}
_SELECT_PROP = {
    "type": "boolean",
    "description": "Make the new pane its session's active pane, which the session's name "
    "then targets (default false: the active pane stays; target the new one by @N).",
}

NEW_WINDOW_DOC = (
    "Add a window to a live session: its pane 0 runs command (default: the server's shell), "
    "sized like the session's active pane. name names the window for `session:name` "
    'targets. Returns {"session", "window", "pane", "terminal_id"}; target it as '
    "session:WINDOW.0 or @N: the session's name still names its active pane unless "
    "select is true. " + _ENV_DOC + " Returns at once (at most 30 s)."
)
NEW_WINDOW_SCHEMA = _schema(
    {
        "session": {"type": "string", "minLength": 1, "description": "An existing session."},
        "name": {"type": "string", "description": "Window name (not a number; no `:` `.` `,`)."},
        "command": _ARGV_PROP,
        "cwd": _CWD_PROP,
        "env": _ENV_PROP,
        "select": _SELECT_PROP,
    },
    ["session"],
)

SPLIT_DOC = (
    "Add a pane to the window of the pane target names, with the next pane index and the "
    'same size, running command (default: the server\'s shell). Returns {"session", "window", '
    '"pane", "terminal_id"}; target it as session:W.P or @N: the session\'s name still '
    "names its active pane unless select is true. "
    + _ENV_DOC
    + " Returns at once (at most 30 s). "
    + _TARGET_GRAMMAR
)
SPLIT_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "command": _ARGV_PROP,
        "cwd": _CWD_PROP,
    },
    ["target"],
)

TAG_DOC = (
    "Tag the pane target names (or with remove=true, untag it), so `#tag` selects it. "
    'Returns {"tags": [...]}: the pane\'s tags after. Tags have no `,` `:` `.` or spaces. '
    "Returns at once (at most 30 s). " + _TARGET_GRAMMAR
)
TAG_SCHEMA = _schema(
    {
        "target": {"type": "string", "description": "Pane selector."},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "Tags to add (or remove).",
        },
        "remove": {"type": "boolean", "description": "Remove the tags instead (default false)."},
    },
    ["target", "tags"],
)

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
from collections.abc import Callable, Iterator, Mapping, Sequence
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
from phux.timeouts import GRACE, MCP_MAX_TIMEOUT, RUN_TIMEOUT, WAIT_TIMEOUT

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

    def make_client(self) -> Client:
        """A client of the default server of its own (not pooled), for a thread that
        keeps one for long: the resource watcher (phux.mcp.resources)."""
        return self._factory(resolve_socket_path(None), 0)

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


# The tool listing is sent to the host's model on every conversation (issue 26: keep
# tools/list under 12 KB): descriptions say what a model needs to call the tool
# right, once; the rest is in the instructions (phux.skill) and docs/mcp.md.
_TARGET = "target: see phux_snapshot."
_TARGET_GRAMMAR = (
    "Targets: `.` current pane, `=` the previous one, `name` a session's active pane, "
    "`name:N` window, `name:N.M` pane, `@N` pane id, `#tag`. Reads never move the active pane."
)
_SOCKET_PROP = {"type": "string"}
_HOST_PROP = {"type": "string"}


def _schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """An object schema with the common ``socket`` (the server's socket path; default
    $PHUX_SOCKET, then the per-user one) and ``host`` ([USER@]HOST over ssh)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**properties, "socket": _SOCKET_PROP, "host": _HOST_PROP},
    }
    if required:
        schema["required"] = list(required)
    return schema


def brief_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """What a model needs of an output schema: the root's fields and their JSON types.

    The full schemas (nested shapes, descriptions) are the files in spec/schemas/;
    inlined in every listing they cost an agent's context more than the tools
    themselves. A union of objects (phux_run) lists every variant's fields; nothing is
    ``required`` (a model reads names and types; the tools are the validators), and
    ``schema_version`` is left out (the result still carries it)."""
    defs: Mapping[str, Any] = schema.get("$defs", {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        return node

    def type_of(node: Mapping[str, Any]) -> dict[str, Any]:
        node = resolve(node)
        if "type" in node:
            return {"type": node["type"]}
        if "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            kinds = {_JSON_TYPES.get(type(v), "string") for v in values}
            return {"type": kinds.pop()} if len(kinds) == 1 else {}
        types: list[Any] = []
        for option in node.get("anyOf", ()):
            kind = type_of(option).get("type")
            for one in kind if isinstance(kind, list) else [kind]:
                if one is not None and one not in types:
                    types.append(one)
        if not types:
            return {}
        return {"type": types[0] if len(types) == 1 else types}

    root = resolve(schema)
    variants = [resolve(v) for v in root.get("anyOf", ())] or [root]
    properties: dict[str, Any] = {}
    for variant in variants:
        for name, prop in variant.get("properties", {}).items():
            if name != "schema_version":  # the shape's version: for code, not a model
                properties.setdefault(name, type_of(prop))
    return {"type": "object", "properties": properties}


_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


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
                sessions=[
                    SessionInfo.of(info, panes.get(info.name, []), local=client.host is None)
                    for info in rows
                ]
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
            output_schema=_briefed(meta.output),
            queue=functools.partial(self._queue, tool.call) if meta.queued else None,
        )


def _briefed(output: Callable[[], dict[str, Any]] | None) -> Callable[[], dict[str, Any]] | None:
    """The listing's output schema: :func:`brief_schema` of the full one."""
    if output is None:
        return None
    return lambda: brief_schema(output())


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
    "List the sessions and their panes (id, window, index, size, tags, title, cwd, "
    "program, state). Any tool's socket/host: another server's socket path, [USER@]HOST "
    "(ssh)."
)

SNAPSHOT_DOC = (
    "Read a pane's screen (lines, cursor, program, state = prompt | continuation | "
    "running | hidden_input | tui | exited). scrollback: absent = none, 0 = all, N = "
    "newest N rows. cells=true adds styled runs. " + _TARGET_GRAMMAR + " Default `.`."
)
SNAPSHOT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "scrollback": {"type": "integer", "minimum": 0},
        "cells": {"type": "boolean"},
        "schema_version": {"type": "integer", "enum": [3, 4]},
    }
)

SEND_KEYS_DOC = (
    "Type keys into a pane: key names (Enter, Tab, Escape, C-c, M-x, Up, F1, ...) or "
    'literal text, tmux-style: ["make test", "Enter"]. Does not wait for output (use '
    "phux_wait). " + _TARGET
)
SEND_KEYS_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    ["target", "keys"],
)

RUN_DOC = (
    "Run a shell command; returns exit_code and output. Types nothing (pane_busy) "
    "unless the pane's shell is at an idle prompt (force=true types anyway). On timeout: "
    "outcome timed_out, the command keeps running; do not run it again: call phux_wait "
    "with prompt = true, or send C-c. Hosts often give up after 60 s: keep timeout_secs "
    "<= 50; start longer jobs with phux_send_keys. " + _TARGET
)
RUN_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "command": {"type": "string"},
        "timeout_secs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": RUN_DEFAULT_TIMEOUT,
        },
        "force": {"type": "boolean"},
    },
    ["target", "command"],
)

WAIT_DOC = (
    "Block until a pane meets one condition: until (a visible line contains it), regex "
    "(Python), prompt (its shell is idle at a prompt), exit (its program exited: "
    f"exit_code), else idle_ms of no change (default {DEFAULT_IDLE_MS}). outcome: met | "
    "timed_out. Match text only the output prints (your typed command shows too). Hosts "
    "often give up after 60 s: keep timeout_secs <= 50 and call again; 0 checks once."
)
WAIT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "until": {"type": "string"},
        "regex": {"type": "string"},
        "prompt": {"type": "boolean"},
        "exit": {"type": "boolean"},
        "idle_ms": {"type": "integer", "minimum": 0, "maximum": MAX_IDLE_MS},
        "timeout_secs": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": WAIT_TIMEOUT,
        },
    }
)

HISTORY_DOC = (
    "List the commands a pane's shell ran, oldest first (command, cwd, exit_code, "
    "duration_ms, output), typed by agents or people. last: the newest N. " + _TARGET
)
HISTORY_SCHEMA = _schema(
    {"target": {"type": "string"}, "last": {"type": "integer", "minimum": 0}},
    ["target"],
)

_ENV_DOC = "env: variables added to the server's environment."
_ENV_PROP = {"type": "object", "additionalProperties": {"type": "string"}}
_ARGV_PROP = {"type": "array", "items": {"type": "string"}}
NEW_DOC = (
    "Create a session on the running server; its pane runs command (argv; default: "
    "a shell) in cwd. " + _ENV_DOC + " Target @terminal_id to pin the pane."
)
NEW_SCHEMA = _schema(
    {
        "name": {"type": "string", "minLength": 1},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "shell_integration": {"type": "boolean"},
    },
    ["name"],
)

PASTE_DOC = (
    "Paste text into a pane as one (bracketed) paste: a shell runs nothing until Enter. " + _TARGET
)
PASTE_SCHEMA = _schema(
    {"target": {"type": "string"}, "text": {"type": "string"}},
    ["target", "text"],
)

KILL_DOC = "Kill a session, window or pane (`.`: one pane); also ends a stuck phux_run. " + _TARGET
KILL_SCHEMA = _schema({"target": {"type": "string"}}, ["target"])

_SELECT_DOC = "select=true: it becomes the session's active pane."

NEW_WINDOW_DOC = (
    "Add a window (name: for `session:name`) whose pane runs command (default: a shell). "
    + _SELECT_DOC
    + " "
    + _ENV_DOC
)
NEW_WINDOW_SCHEMA = _schema(
    {
        "session": {"type": "string", "minLength": 1},
        "name": {"type": "string"},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "select": {"type": "boolean"},
    },
    ["session"],
)

SPLIT_DOC = (
    "Add a pane to target's window, running command (default: a shell). "
    + _SELECT_DOC
    + " "
    + _ENV_DOC
)
SPLIT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "select": {"type": "boolean"},
    },
    ["target"],
)

TAG_DOC = "Tag a pane (remove=true: untag) so `#tag` selects it. " + _TARGET
TAG_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "remove": {"type": "boolean"},
    },
    ["target", "tags"],
)

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

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    PhuxError,
    RunTimedOut,
    ShellNotReady,
)
from phux.client.models import (
    KillResult,
    McpRunResult,
    RunTimedOutResult,
    SendKeysResult,
    SessionInfo,
    SessionInfoList,
    TagResult,
    WaitOutcome,
)
from phux.client.selectors import split_host
from phux.mcp.names import TOOLS
from phux.mcp.notes_tools import NotesTools
from phux.mcp.panes import PaneLocks, Ticket
from phux.mcp.server import Place, Tool, ToolResult
from phux.runtime_paths import SocketDirError
from phux.timeouts import GRACE

if TYPE_CHECKING:
    from phux.client import Client
from phux.mcp.catalog import (
    HISTORY_DOC,
    HISTORY_SCHEMA,
    KILL_DOC,
    KILL_SCHEMA,
    LS_DOC,
    NEW_DOC,
    NEW_SCHEMA,
    NEW_WINDOW_DOC,
    NEW_WINDOW_SCHEMA,
    PASTE_DOC,
    PASTE_SCHEMA,
    RUN_DOC,
    RUN_SCHEMA,
    SEND_KEYS_DOC,
    SEND_KEYS_SCHEMA,
    SNAPSHOT_DOC,
    SNAPSHOT_SCHEMA,
    SPLIT_DOC,
    SPLIT_SCHEMA,
    TAG_DOC,
    TAG_SCHEMA,
    TOOL_META,
    WAIT_DOC,
    WAIT_SCHEMA,
    A,
    BadArguments,
    HistoryArgs,
    KillArgs,
    LsArgs,
    NewArgs,
    NewWindowArgs,
    PasteArgs,
    RunArgs,
    SendKeysArgs,
    SnapshotArgs,
    SplitArgs,
    TagArgs,
    WaitArgs,
    _briefed,
    _schema,
    parse_args,
)
from phux.mcp.clients import ClientPool

CALL_DEADLINE = 30.0
"""Overall deadline of the tools that do not block on a condition."""


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


def _render(value: Any) -> ToolResult:
    raw = msgspec.json.encode(value)
    text = msgspec.json.format(raw, indent=2).decode()
    # Only Structs have a declared schema; structuredContent must be an object.
    return ToolResult(text, structured=raw if raw.startswith(b"{") else None)

"""The agent-facing result shapes: msgspec Structs whose JSON is the documented contract.

``ScreenState`` lives in :mod:`phux.engine.screen_state` (one projection code
path) and is re-exported here.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from phux.client.run_base import RunOutcome
    from phux.client.selectors import Pane, Session
    from phux.engine.screen_state import ScreenState as ScreenState


def __getattr__(name: str) -> Any:
    # ScreenState is imported lazily: importing the engine costs ~80 ms, which a
    # one-shot verb that never replays output should not pay.
    if name == "ScreenState":
        from phux.engine.screen_state import ScreenState

        globals()["ScreenState"] = ScreenState
        return ScreenState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


LS_SCHEMA_VERSION = 1
ERROR_SCHEMA_VERSION = 1


PaneStateName = typing.Literal["prompt", "continuation", "running", "hidden_input", "tui", "exited"]


class PaneSummary(msgspec.Struct, kw_only=True):
    """One pane of a session in ``phux ls --json --panes``."""

    id: str
    """The pane as a selector, ``@N``."""
    window: int
    window_name: str | None
    index: int
    cols: int
    rows: int
    tags: list[str]
    title: str | None
    """Not tracked without replaying the pane: always null here; ``phux snapshot``
    reports the title."""
    cwd: str | None
    """The working directory of the pane's foreground process, read from /proc
    (null when unreadable)."""
    program: str | None
    """The foreground program's name, as the server reads it from the PTY."""
    state: PaneStateName
    """What the pane is doing (``phux.client.pane_state``): from the PTY's foreground
    and tty modes alone here (``phux snapshot`` adds its replay of the marks)."""

    @classmethod
    def of(cls, pane: Pane, *, local: bool = True) -> PaneSummary:
        """``local``: the server runs on this machine (its pids are this /proc's); for a
        server reached over ssh ``cwd`` is null, never a local process's."""
        from phux.client.pane_state import project

        fg = pane.foreground
        return cls(
            id=pane.id,
            window=pane.window or 0,
            window_name=pane.window_name,
            index=pane.pane or 0,
            cols=pane.cols,
            rows=pane.rows,
            tags=list(pane.tags),
            title=None,
            cwd=_proc_cwd(fg.pgrp if fg is not None else None, pane.pid) if local else None,
            program=(fg.name or None) if fg is not None else None,
            state=project(pane, None)[1],  # type: ignore[arg-type]
        )


def _proc_cwd(*pids: int | None) -> str | None:
    import os

    for pid in pids:
        if pid:
            try:
                return os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
    return None


class SessionSummary(msgspec.Struct, kw_only=True):
    """One row of ``phux ls --json``."""

    name: str
    windows: int
    attached: bool
    exited: bool = False
    """Every pane of the session exited; the server still keeps them (final screen,
    exit status: ``phux snapshot NAME``, ``phux wait --exit @N``) until retention ends."""
    panes: list[PaneSummary] | msgspec.UnsetType = msgspec.UNSET
    """Only with ``--panes``: every pane (live, or for an exited session its
    retained ones), ordered by window, then index."""


class SessionInfo(msgspec.Struct, kw_only=True):
    """One row of the MCP ``phux_ls`` tool: a session with the raw counts (seed 000 §3.1).

    Built from a ``selectors.Session`` (what ``Client.ls`` returns), whose
    terminal list the tool does not show.
    """

    name: str
    window_count: int
    attached_client_count: int
    exited: bool = False
    """Every pane exited; the server still keeps them until retention ends."""
    panes: list[PaneSummary] = msgspec.field(default_factory=list)
    """The session's panes (as ``phux ls --json --panes`` lists them)."""

    @classmethod
    def of(cls, session: Session, panes: Iterable[Pane] = (), *, local: bool = True) -> SessionInfo:
        return cls(
            name=session.name,
            window_count=session.window_count,
            attached_client_count=session.attached_client_count,
            exited=session.exited,
            panes=[PaneSummary.of(p, local=local) for p in panes],
        )


class SessionList(msgspec.Struct, kw_only=True):
    """``phux ls --json`` (SessionListJson, schema_version 1), name-sorted."""

    schema_version: int = LS_SCHEMA_VERSION
    sessions: list[SessionSummary] = msgspec.field(default_factory=list)

    @classmethod
    def from_infos(
        cls,
        infos: Iterable[Session],
        panes: dict[str, list[Pane]] | None = None,
        *,
        local: bool = True,
    ) -> SessionList:
        """``panes`` (session name -> its panes) adds each session's ``panes`` list;
        ``local`` as in :meth:`PaneSummary.of`."""
        rows = [
            SessionSummary(
                name=info.name,
                windows=info.window_count,
                attached=info.attached_client_count > 0,
                exited=info.exited,
                panes=msgspec.UNSET
                if panes is None
                else [PaneSummary.of(p, local=local) for p in panes.get(info.name, [])],
            )
            for info in infos
        ]
        return cls(sessions=sorted(rows, key=lambda r: r.name))


class RunResult(msgspec.Struct, kw_only=True):
    """``phux run --json`` on completion."""

    command: str
    exit_code: int
    output: str
    duration_ms: int
    truncated: bool

    @classmethod
    def of(cls, outcome: RunOutcome) -> RunResult:
        """The JSON shape of what ``Client.run`` returned."""
        return cls(
            command=outcome.command,
            exit_code=outcome.exit_code,
            output=outcome.output,
            duration_ms=outcome.duration_ms,
            truncated=outcome.truncated,
        )


class NewPaneResult(msgspec.Struct, kw_only=True):
    """``phux new-window --json`` / ``phux split --json``: the pane created."""

    session: str
    window: int
    pane: int
    terminal_id: int


class NewResult(msgspec.Struct, kw_only=True):
    """``phux new --json -s NAME``: a flat object without schema_version."""

    session: str
    terminal_id: int


class SendKeysResult(msgspec.Struct, kw_only=True):
    """The MCP ``phux_send_keys`` and ``phux_paste`` result; ``pane`` is ``@N``;
    ``waited_ms`` how long the call waited for the pane's earlier writers (the
    adapter types into one pane one call at a time, in arrival order)."""

    sent: bool
    pane: str
    waited_ms: int = 0

    @classmethod
    def of(cls, pane: Pane, waited_ms: int = 0) -> SendKeysResult:
        """The result for keys ``Client.send_keys`` delivered to ``pane``."""
        return cls(sent=True, pane=pane.id, waited_ms=waited_ms)


class WaitResult(msgspec.Struct, kw_only=True):
    """``met`` false means the timeout passed; ``screen`` is the last state seen;
    ``exit_code`` the pane's exit status once its program exited (``wait --exit``:
    the code, or 128 + the signal), else null. ``lost_bytes``: output the server
    dropped for this client while it fell behind (spec/L1.md §6), which a text
    condition never searched (the screen after it was): a line shown only there
    went unseen. 0 normally."""

    met: bool
    checks: int
    screen: ScreenState
    exit_code: int | None = None
    lost_bytes: int = 0


# ---------------------------------------------------------------- watch events


class _Event(msgspec.Struct, kw_only=True, tag_field="event"):
    terminal: str


class TitleChanged(_Event, tag="title_changed"):
    title: str


class Bell(_Event, tag="bell"):
    pass


class Dirty(_Event, tag="dirty"):
    pass


class Idle(_Event, tag="idle"):
    pass


class PaneSpawned(_Event, tag="pane_spawned"):
    pass


class PaneClosed(_Event, tag="pane_closed"):
    exit_status: int | None = None
    signal: int | None = None


class CommandStarted(_Event, tag="command_started"):
    """A command started at the shell's prompt (OSC 133 C); ``command`` is its command line.

    sh and dash print no C mark: the start is inferred, once per command, when a
    job of the shell takes the terminal, else with the command's end (a builtin)."""

    command: str = ""


class CommandFinished(_Event, tag="command_finished"):
    """A command finished (OSC 133 D): its exit code, how long it ran (None when
    its start time is unknown) and its command line."""

    exit_code: int | None = None
    duration_ms: int | None = None
    command: str = ""


WatchEvent = (
    TitleChanged | Bell | Dirty | Idle | PaneSpawned | PaneClosed | CommandStarted | CommandFinished
)
WATCH_EVENT_NAMES: tuple[str, ...] = tuple(
    str(member.__struct_config__.tag) for member in typing.get_args(WatchEvent)
)


def event_name(event: WatchEvent) -> str:
    name: str = type(event).__struct_config__.tag  # type: ignore[assignment]
    return name


# ---------------------------------------------------------------- history

HISTORY_SCHEMA_VERSION = 1


class HistoryEntry(msgspec.Struct, kw_only=True):
    """One command the pane's shell ran, from its OSC 133 marks (oldest first).

    ``started_ms``: unix ms, when the server read the start mark (dash, which
    prints none: the line feed that ended the input); None when unknown
    (commands in the bootstrap's journal tail carry no time). ``duration_ms``
    None when either end's time is unknown or it is still ``running``; ``exit_code``
    None and ``running`` false: it ended unmarked (``exec bash``, or the shell's
    hooks were replaced), its status unknown.
    ``output``: the rows from the start mark to the finish mark (logical lines,
    right-stripped); ``truncated`` when some of them left the history (all of
    them: ``output`` is empty, the rest of the entry is kept).
    """

    command: str
    cwd: str | None
    exit_code: int | None
    started_ms: int | None
    duration_ms: int | None
    running: bool
    output: str
    truncated: bool


class HistoryResult(msgspec.Struct, kw_only=True):
    """``phux history --json`` and the MCP ``phux_history`` tool."""

    pane: str
    commands: list[HistoryEntry] = msgspec.field(default_factory=list)
    schema_version: int = HISTORY_SCHEMA_VERSION


# ---------------------------------------------------------------- status, doctor, audit

STATUS_SCHEMA_VERSION = 1
DOCTOR_SCHEMA_VERSION = 1
AUDIT_SCHEMA_VERSION = 1


class ServerStatus(msgspec.Struct, kw_only=True):
    """``phux status --json``: the running server.

    ``pid``, ``server_id`` and ``protocol`` come from HELLO_OK, ``terminals``
    (live ones) from TERMINAL_LIST, the rest from the server's published facts
    (``phux.server.*`` global metadata, spec/L3.md §3): None when the server
    does not publish them. ``clients`` counts this status request's own
    connection. ``rss_bytes`` is the server process's resident memory, read
    from /proc on this machine: None for a server on another host.
    ``replica_pids`` are the replica helper processes the server published
    (``phux.server.replica_pids``; empty with replicas in a thread or off),
    ``replica_rss_bytes`` their resident memory together (None when not
    readable here: another host, or no helper).
    """

    socket: str
    host: str | None
    pid: int
    server_id: str
    protocol: str
    version: str | None
    started_ms: int | None
    uptime_s: float | None
    terminals: int
    clients: int | None
    replicas: str | None
    rss_bytes: int | None
    replica_pids: list[int] = msgspec.field(default_factory=list)
    replica_rss_bytes: int | None = None
    audit_file: str | None
    schema_version: int = STATUS_SCHEMA_VERSION


class DoctorCheck(msgspec.Struct, kw_only=True):
    """One check of ``phux doctor``: ``status`` ok, warning or failure; a remedy unless ok."""

    name: str
    status: str
    message: str
    remedy: str


class DoctorReport(msgspec.Struct, kw_only=True):
    """``phux doctor --json``; ``ok`` is false when some check failed (exit 1)."""

    ok: bool
    checks: list[DoctorCheck]
    schema_version: int = DOCTOR_SCHEMA_VERSION


class AuditEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One INPUT as the server's audit file records it (one JSON line each).

    ``client`` is the name the client gave in HELLO (``phux-cli/0.1.0``; a
    claim, not a proof); ``pid`` and ``uid`` are its process's, from the
    kernel (SO_PEERCRED): for a client over ``--host``, the ``phux proxy``
    process on the server's machine.
    ``target`` is the pane's ``session:window.pane`` then, None outside a
    session. ``data_base64`` is present only when the server keeps input bytes.
    """

    time_ms: int
    server_id: str
    terminal: int
    target: str | None
    client: str
    pid: int
    uid: int
    bytes: int
    sha256: str
    data_base64: str | None = None


class AuditResult(msgspec.Struct, kw_only=True):
    """``phux audit --json``: entries oldest first.

    ``audit_file`` is the audit's path on the server's machine: ``host`` (None:
    this one). A running server sends the entries (protocol 1.3, LIST_AUDIT);
    with none running they are read from the file here. ``truncated``: older
    entries were left out by the server's bound on one answer (not by
    ``--last``).
    """

    audit_file: str
    host: str | None = None
    entries: list[AuditEntry]
    truncated: bool = False
    schema_version: int = AUDIT_SCHEMA_VERSION


# ---------------------------------------------------------------- errors


class ErrorBody(msgspec.Struct, kw_only=True):
    code: str
    message: str


class ErrorReport(msgspec.Struct, kw_only=True):
    """What ``--json`` front ends print to stderr (one line) for a failure."""

    error: ErrorBody
    exit_code: int
    remedy: str
    schema_version: int = ERROR_SCHEMA_VERSION

    @classmethod
    def from_exception(cls, exc: Any) -> ErrorReport:
        return cls(
            error=ErrorBody(
                code=str(getattr(exc, "code", "error")),
                message=str(getattr(exc, "message", None) or exc),
            ),
            exit_code=int(getattr(exc, "exit_code", 1)),
            remedy=str(getattr(exc, "remedy", "")),
        )


def to_json(value: Any) -> bytes:
    return msgspec.json.encode(value)


# ---------------------------------------------------------------- MCP tool results
# The shapes only the MCP tools print (their outputSchema is generated from these).


class SessionInfoList(msgspec.Struct, kw_only=True):
    """The MCP ``phux_ls`` result: the sessions with the raw counts, by name."""

    sessions: list[SessionInfo]


class McpRunResult(RunResult, kw_only=True):
    """The MCP ``phux_run`` result on completion: ``RunResult`` plus ``waited_ms``,
    the time the call waited for the pane's earlier writers before typing."""

    waited_ms: int

    @classmethod
    def of_outcome(cls, outcome: RunOutcome, waited_ms: int) -> McpRunResult:
        return cls(**msgspec.structs.asdict(RunResult.of(outcome)), waited_ms=waited_ms)


class RunTimedOutResult(msgspec.Struct, kw_only=True):
    """The MCP ``phux_run`` result when ``timeout_secs`` passed first: the command
    keeps running (the CLI exits 125 instead)."""

    outcome: typing.Literal["timed_out"] = "timed_out"
    command: str
    duration_ms: int
    waited_ms: int


class WaitOutcome(msgspec.Struct, kw_only=True):
    """The MCP ``phux_wait`` result; ``polls`` counts the checks of the condition.
    With ``prompt`` or ``exit``: the pane's ``state`` and ``program``; with ``exit``:
    its ``exit_code`` (the status, 128+N for signal N)."""

    outcome: typing.Literal["met", "timed_out"]
    polls: int
    state: str | msgspec.UnsetType | None = msgspec.UNSET
    program: str | msgspec.UnsetType | None = msgspec.UNSET
    exit_code: int | msgspec.UnsetType | None = msgspec.UNSET


class KillResult(msgspec.Struct, kw_only=True):
    """The MCP ``phux_kill`` result: the panes (``@N``) that were killed."""

    killed: list[str]


class TagResult(msgspec.Struct, kw_only=True):
    """The MCP ``phux_tag`` result: the pane's tags after the change."""

    tags: list[str]


# ---------------------------------------------------------------- notes, tasks, summary

NOTES_SCHEMA_VERSION = 1
TASKS_SCHEMA_VERSION = 1
SUMMARY_SCHEMA_VERSION = 1

NoteScope = typing.Literal["session", "window", "pane"]


class Task(msgspec.Struct, kw_only=True):
    """One ``- [ ]`` / ``- [x]`` line of a note (spec/L3.md §2, "Notes")."""

    index: int
    """Its number among the note's tasks, from 1: what ``phux task TARGET done N`` takes."""
    done: bool
    text: str
    line: int
    """Its line in the note, from 1."""


class NotesResult(msgspec.Struct, kw_only=True):
    """``phux note --json`` and the MCP ``phux_notes`` / ``phux_set_notes`` tools."""

    scope: NoteScope
    target: str
    """The session (``work``), window (``work:1``) or pane (``@3``) the notes are of."""
    notes: str
    """The markdown ("" when there are none)."""
    tasks: list[Task]
    schema_version: int = NOTES_SCHEMA_VERSION


class TaskList(msgspec.Struct, kw_only=True):
    """``phux tasks --json`` and the MCP ``phux_tasks`` / ``phux_update_task`` tools."""

    scope: NoteScope
    target: str
    tasks: list[Task]
    schema_version: int = TASKS_SCHEMA_VERSION


class OpenTask(msgspec.Struct, kw_only=True):
    """An open task of the notes that concern a pane: its session's, window's or own."""

    scope: NoteScope
    target: str
    index: int
    text: str


class SummaryCommand(msgspec.Struct, kw_only=True):
    """One of the pane's last commands (the data of ``phux history``, without output;
    times None while unknown, as there)."""

    command: str
    exit_code: int | None
    started_ms: int | None
    duration_ms: int | None
    running: bool


class FailedCommand(msgspec.Struct, kw_only=True):
    """The newest command that exited non-zero, with the end of its output."""

    command: str
    exit_code: int
    started_ms: int | None
    output_tail: list[str]
    """Its last output lines (at most ``tail`` of them)."""
    truncated: bool
    """Part of its output left the pane's history."""


class LastInput(msgspec.Struct, kw_only=True):
    """Who wrote to the pane last, from the server's input audit."""

    client: str
    """The name the client gave in HELLO (``phux-cli/0.1.0``, ``phux-mcp/...``,
    ``phux-attach/...``): a claim, not a proof."""
    person: bool
    """The client was ``phux attach``: a person typed."""
    time_ms: int
    pid: int


class SummaryResult(msgspec.Struct, kw_only=True):
    """``phux summary --json`` and the MCP ``phux_summary`` tool: what an agent coming
    back to a pane needs to know, from the pane's own bytes, the server's listing and
    audit, and its notes. No LLM, no guessing."""

    pane: str
    session: str | None
    window: int | None
    window_name: str | None
    index: int | None
    """The pane's index in its window."""
    alive: bool
    exit_status: int | None
    """Once it exited: its status (128+N: killed by signal N)."""
    program: str | None
    state: PaneStateName
    cwd: str | None
    """The shell's working directory as it last reported it (OSC 7), else the
    foreground process's, read from /proc when the server runs on this machine."""
    state_since_ms: int | None
    """Unix ms since when it is in that state, as far as the shell's marks tell: the
    running command's start, else the last command's end, else (no command yet) the
    pane's start. None when that time is not known: once the pane exited, or for a
    command whose marks are newer than the server's last checkpoint of the pane
    (the server stamps them when its replica has caught up, moments later; as
    ``phux history``'s ``started_ms``)."""
    state_for_ms: int | None
    """How long that is, measured when the summary was made."""
    commands: list[SummaryCommand]
    """The last commands, oldest first (``last``: at most that many)."""
    last_failed: FailedCommand | None
    screen_tail: list[str]
    """The screen's last non-blank lines, top to bottom."""
    attached: bool
    """A person has this pane on screen (``phux attach`` subscribes to what it shows as a
    primary)."""
    last_input: LastInput | None
    """None when the server keeps no audit or nothing was typed yet."""
    notes: str
    """The pane's own notes ("" when none)."""
    open_tasks: list[OpenTask]
    """The open tasks of the session's, the window's and the pane's notes."""
    schema_version: int = SUMMARY_SCHEMA_VERSION


__all__ = [
    "AuditEntry",
    "AuditResult",
    "Bell",
    "CommandFinished",
    "CommandStarted",
    "Dirty",
    "DoctorCheck",
    "DoctorReport",
    "ErrorBody",
    "ErrorReport",
    "FailedCommand",
    "HistoryEntry",
    "HistoryResult",
    "Idle",
    "KillResult",
    "LastInput",
    "McpRunResult",
    "NewPaneResult",
    "NewResult",
    "NotesResult",
    "OpenTask",
    "PaneClosed",
    "PaneSpawned",
    "PaneSummary",
    "RunResult",
    "RunTimedOutResult",
    "SendKeysResult",
    "ServerStatus",
    "SessionInfo",
    "SessionInfoList",
    "SessionList",
    "SessionSummary",
    "SummaryCommand",
    "SummaryResult",
    "TagResult",
    "Task",
    "TaskList",
    "TitleChanged",
    "WaitOutcome",
    "WaitResult",
    "WatchEvent",
    "event_name",
    "to_json",
]

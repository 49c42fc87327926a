"""Notes and tasks: markdown kept as L3 metadata on the server (spec/L3.md §2, "Notes").

Where a note lives follows what it is about:

* a **pane**'s notes are the key ``phux.notes`` in its terminal's scope: they
  follow the pane through renames and end with it (read-only once it exited,
  gone when the server forgets it);
* a **session**'s notes are the global key ``phux.notes.SESSION`` and a
  **window**'s the global key ``phux.notes.SESSION:W`` (W the window index):
  they belong to the name, so they stay when the panes end and a session that
  takes the name again finds them (a project's notes); ``phux rename`` moves
  them with the session.

Tasks are the note's ``- [ ]`` / ``- [x]`` lines (``*`` and ``+`` bullets too),
numbered from 1 in the order they appear: one fact, one home, so a task edit is
an edit of the note's text.

Every write is a read-modify-write of one key (:func:`update`), guarded twice:
one lock per server (the run locks' directory, a flock the kernel drops if the
holder dies), which the phux clients on the server's machine (CLI and MCP
alike) take in turn; and, for writers that do not share it (another machine),
a subscription to the key that shows a write made between our read and our
write, whereupon the edit is made again on what that write left.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from phux.client.errors import (
    InvalidArgument,
    PhuxError,
    ServerError,
    TargetNotFound,
    TerminalGone,
)
from phux.client.selectors import (
    Pane,
    SessionSel,
    expand,
    parse_selector,
    pick_pane,
)
from phux.record import Record
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
    MetadataChanged,
    MetadataValue,
    MetaDelete,
    MetaGet,
    MetaSet,
    MetaSubscribe,
    MetaUnsubscribe,
)

if TYPE_CHECKING:
    from phux.client.core import ClientCore
    from phux.client.deadline import Deadline
    from phux.client.models import NotesResult, Task, TaskList

KEY_NOTES = "phux.notes"
"""A pane's notes (terminal scope); with ``.SESSION`` or ``.SESSION:W``, a session's
or a window's (global scope)."""
MAX_KEY = 256
SCOPES = ("session", "window", "pane")
DEFAULT_LIMIT = 64 * 1024
"""A server that does not say (HELLO_OK's ``max_metadata_value`` default)."""

_TASK = re.compile(r"^(\s*[-*+][ \t]+\[)([ xX])(\].*)$")


class NotesTooLarge(PhuxError):
    code = "too_large"
    remedy = (
        "notes are at most the server's max_metadata_value (64 KiB by default): "
        "shorten them, or keep long text in a file and note its path"
    )


class TaskNotFound(PhuxError):
    code = "task_not_found"
    remedy = "list the tasks and their numbers with `phux tasks TARGET`"


class Place(Record):
    """Where one note lives."""

    scope: str
    """``session``, ``window`` or ``pane``."""
    label: str
    """What it is called: ``work``, ``work:1`` or ``@3``."""
    key: str
    terminal: int | None = None
    session: str | None = None
    window: int | None = None
    exists: bool = True
    """Whether the session/window/pane it is about exists (notes of a name may
    outlive its panes)."""


# ---------------------------------------------------------------- where


def _natural_scope(target: str | None) -> str:
    if target is None:
        return "pane"
    sel = parse_selector(target)
    if isinstance(sel, SessionSel) and sel.pane is None:
        return "session" if sel.window is None else "window"
    return "pane"


def locate(client: ClientCore, target: str | None, scope: str | None, deadline: Deadline) -> Place:
    """The note TARGET names: by its form (``NAME`` a session's, ``NAME:W`` a window's,
    any pane selector a pane's) unless ``scope`` says which of the pane's it is."""
    target = client._target_host(target)
    if scope is not None and scope not in SCOPES:
        raise InvalidArgument(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    natural = _natural_scope(target)
    scope = scope or natural
    snap = client.list_terminals(deadline)
    text = "." if target is None else target
    sel = parse_selector(text)
    if isinstance(sel, SessionSel) and natural != "pane" and scope != "pane":
        # A name: its notes outlive its panes, so a session or window without live
        # panes still has them (exists says whether it has panes).
        panes = snap.session(sel.session) or snap.retained_session(sel.session)
        if scope == "session":
            return _session_place(sel.session, exists=bool(panes))
        if isinstance(sel.window, int):
            exists = any(p.window == sel.window for p in panes)
            return _window_place(sel.session, sel.window, exists=exists)
    pane = pick_pane(expand(sel, snap, text, client.env))
    if scope == "pane":
        return Place(scope="pane", label=pane.id, key=KEY_NOTES, terminal=pane.terminal)
    if pane.session is None:
        raise InvalidArgument(
            f"terminal {pane.id} belongs to no session, so it has no {scope} notes",
            remedy="use its pane notes (scope pane)",
        )
    if scope == "session":
        return _session_place(pane.session)
    return _window_place(pane.session, pane.window or 0)


def _checked(key: str) -> str:
    if len(key.encode()) > MAX_KEY:
        raise InvalidArgument(
            f"the notes key {key!r} is over {MAX_KEY} bytes (the session name is too long)",
            remedy="rename the session to a shorter name",
        )
    return key


def _session_place(session: str, *, exists: bool = True) -> Place:
    return Place(
        scope="session",
        label=session,
        key=_checked(f"{KEY_NOTES}.{session}"),
        session=session,
        exists=exists,
    )


def _window_place(session: str, window: int, *, exists: bool = True) -> Place:
    return Place(
        scope="window",
        label=f"{session}:{window}",
        key=_checked(f"{KEY_NOTES}.{session}:{window}"),
        session=session,
        window=window,
        exists=exists,
    )


def pane_places(pane: Pane) -> list[Place]:
    """The notes that concern ``pane``: its session's, its window's, its own."""
    places = []
    if pane.session is not None:
        places.append(_session_place(pane.session))
        places.append(_window_place(pane.session, pane.window or 0))
    places.append(Place(scope="pane", label=pane.id, key=KEY_NOTES, terminal=pane.terminal))
    return places


# ---------------------------------------------------------------- read and write


def read(client: ClientCore, place: Place, deadline: Deadline) -> str | None:
    """The note's text; None when there is none."""
    with client._guard():
        reply = client.connection(deadline).call_expect(
            lambda rid: MetaGet(request_id=rid, key=place.key, terminal=place.terminal),
            MetadataValue,
            deadline,
        )
    return None if reply.value is None else reply.value.decode("utf-8", "replace")


def read_existing(client: ClientCore, place: Place, deadline: Deadline) -> str:
    """The note's text ("" when none), for a place that exists or has notes."""
    text = read(client, place, deadline)
    if text is None and not place.exists:
        raise TargetNotFound(f"no {place.scope} {place.label!r} and no notes kept for it")
    return text or ""


def limit(client: ClientCore, deadline: Deadline) -> int:
    """The most bytes a note may hold: the server's ``max_metadata_value``."""
    hello = client.connection(deadline).hello
    return DEFAULT_LIMIT if hello is None else hello.max_metadata_value


REBASES = 8
"""How many times an edit is redone on a value another client wrote meanwhile."""


class NotesConflict(PhuxError):
    code = "conflict"
    remedy = "other clients kept changing these notes: read them again and redo the edit"


def update(
    client: ClientCore, place: Place, change: Callable[[str], str], deadline: Deadline
) -> str:
    """Replace the note with ``change(current text)``; returns the new text. An empty
    result deletes the key.

    Two guards (spec/L3.md §2, "Notes"): the server's notes lock, which clients on
    this machine take in turn; and, for clients that do not share it (on another
    machine), the key's changes, watched from before the read: a write of another
    client between our read and our write is one our write replaced, so the edit is
    made again on that value (``change`` may be called more than once)."""
    from phux.client.run_lock import RunLock

    if not place.exists:
        raise TargetNotFound(
            f"no {place.scope} {place.label!r}",
            remedy="notes are written for a session, window or pane that exists "
            "(`phux ls --panes` lists them)",
        )
    lock = RunLock(client.local_anchor, "notes")
    lock.acquire(deadline)
    try:
        with client._guard(), _Changes(client, place, deadline) as changes:
            base = read(client, place, deadline) or ""
            changes.take()  # what happened before the read is in it
            most = limit(client, deadline)
            for _ in range(REBASES):
                after = change(base)
                data = after.encode()
                if len(data) > most:
                    raise NotesTooLarge(
                        f"the {place.scope} notes of {place.label} would be {len(data)} bytes; "
                        f"the limit is {most} (nothing was changed)"
                    )
                if after == base:
                    return after
                _store(client, place, data, deadline)
                written = changes.take()
                if written and written[-1] == (data or None):
                    written.pop()  # our own write, the last before its OK
                if not written:
                    return after
                # Another client wrote between our read and our write, which replaced
                # what it wrote: make the edit again on that.
                base = (written[-1] or b"").decode("utf-8", "replace")
            raise NotesConflict(
                f"the {place.scope} notes of {place.label} changed under {REBASES} edits in a row"
            )
    finally:
        lock.release()


class _Changes:
    """A metadata subscription to one note's key on the client's connection, for the
    length of one edit. The server sends a change to every subscriber before it
    answers the request that made it, so after a reply every change made before it
    has been read."""

    def __init__(self, client: ClientCore, place: Place, deadline: Deadline) -> None:
        self.client = client
        self.place = place
        self.deadline = deadline
        self.conn = client.connection(deadline)
        self.sub = 0

    def __enter__(self) -> _Changes:
        key = self.place.key
        self.sub = self.conn.submit(lambda rid: MetaSubscribe(request_id=rid, prefix=key))
        self.conn.wait_reply(self.sub, self.deadline)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.conn.closed:
            return
        sub = self.sub
        self.conn.call(lambda rid: MetaUnsubscribe(request_id=rid, subscription=sub), self.deadline)
        self.take()  # none of its changes may reach the client's other readers

    def take(self) -> list[bytes | None]:
        """The values written to the key since the last take, in order (None: deleted);
        every other pushed frame goes where the client sends it."""
        values: list[bytes | None] = []
        while (frame := self.conn.take_pushed()) is not None:
            if isinstance(frame, MetadataChanged) and frame.subscription == self.sub:
                if frame.key == self.place.key and frame.terminal == self.place.terminal:
                    values.append(frame.value)
            else:
                self.client._route(frame)
        return values


def _store(client: ClientCore, place: Place, data: bytes, deadline: Deadline) -> None:
    key, terminal = place.key, place.terminal
    with client._guard():
        conn = client.connection(deadline)
        try:
            if data:
                conn.call(
                    lambda rid: MetaSet(request_id=rid, key=key, value=data, terminal=terminal),
                    deadline,
                )
            else:
                conn.call(
                    lambda rid: MetaDelete(request_id=rid, key=key, terminal=terminal), deadline
                )
        except ServerError as exc:
            if exc.wire_code == ErrorCode.TERMINAL_EXITED:
                raise TerminalGone(
                    f"pane {place.label} has exited: its notes are kept read-only until "
                    "the server forgets it",
                    remedy="write the window's or session's notes instead",
                ) from None
            if exc.wire_code == ErrorCode.RESOURCE_EXHAUSTED:
                raise NotesTooLarge(exc.message) from None
            raise


def move_session_notes(client: ClientCore, old: str, new: str, deadline: Deadline) -> None:
    """``phux rename``: the session's and its windows' notes follow the name (they
    replace notes the new name had kept)."""
    from phux.wire.frames import MetadataKeys, MetaList

    prefix = f"{KEY_NOTES}.{old}"
    with client._guard():
        conn = client.connection(deadline)
        reply = conn.call_expect(
            lambda rid: MetaList(request_id=rid, prefix=prefix), MetadataKeys, deadline
        )
        moves = [
            (entry.key, f"{KEY_NOTES}.{new}{entry.key[len(prefix) :]}", entry.value)
            for entry in reply.entries
            if entry.key == prefix or entry.key[len(prefix)] == ":"
        ]
        moves = [(old_key, new_key, v) for old_key, new_key, v in moves if len(new_key) <= MAX_KEY]
        for old_key, new_key, value in moves:

            def put(rid: int, key: str = new_key, value: bytes = value) -> MetaSet:
                return MetaSet(request_id=rid, key=key, value=value)

            def drop(rid: int, key: str = old_key) -> MetaDelete:
                return MetaDelete(request_id=rid, key=key)

            conn.call(put, deadline)
            conn.call(drop, deadline)


# ---------------------------------------------------------------- tasks


def parse_tasks(text: str) -> list[Task]:
    """The note's tasks, numbered from 1 in order."""
    from phux.client.models import Task

    tasks: list[Task] = []
    for number, line in enumerate(text.split("\n"), start=1):
        match = _TASK.match(line)
        if match is not None:
            body = match.group(3)[1:].strip()
            tasks.append(
                Task(index=len(tasks) + 1, done=match.group(2) != " ", text=body, line=number)
            )
    return tasks


def _task_line(text: str, n: int) -> int:
    """The 0-based line of task ``n``."""
    tasks = parse_tasks(text)
    if not 1 <= n <= len(tasks):
        raise TaskNotFound(
            f"no task {n}: the notes have {len(tasks)} task{'s' if len(tasks) != 1 else ''}"
        )
    return tasks[n - 1].line - 1


def add_task(text: str, task: str) -> str:
    task = task.strip()
    if not task or "\n" in task or "\r" in task:
        raise InvalidArgument("a task is one non-empty line of text")
    return append(text, f"- [ ] {task}")


def append(text: str, more: str) -> str:
    """``more`` on lines of its own after ``text``."""
    if not text:
        return more if more.endswith("\n") else more + "\n"
    joined = text if text.endswith("\n") else text + "\n"
    return joined + (more if more.endswith("\n") else more + "\n")


def mark_task(text: str, n: int, done: bool) -> str:
    lines = text.split("\n")
    i = _task_line(text, n)
    match = _TASK.match(lines[i])
    assert match is not None
    lines[i] = match.group(1) + ("x" if done else " ") + match.group(3)
    return "\n".join(lines)


def remove_task(text: str, n: int) -> str:
    lines = text.split("\n")
    del lines[_task_line(text, n)]
    return "\n".join(lines)


# ---------------------------------------------------------------- the results


def notes_result(place: Place, text: str) -> NotesResult:
    from phux.client.models import NotesResult

    return NotesResult(
        scope=place.scope,  # type: ignore[arg-type]
        target=place.label,
        notes=text,
        tasks=parse_tasks(text),
    )


def task_list(place: Place, text: str, *, open_only: bool = False) -> TaskList:
    from phux.client.models import TaskList

    tasks = parse_tasks(text)
    if open_only:
        tasks = [t for t in tasks if not t.done]
    return TaskList(scope=place.scope, target=place.label, tasks=tasks)  # type: ignore[arg-type]


def get_notes(
    client: ClientCore, target: str | None, deadline: Deadline, *, scope: str | None = None
) -> NotesResult:
    place = locate(client, target, scope, deadline)
    return notes_result(place, read_existing(client, place, deadline))


def edit_notes(
    client: ClientCore,
    target: str | None,
    change: Callable[[str], str],
    deadline: Deadline,
    *,
    scope: str | None = None,
) -> NotesResult:
    place = locate(client, target, scope, deadline)
    return notes_result(place, update(client, place, change, deadline))


TASK_ACTIONS = ("add", "done", "undo", "rm")


def task_change(action: str, arg: str) -> Callable[[str], str]:
    """The edit one ``phux task`` action makes: ``add TEXT``, ``done N``, ``undo N``,
    ``rm N``."""
    if action == "add":
        return lambda text: add_task(text, arg)
    if action not in TASK_ACTIONS:
        raise InvalidArgument(f"the action is one of {', '.join(TASK_ACTIONS)}, not {action!r}")
    try:
        n = int(arg)
    except ValueError:
        raise InvalidArgument(f"{action} takes a task number, not {arg!r}") from None
    if action == "rm":
        return lambda text: remove_task(text, n)
    return lambda text: mark_task(text, n, action == "done")

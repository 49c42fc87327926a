"""``summary``: what an agent coming back to a pane needs, in one call, without an LLM.

Everything comes from what phux already knows, read once each:

* one fresh subscription to the pane, replayed into the client's engine (as
  ``history`` does, so command times are the server's): the shell's commands
  from their OSC 133 marks, the output of the newest failed one, the screen's
  last non-blank lines, the cwd the shell reported (OSC 7), and with the
  listing's foreground the pane's ``program`` and ``state``;
* the listing: session, window, pane, whether a person is attached (a primary
  subscriber: ``phux attach``), the exit status;
* the server's input audit, newest entry of the terminal: who typed last;
* the notes of the pane, its window and its session (``phux.client.notes``).

How long the pane has been in its state is what the marks tell: since the
running command started, else since the last one ended, else since the pane
started (a TUI started from the shell is its running command).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from phux.client.errors import InvalidArgument
from phux.client.mirror import DEFAULT_HISTORY
from phux.client.pane_state import EXITED, project_mirror, unmarked_prompt
from phux.wire.frames import AuditList, ListAudit
from phux.wire.handshake import MINOR_AUDIT

if TYPE_CHECKING:
    from phux.client.core import ClientCore
    from phux.client.deadline import Deadline
    from phux.client.models import FailedCommand, LastInput, SummaryResult
    from phux.client.selectors import Pane
    from phux.engine import Terminal
    from phux.engine._shell import CommandRecord

LAST_COMMANDS = 5
"""Commands a summary lists by default."""
TAIL_LINES = 20
"""Output lines of the last failed command a summary shows by default."""
SCREEN_LINES = 10
"""The screen's last non-blank lines a summary shows."""


def pane_summary(
    client: ClientCore,
    target: str | None,
    *,
    last: int = LAST_COMMANDS,
    tail: int = TAIL_LINES,
    deadline: Deadline,
) -> SummaryResult:
    from phux.client.models import OpenTask, SummaryCommand, SummaryResult
    from phux.client.notes import pane_places, parse_tasks, read

    if last < 0 or tail < 0:
        raise InvalidArgument("last and tail are non-negative numbers of lines")
    pane = client.resolve(target, deadline)  # a read: the active pane stays
    mirror = client.mirror(pane, deadline, history=DEFAULT_HISTORY, fresh=True)
    try:
        engine = mirror.engine
        assert engine is not None
        program, state = project_mirror(pane, mirror)
        records = list(engine.commands)
        running = bool(records) and records[-1].running
        if running:
            fg = mirror.foreground_of(client.listed_after_subscribe(pane, mirror, deadline))
            running = not unmarked_prompt(pane.pid, fg, engine)
        shown = records[-last:] if last else []
        commands = [
            SummaryCommand(
                command=rec.command,
                exit_code=rec.exit_code,
                started_ms=rec.started_ms,
                duration_ms=_duration(rec),
                running=rec.running and (running or rec is not records[-1]),
            )
            for rec in shown
        ]
        failed = _last_failed(engine, tail)
        lines = [line for line in engine.project_data(pane=pane.terminal)["lines"] if line.strip()]
        # /proc is this machine's: a server reached over ssh has its pids elsewhere.
        cwd = engine.cwd or (_proc_cwd(pane) if client.host is None else None)
    finally:
        client.release(mirror)
    since = _since(pane, records, running, state)
    now = int(time.time() * 1000)
    places = pane_places(pane)
    texts = {place.scope: read(client, place, deadline) or "" for place in places}
    open_tasks = [
        OpenTask(scope=place.scope, target=place.label, index=task.index, text=task.text)  # type: ignore[arg-type]
        for place in places
        for task in parse_tasks(texts[place.scope])
        if not task.done
    ]
    return SummaryResult(
        pane=pane.id,
        session=pane.session,
        window=pane.window,
        window_name=pane.window_name,
        index=pane.pane,
        alive=pane.alive,
        exit_status=_status(pane),
        program=program,
        state=state,  # type: ignore[arg-type]
        cwd=cwd,
        state_since_ms=since,
        state_for_ms=None if since is None else max(0, now - since),
        commands=commands,
        last_failed=failed,
        screen_tail=lines[-SCREEN_LINES:],
        attached=pane.primaries > 0,
        last_input=_last_input(client, pane, deadline),
        notes=texts["pane"],
        open_tasks=open_tasks,
    )


def _duration(rec: CommandRecord) -> int | None:
    if rec.started_ms is None or rec.finished_ms is None:
        return None
    return max(0, rec.finished_ms - rec.started_ms)


def _last_failed(engine: Terminal, tail: int) -> FailedCommand | None:
    from phux.client.models import FailedCommand

    for rec in reversed(engine.commands):
        if rec.exit_code is not None and rec.exit_code != 0:
            output, truncated = engine.command_output(rec)
            lines = output.rstrip("\n").split("\n") if output else []
            return FailedCommand(
                command=rec.command,
                exit_code=rec.exit_code,
                started_ms=rec.started_ms,
                output_tail=lines[-tail:] if tail else [],
                truncated=truncated or len(lines) > tail,
            )
    return None


def _since(pane: Pane, records: list[CommandRecord], running: bool, state: str) -> int | None:
    if state == EXITED:
        return None
    if records:  # (None: the marks' times are not known yet, see SummaryResult)
        return records[-1].started_ms if running else records[-1].finished_ms
    return pane.created_ms or None


def _status(pane: Pane) -> int | None:
    status = pane.exit
    if status is None:
        return None
    code = getattr(status, "code", None)
    if code is not None:
        return int(code)
    return 128 + int(getattr(status, "signal", 0))


def _proc_cwd(pane: Pane) -> str | None:
    import os

    fg = pane.foreground
    for pid in (fg.pgrp if fg is not None else None, pane.pid):
        if pid and pane.alive:
            try:
                return os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
    return None


def _last_input(client: ClientCore, pane: Pane, deadline: Deadline) -> LastInput | None:
    """The newest audit entry of the pane's terminal; None without an audit (or a
    server older than 1.3, which cannot send it)."""
    from phux.client.models import LastInput

    with client._guard():
        conn = client.connection(deadline)
        if conn.minor < MINOR_AUDIT:
            return None
        reply = conn.call_expect(
            lambda rid: ListAudit(request_id=rid, terminal=pane.terminal, limit=1),
            AuditList,
            deadline,
        )
    if not reply.audit_file or not reply.entries:
        return None
    entry = reply.entries[-1]
    return LastInput(
        client=entry.client,
        person=entry.client.startswith("phux-attach"),
        time_ms=entry.time_ms,
        pid=entry.pid,
    )

"""``history``: the commands a pane's shell ran, rebuilt by the client from the bytes.

The client subscribes to the pane, replays its bootstrap (the server's
checkpoint, which carries the commands with their times, then the journal
tail) into its own engine, and projects the engine's ``commands``: the OSC 133
marks the shell integration prints give each command line, its working
directory, exit code, times and output range. A command typed by an agent
(``send-keys``, ``run``) and one typed by a person attached are the same
marks: both are listed. The commands outlive their rows (the newest 1024 are
kept, in the server's replica and its checkpoints as in the client): a command
whose first rows left the history is ``truncated``, and one whose rows all
left it has an empty ``output``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phux.client.errors import InvalidArgument
from phux.client.mirror import DEFAULT_HISTORY
from phux.client.models import HistoryEntry, HistoryResult
from phux.client.pane_state import unmarked_prompt

if TYPE_CHECKING:
    from phux.client.core import ClientCore
    from phux.client.deadline import Deadline
    from phux.engine import Terminal


def pane_history(
    client: ClientCore, target: str | None, *, last: int | None = None, deadline: Deadline
) -> HistoryResult:
    """The pane's commands, oldest first; ``last``: only the newest ``last`` of them."""
    if last is not None and last < 0:
        raise InvalidArgument("-n must be a non-negative number of commands")
    pane = client.resolve(target, deadline)  # a read: the active pane stays
    # Fresh: the times must be the server's (a warm mirror's are when this client
    # read the bytes), the same for the CLI and MCP's long-lived client.
    mirror = client.mirror(pane, deadline, history=DEFAULT_HISTORY, fresh=True)
    try:
        engine = mirror.engine
        assert engine is not None
        entries = history_entries(engine, last)
        if entries and entries[-1].running:
            fg = mirror.foreground_of(client.listed_after_subscribe(pane, mirror, deadline))
            if unmarked_prompt(pane.pid, fg, engine):
                # The shell reads command lines again but never marked this one's end
                # (`exec bash`, its hooks replaced): it is over, its status unknown.
                entries[-1].running = False
    finally:
        client.release(mirror)
    return HistoryResult(pane=pane.id, commands=entries)


def history_entries(engine: Terminal, last: int | None = None) -> list[HistoryEntry]:
    records = engine.commands
    if last is not None:
        records = records[-last:] if last else []
    entries = []
    for rec in records:
        output, truncated = engine.command_output(rec)
        entries.append(
            HistoryEntry(
                command=rec.command,
                cwd=rec.cwd,
                exit_code=rec.exit_code,
                started_ms=rec.started_ms,
                duration_ms=rec.duration_ms,
                running=rec.running,
                output=output,
                truncated=truncated,
            )
        )
    return entries

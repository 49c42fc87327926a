"""A mirror of an sh pane tells its engine what holds the terminal (TERMINAL_STATE),
in order with the output, so that a dash command's start is reported when its job
takes the terminal (spec/shell-integration.md, "A command's start without C")."""

from __future__ import annotations

from phux.client.mirror import Mirror
from phux.engine import CommandStarted
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Foreground,
    Output,
    TerminalState,
)

SHELL = 100  # the pane's own shell (its pid, and its process group)
PROMPT = b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07"
CONTINUATION = b"\x1b]133;A;k=s\x07> \x1b]133;B\x07"


def job(pgrp: int = 200) -> Foreground:
    return Foreground(pgrp=pgrp, name="sleep", echo=True, canonical=True)


def shell() -> Foreground:
    return Foreground(pgrp=SHELL, name="dash", echo=True, canonical=True)


def mirror(journal: bytes, *, shell_pid: int | None = SHELL, live: bool = True) -> Mirror:
    """A mirror of a pane whose journal is ``journal``, watched (events kept)."""
    m = Mirror(1)
    m.mark_key = None  # (unsigned marks: the engine acts on all)
    m.shell_pid = shell_pid
    m.event_consumers = 1
    m.request_id = 3
    m.handle(BootstrapBegin(request_id=3, terminal=1, start_seq=0, cols=30, rows=6))
    m.handle(BootstrapChunk(terminal=1, seq=0, data=journal))
    if live:
        m.handle(BootstrapReady(terminal=1, next_seq=len(journal), cols=30, rows=6))
    return m


def started(m: Mirror) -> list[str]:
    engine = m.engine
    assert engine is not None
    return [e.command for e in engine.take_events() if isinstance(e, CommandStarted)]


def test_a_job_taking_the_terminal_starts_the_command() -> None:
    m = mirror(PROMPT)
    m.handle(Output(terminal=1, seq=len(PROMPT), data=b"sleep 5\r\n"))
    m.handle(TerminalState(terminal=1, foreground=job()))  # (the output held is fed first)
    assert started(m) == ["sleep 5"]
    m.handle(TerminalState(terminal=1, foreground=shell()))
    m.handle(Output(terminal=1, seq=len(PROMPT) + 9, data=PROMPT))
    assert started(m) == []


def test_a_pane_whose_shell_marks_c_is_not_told() -> None:
    m = mirror(PROMPT, shell_pid=None)
    m.handle(Output(terminal=1, seq=len(PROMPT), data=b"sleep 5\r\n"))
    m.handle(TerminalState(terminal=1, foreground=job()))
    assert started(m) == []


def test_a_report_during_the_bootstrap_waits_for_the_replay() -> None:
    """The journal is replayed whole before a report counts: a line the replay then
    shows was incomplete is not started by a job reported meanwhile."""
    m = mirror(PROMPT + b'echo "a\r\n', live=False)
    m.handle(TerminalState(terminal=1, foreground=job()))
    n = len(PROMPT) + 9
    m.handle(BootstrapChunk(terminal=1, seq=n, data=CONTINUATION))
    m.handle(BootstrapReady(terminal=1, next_seq=n + len(CONTINUATION), cols=30, rows=6))
    assert started(m) == []


def test_a_command_running_at_the_bootstrap_started_before_it() -> None:
    """The listing says a job holds the terminal: the command whose input ended
    started before the subscription (its start is history: not again at its D)."""
    journal = PROMPT + b"sleep 9\r\n"
    m = mirror(journal, live=False)
    m.listed_foreground = job()
    m.handle(BootstrapReady(terminal=1, next_seq=len(journal), cols=30, rows=6))
    assert started(m) == ["sleep 9"]
    m.handle(Output(terminal=1, seq=len(journal), data=PROMPT))
    assert started(m) == []

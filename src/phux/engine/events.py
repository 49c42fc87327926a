"""Events an engine reports, in order, through ``Terminal.take_events()``.

Records (:mod:`phux.record`), not msgspec Structs: they are engine values,
not a JSON shape (``phux watch`` prints ``phux.client.models`` events), and
a process that only reads a screen should not pay for importing msgspec.
"""

from __future__ import annotations

from phux.record import Record


class TitleChanged(Record):
    """OSC 0 or 2 set a new title."""

    title: str


class Bell(Record):
    """BEL outside any sequence."""


class CwdChanged(Record):
    """OSC 7 reported a new working directory (the path of a ``file://`` URL)."""

    cwd: str


class PromptStarted(Record):
    """OSC 133;A: the shell starts drawing its prompt."""


class CommandStarted(Record):
    """OSC 133;C: a command runs (its output starts); ``command`` is its command line.

    Without a C mark (dash): when the client reports that a job took the terminal
    (``Terminal.foreground_changed``), else just before the command's
    CommandFinished."""

    command: str = ""


class CommandFinished(Record):
    """OSC 133;D[;code]: a command finished; ``exit_code`` is None when not given.

    Times are unix ms (None when unknown: no clock, or a start the engine did not see).
    """

    exit_code: int | None
    command: str = ""
    started_ms: int | None = None
    finished_ms: int | None = None


EngineEvent = TitleChanged | Bell | CwdChanged | PromptStarted | CommandStarted | CommandFinished

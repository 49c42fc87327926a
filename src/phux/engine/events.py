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
    """OSC 133;C: the command's output starts."""


class CommandFinished(Record):
    """OSC 133;D[;code]: the command finished; ``exit_code`` is None when not given."""

    exit_code: int | None


EngineEvent = TitleChanged | Bell | CwdChanged | PromptStarted | CommandStarted | CommandFinished

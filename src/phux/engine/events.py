"""Events an engine reports, in order, through ``Terminal.take_events()``."""

from __future__ import annotations

import msgspec


class TitleChanged(msgspec.Struct, frozen=True):
    """OSC 0 or 2 set a new title."""

    title: str


class Bell(msgspec.Struct, frozen=True):
    """BEL outside any sequence."""


class CwdChanged(msgspec.Struct, frozen=True):
    """OSC 7 reported a new working directory (the path of a ``file://`` URL)."""

    cwd: str


class PromptStarted(msgspec.Struct, frozen=True):
    """OSC 133;A: the shell starts drawing its prompt."""


class CommandStarted(msgspec.Struct, frozen=True):
    """OSC 133;C: the command's output starts."""


class CommandFinished(msgspec.Struct, frozen=True):
    """OSC 133;D[;code]: the command finished; ``exit_code`` is None when not given."""

    exit_code: int | None


EngineEvent = TitleChanged | Bell | CwdChanged | PromptStarted | CommandStarted | CommandFinished

"""The pane-state projection's rules, on the records a listing carries."""

from __future__ import annotations

import pytest

from phux.client.pane_state import project, project_parts, unmarked_prompt
from phux.client.selectors import Pane
from phux.client.shell_scan import ShellView
from phux.wire.frames import Foreground

PID = 100


def fg(
    name: str, pgrp: int = 200, *, echo: bool = True, canonical: bool = True, isig: bool = True
) -> Foreground:
    return Foreground(pgrp=pgrp, name=name, argv=[name], echo=echo, canonical=canonical, isig=isig)


SHELL_AT_READLINE = fg("bash", PID, echo=False, canonical=False)


@pytest.mark.parametrize(
    ("foreground", "view", "want"),
    [
        (SHELL_AT_READLINE, ShellView("prompt"), ("bash", "prompt")),
        (SHELL_AT_READLINE, ShellView("none"), ("bash", "prompt")),
        (fg("dash", PID), ShellView("prompt"), ("dash", "prompt")),
        # A C with no D while readline is up: the hooks that print D are gone, and
        # run types its markers there (unmarked_prompt).
        (SHELL_AT_READLINE, ShellView("running"), ("bash", "prompt")),
        (fg("bash", PID), ShellView("running"), ("bash", "running")),  # a builtin runs
        (SHELL_AT_READLINE, ShellView("continuation"), ("bash", "continuation")),  # PS2
        (
            fg("ssh", echo=False, canonical=False),
            ShellView("continuation"),
            ("ssh", "continuation"),
        ),
        (None, ShellView("continuation"), (None, "continuation")),
        (fg("bash", PID, echo=False), ShellView("running"), ("bash", "hidden_input")),
        (fg("sudo", echo=False), ShellView("running"), ("sudo", "hidden_input")),
        (fg("cat"), ShellView("running"), ("cat", "running")),
        (fg("vim", echo=False, canonical=False, isig=False), ShellView("running"), ("vim", "tui")),
        (fg("python3", echo=False, canonical=False), ShellView("running"), ("python3", "running")),
        (fg("tail", PID), ShellView("none"), ("tail", "running")),  # new -- tail -f log
        (fg("", PID), ShellView("prompt"), (None, "prompt")),  # own group, name unread
        (fg("less"), ShellView("running", alternate=True), ("less", "tui")),
        (fg("ssh", echo=False, canonical=False), ShellView("running"), ("ssh", "running")),
        (fg("ssh", echo=False, canonical=False), ShellView("prompt"), ("ssh", "prompt")),
        (fg("zsh"), ShellView("running"), ("zsh", "prompt")),  # a nested shell
        (None, ShellView("prompt"), (None, "prompt")),  # a server older than 1.1
        (None, ShellView("running", alternate=True), (None, "tui")),
    ],
)
def test_states(foreground: Foreground | None, view: ShellView, want: tuple[str, str]) -> None:
    assert project_parts(True, PID, foreground, view) == want


def test_exited() -> None:
    pane = Pane(terminal=1, alive=False, cols=80, rows=24, pid=PID)
    assert project(pane, None) == (None, "exited")


def entered(phase: str) -> ShellView:
    view = ShellView(phase)
    view.prompt_entered = True
    return view


@pytest.mark.parametrize(
    ("foreground", "view", "want"),
    [
        (SHELL_AT_READLINE, ShellView("running"), True),  # hooks gone, exec bash
        (fg("bash", PID), ShellView("running"), False),  # a builtin runs
        (fg("bash", 300, canonical=False), ShellView("running"), False),  # not its own shell
        (SHELL_AT_READLINE, ShellView("prompt"), False),
        (SHELL_AT_READLINE, entered("prompt"), False),  # a line editor redraws with marks
        (SHELL_AT_READLINE, entered("continuation"), True),  # PS2's marks left behind
        (fg("fish", PID, canonical=False), entered("continuation"), False),
        (fg("dash", PID), entered("prompt"), True),  # PS1 replaced
        (fg("dash", PID), ShellView("prompt"), False),
        (None, ShellView("running"), False),
    ],
)
def test_unmarked_prompt(foreground: Foreground | None, view: ShellView, want: bool) -> None:
    assert unmarked_prompt(PID, foreground, view) is want

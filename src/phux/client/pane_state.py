"""What a pane is doing: ``state`` and ``program``, projected from two sources.

* The PTY, through the server (``TerminalInfo.foreground``): which process
  group holds the terminal, its program's name, and the tty's echo and
  canonical modes. A fact about the terminal, read by the kernel, never
  guessed from output.
* The client's own engine: the OSC 133 marks the shell integration prints
  (``Terminal.shell_phase``) and whether the alternate screen is up.

``state`` is one of:

``exited``        the pane's program has exited.
``hidden_input``  echo off in canonical mode: a password or ``read -s`` prompt,
                  whichever program asked (checked first: ``sudo`` or the
                  shell's own ``read -s`` alike).
``prompt``        the shell holds the foreground and waits for a command line
                  at its primary prompt (see :func:`shell_holder` for what
                  ``run`` asks of it).
``continuation``  the shell waits for the rest of an unfinished command line
                  (a continuation prompt, PS2, marked ``A;k=s``): not idle,
                  and ``run`` refuses it.
``running``       a command runs: another program holds the foreground
                  (``cat``, ``make``, ``tail -f``, or a line REPL such as
                  python3, whose line editor keeps the tty's signals on), or
                  the shell itself runs one (a builtin, between C and D).
``tui``           a program drives the screen itself: the alternate screen is
                  up, or a non-shell program put the tty in raw mode (ICANON
                  and ISIG off: vim, fzf). A pager kept on the main screen
                  (``less -X``) keeps ISIG on and reads as ``running``.

``program`` is the foreground program's name (``comm``: ``bash``, ``vim``,
``python3``), None once the pane exited or when the server does not say.

Remote shells: ``ssh`` (and ``mosh-client``) in the foreground means a shell on
another machine that phux did not start. The tty is in raw mode whatever the
remote side does, so the modes tell nothing: the state comes from the
engine's marks when the remote shell prints OSC 133 itself (``prompt`` or
``running``), else ``running``.
"""

from __future__ import annotations

from phux.client.shell_scan import engine_prompt_entered

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.client.shell_scan import ShellView
    from phux.engine import Terminal
    from phux.wire.frames import Foreground

PROMPT = "prompt"
CONTINUATION = "continuation"
RUNNING = "running"
HIDDEN_INPUT = "hidden_input"
TUI = "tui"
EXITED = "exited"
STATES = (PROMPT, CONTINUATION, RUNNING, HIDDEN_INPUT, TUI, EXITED)

SHELLS = frozenset({"bash", "zsh", "fish", "sh", "dash", "ksh", "mksh", "ash", "yash", "posh"})
"""Programs that are a POSIX-ish (or fish) shell reading command lines."""
REMOTE = frozenset({"ssh", "mosh-client", "et"})
"""Programs that carry a remote shell: markers are the right fallback for ``run``."""


def shell_phase(engine: Terminal | ShellView | None) -> str:
    """The engine's OSC 133 phase (``none`` for an engine that predates it or no engine)."""
    if engine is None:
        return "none"
    phase = getattr(engine, "shell_phase", "none")
    return phase if isinstance(phase, str) else "none"


def _alternate(engine: Terminal | ShellView | None) -> bool:
    return bool(engine is not None and engine.alternate)


def _at_prompt(phase: str) -> str:
    """The state the marks alone say (no foreground to go by)."""
    if phase == "continuation":
        return CONTINUATION
    return PROMPT if phase == "prompt" else RUNNING


def prompt_entered(engine: Terminal | ShellView | None) -> bool:
    """The last prompt's line was entered and nothing was marked since: the cursor is
    below the logical line its B mark ends (a shell without a line editor, dash, that
    prints its marks at every prompt has run it, or drawn a prompt of its own)."""
    if engine is None:
        return False
    entered = getattr(engine, "prompt_entered", None)
    if isinstance(entered, bool):  # a ShellView
        return entered
    return engine_prompt_entered(engine)


def unmarked_prompt(pid: int, fg: Foreground | None, engine: Terminal | ShellView | None) -> bool:
    """The pane's own shell reads a command line at a prompt its hooks did not mark
    (hooks replaced for good, ``exec bash``), by the kernel's facts against the marks:

    * a line editor is up (the tty is not canonical: readline, zle, fish's) though the
      marks say a command runs (a C with no D): the hooks that print D are gone;
    * the last marked prompt's line was entered and nothing was marked since
      (:func:`prompt_entered`): the PS1 that prints the marks was replaced (dash,
      whose D is in PS1; bash after a marker run left PS2's marks behind). A
      builtin that reads (``read``) looks the same in dash.

    Call it once the output has settled: the marks of a prompt being drawn may still
    be on their way."""
    if fg is None or fg.pgrp != pid:
        return False
    phase = shell_phase(engine)
    if phase == "running":
        return not fg.canonical
    if phase in ("prompt", "continuation"):
        # (bash and dash keep the marks of PS2 when PS1 was replaced: a marker run's
        # two-line command leaves a marked continuation prompt behind it.) fish edits
        # a command of several lines in place, below its prompt, with no marks.
        # A line editor (not canonical) at a primary prompt redraws it with marks
        # when its hooks run at all: only a continuation prompt is left behind.
        if not fg.canonical and (phase != "continuation" or fg.name == "fish"):
            return False
        return prompt_entered(engine)
    return False


def foreground_is_shell(pid: int, fg: Foreground | None) -> bool:
    """A shell holds the foreground: the pane's own (pid ``pid``) or another one.

    The name decides, not the pid: a pane made with ``-- tail -f build.log`` holds its
    own foreground with a program that reads no command line. Only a group whose
    program is unknown (its leader gone, /proc unreadable) is taken for the pane's
    shell when it is the pane's own."""
    if fg is None:
        return False
    if fg.name:
        return fg.name in SHELLS
    return fg.pgrp == pid


def project(pane: Pane, engine: Terminal | None) -> tuple[str | None, str]:
    """``(program, state)`` of ``pane`` as listed; ``engine`` is the client's replay of it."""
    return project_parts(pane.alive, pane.pid, pane.foreground, engine)


def project_mirror(pane: Pane, mirror: Mirror) -> tuple[str | None, str]:
    """``(program, state)`` from a live mirror: its engine, its lifecycle, and the
    foreground of the last TERMINAL_STATE it got (else the listing's)."""
    fg = mirror.foreground_of(pane)
    return project_parts(pane.alive and mirror.alive, pane.pid, fg, mirror.engine)


def input_hidden(fg: Foreground) -> bool:
    """The tty reads a line without echoing it (a password prompt, ``read -s``): the
    state ``hidden_input``; what is typed then is never shown or recorded."""
    return fg.canonical and not fg.echo


def project_parts(
    alive: bool, pid: int, fg: Foreground | None, engine: Terminal | ShellView | None
) -> tuple[str | None, str]:
    if not alive:
        return None, EXITED
    phase = shell_phase(engine)
    if fg is None:
        # An older server (or /proc unreadable): the engine alone.
        if _alternate(engine):
            return None, TUI
        return None, _at_prompt(phase)
    program = fg.name or None
    if input_hidden(fg):
        return program, HIDDEN_INPUT
    if foreground_is_shell(pid, fg):
        if _alternate(engine):
            return program, TUI  # a shell builtin or function drawing full-screen: rare
        # The marks are the pane's own shell's: a shell started inside it (which
        # the outer one runs as a command) reads command lines, whatever they say.
        own = fg.pgrp == pid
        # A C with no D while the shell's line editor is up: the hooks that mark its
        # prompts are gone, and `run` takes its marker path there (unmarked_prompt).
        running = own and phase == "running" and fg.canonical
        # A continuation prompt, unless its marks were left behind by a PS1 that
        # no longer prints any (the hooks gone: the shell reads a new command).
        if own and phase == "continuation" and not unmarked_prompt(pid, fg, engine):
            return program, CONTINUATION
        return program, RUNNING if running else PROMPT
    if fg.name in REMOTE:
        if _alternate(engine):
            return program, TUI
        return program, _at_prompt(phase)
    if _alternate(engine) or not (fg.canonical or fg.isig):
        return program, TUI
    return program, RUNNING

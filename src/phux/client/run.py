"""``run``: type a command into a POSIX shell, capture its exit code and whole output.

:func:`run_command` is the one entry. Under the pane's lock
(:mod:`phux.client.run_lock`) it waits for a shell that is still starting or
drawing its prompt, checks that the pane's shell holds the foreground at an idle
prompt with nothing typed (``PaneBusy`` otherwise), then runs the command one of
two ways: with the shell's signed OSC 133 marks (:mod:`phux.client.run_integrated`)
or, without them, bracketed by printed markers (:mod:`phux.client.run_markers`).
Both return a :class:`~phux.client.run_base.RunOutcome` whose output
:mod:`phux.client.run_output` renders.
"""

from __future__ import annotations

import os
import time

from phux.client.deadline import Deadline
from phux.client.errors import (
    DeadlineExceeded,
    InvalidArgument,
    RunTimedOut,
    ShellNotReady,
    TerminalGone,
)
from phux.client.run_base import (
    UNREAD_RECHECK_S,
    RunOutcome,
    _ms_since,
    at_line_editor,
    command_line,
)
from phux.client.run_integrated import _run_integrated
from phux.client.run_lock import RunLock
from phux.client.run_markers import _run_markers

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from phux.client.core import ClientCore
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.client.shell_scan import ShellView
    from phux.wire.frames import Foreground


def _holder_text(
    pane: Pane, mirror: Mirror, view: ShellView, force: bool, settled: bool = False
) -> tuple[str, str | None]:
    """``(path, refusal)``: ``path`` is "shell" (integration: marks seen, the pane's own
    shell holds the foreground) or "markers"; ``refusal`` says what holds the pane when
    it is not at an idle shell prompt (None when it is, or with ``force``).

    ``settled``: the output has been quiet since the foreground was read. Only then is a
    prompt the shell's hooks did not mark (:func:`phux.client.pane_state.unmarked_prompt`:
    hooks replaced for good, ``exec bash``) taken for one: ``run`` then types its markers,
    which work in any shell. Before, the marks may just be on their way."""
    from phux.client.pane_state import REMOTE, SHELLS, TUI, project_parts, unmarked_prompt

    fg = mirror.foreground_of(pane)
    phase = view.shell_phase
    own_shell = fg is None or fg.pgrp == pane.pid
    path = "shell" if phase != "none" and own_shell else "markers"
    if force:
        return path, None
    program, state = project_parts(mirror.alive, pane.pid, fg, view)
    name = program or "the program"
    if state == "hidden_input":
        return path, (
            f"the pane waits for hidden input ({name} turned echo off: a password or "
            "`read -s` prompt)"
        )
    if fg is not None and (fg.name or not own_shell) and fg.name not in SHELLS | REMOTE:
        kind = "a full-screen program" if state == TUI else "a running program"
        return path, f"{name} holds the pane ({kind}), not the shell"
    if view.alternate:
        return path, f"{name} shows a full-screen program (the alternate screen is up)"
    if path == "markers":
        return path, None
    if unmarked_prompt(pane.pid, fg, view):
        if settled:
            return "markers", None
        return path, "the shell's prompt carries no marks (its hooks were replaced?)"
    if phase == "continuation":
        return path, "the shell waits at a continuation prompt (an unfinished command line)"
    if phase == "running":
        what = ""
        if view.commands:
            what = f": {getattr(view.commands[-1], 'command', '')!r}"
        return path, f"the shell is running a command{what}"
    pending = view.pending_input
    if pending:
        return path, f"input is pending at the prompt: {pending!r}"
    return path, None


_FIRST_PROMPT_AGE_MS = 10_000
"""A pane younger than this with no mark yet may still be starting its integrated shell."""


_FIRST_PROMPT_QUIET = 0.1


_UNMARKED_PROMPT_QUIET = 0.3
"""How long an integrated bash or zsh must stay quiet with its line editor up, its
prompt not marked, before ``run`` takes that prompt for one drawn without marks."""


def run_command(
    client: ClientCore,
    target: str,
    command: str | Sequence[str],
    *,
    timeout: float | None,
    deadline: Deadline,
    force: bool = False,
) -> RunOutcome:
    text = command if isinstance(command, str) else " ".join(command)
    if not text.strip():
        raise InvalidArgument(
            "run needs a command", remedy="give the command line, e.g. phux run work 'make test'"
        )
    if "\x00" in text:
        raise InvalidArgument("the command contains a NUL byte")
    started = time.monotonic()
    run_deadline = deadline.earliest(Deadline.after(timeout))
    pane = client.resolve(target, deadline)
    if not pane.alive:
        raise TerminalGone(f"terminal {pane.id} has exited")
    client.used(pane, deadline)
    _refuse_own_job(pane, force)
    lock = RunLock(client.local_anchor, pane.terminal)
    shown = command_line(command, pane.foreground.name if pane.foreground else None)
    try:
        waited = lock.acquire(run_deadline)
    except DeadlineExceeded:
        raise RunTimedOut(shown, int((time.monotonic() - started) * 1000)) from None
    try:
        if waited:  # another run typed meanwhile: what the listing said is stale
            pane = client.resolve(pane.id, run_deadline)
            if not pane.alive:
                raise TerminalGone(f"terminal {pane.id} has exited")
        return _run_locked(client, pane, command, run_deadline, started, force)
    finally:
        lock.release()


def _refuse_own_job(pane: Pane, force: bool) -> None:
    """``run .`` called by the command the pane runs (a script an agent ran there): the
    pane comes back to its prompt only once this call returns, and a run that typed
    that command holds the pane's run lock until then. Refused at once, never waited."""
    fg = pane.foreground
    if force or fg is None or os.environ.get("PHUX_TERMINAL") != str(pane.terminal):
        return
    if fg.pgrp != os.getpgrp():
        return  # not the pane's foreground job (a background job may wait its turn)
    from phux.client.errors import PaneBusy

    raise PaneBusy(
        f"not typing into {pane.id}: run was called from inside it, by the command it is "
        "running (its prompt comes back only after this run ends)",
        holder=fg.name,
        state="running",
    )


def _run_locked(
    client: ClientCore,
    pane: Pane,
    command: str | Sequence[str],
    run_deadline: Deadline,
    started: float,
    force: bool,
) -> RunOutcome:
    fg = pane.foreground
    shell = fg.name if fg is not None else None
    try:
        # Other clients' keys typed meanwhile are told from ours (phux.client.typeahead).
        typeahead = client.shows_input(run_deadline)
        if client._one_shot(pane):
            # No engine: the checks read the bootstrap's bytes (phux.client.shell_scan)
            # and the output renders from the bytes, so a one-shot run of a command
            # with plain output never imports the engine.
            mirror = client.scan_mirror(pane, run_deadline, input_events=typeahead)
        else:
            mirror = client.mirror(pane, run_deadline, input_events=typeahead)
    except DeadlineExceeded:
        raise RunTimedOut(command_line(command, shell), _ms_since(started)) from None
    try:
        if not mirror.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        _await_first_prompt(client, pane, mirror, run_deadline, started, command, force)
        view = _view(mirror)
        path, refusal = _holder_text(pane, mirror, view, force)
        if refusal is not None and not mirror.foreground_known:
            # A program may have ended since the listing (C-c just before `run`).
            pane = client.listed_after_subscribe(pane, mirror, run_deadline)
            path, refusal = _holder_text(pane, mirror, view, force)
        if refusal is not None:
            # Keys typed just before (send-keys '…' Enter, or C-c) may be mid-way:
            # echoed but not yet run, a program not yet ended. Let the output settle
            # once (TERMINAL_STATE keeps the foreground current) before refusing.
            limit = run_deadline.earliest(Deadline.after(_SETTLE_MAX))
            _settle(client, mirror, run_deadline, limit)
            view = _view(mirror)
            path, refusal = _holder_text(pane, mirror, view, force, settled=True)
            # The shell holds the terminal but its marks say a command runs: it
            # may be about to print the command's end (a program just ended by
            # C-c or a signal; the shell not yet scheduled). Give it the rest of
            # the second; a builtin still running (`read`) is refused after it.
            while refusal is not None and _shell_finishing(pane, mirror, view):
                try:
                    client.pump(limit)
                except DeadlineExceeded:
                    if run_deadline.expired():
                        raise
                    break
                view = _view(mirror)
                path, refusal = _holder_text(pane, mirror, view, force, settled=True)
        if refusal is None and not force:
            refusal, waited = _unread_keys(client, pane, run_deadline)
            if waited and refusal is None:
                view = _view(mirror)  # (the shell read them meanwhile, and echoed them)
                path, refusal = _holder_text(pane, mirror, view, force, settled=True)
        mirror.raw = None  # read: stop keeping the bytes
        if refusal is not None:
            from phux.client.errors import PaneBusy
            from phux.client.pane_state import project_parts

            fg_now = mirror.foreground_of(pane)
            program, state = project_parts(mirror.alive, pane.pid, fg_now, view)
            raise PaneBusy(
                f"not typing into {pane.id}: {refusal}", holder=program or "", state=state
            )
        if path == "shell":
            return _run_integrated(
                client, pane, mirror, view, command, shell, run_deadline, started
            )
        return _run_markers(client, pane, mirror, command, shell, run_deadline, started)
    finally:
        client.release(mirror)


def _unread_keys(client: ClientCore, pane: Pane, deadline: Deadline) -> tuple[str | None, bool]:
    """``(refusal, waited)``: why not to type yet, keys typed before, ending inside a
    line, still unread in the tty (the shell is stopped, busy in a hook or not yet
    scheduled): invisible on the screen, and a command typed behind them would join
    their line. (Whole lines typed before are not in the way: the shell runs them
    first, and run waits for its own line's marks.) A filtered listing tells
    (spec/L1.md §8.1); nothing announces the read, so it is asked again every
    ``UNREAD_RECHECK_S`` for up to ``_SETTLE_MAX``. ``waited``: output was pumped
    meanwhile (what the caller judged the pane by may be stale)."""
    limit = deadline.earliest(Deadline.after(_SETTLE_MAX))
    waited = False
    while True:
        listed = client.resolve(pane.id, deadline)
        unread = listed.unread_input
        if not unread or not listed.unread_line_open:
            return None, waited
        if limit.expired():
            return (
                f"{unread} bytes typed before, ending inside a line, have not been read "
                "by the shell yet (it is stopped or busy)"
            ), waited
        waited = True
        try:
            client.pump(limit.earliest(Deadline.after(UNREAD_RECHECK_S)))
        except DeadlineExceeded:
            if deadline.expired():
                raise


_SETTLE_QUIET = 0.15


_SETTLE_MAX = 1.0


def _shell_finishing(pane: Pane, mirror: Mirror, view: ShellView) -> bool:
    """The pane may be about to be back at its prompt: the shell holds the terminal
    but has not printed the command's end yet, or the foreground group's leader has
    exited (its name is gone) and the shell is about to take the terminal back."""
    fg = mirror.foreground_of(pane)
    if not mirror.alive or fg is None:
        return False
    if fg.pgrp != pane.pid:
        return not fg.name
    return view.shell_phase == "running"


def _settle(client: ClientCore, mirror: Mirror, deadline: Deadline, limit: Deadline) -> None:
    """Pump until no output for ``_SETTLE_QUIET`` (at most until ``limit``)."""
    mirror.last_output = time.monotonic()
    while mirror.alive and not limit.expired():
        quiet_at = mirror.last_output + _SETTLE_QUIET
        if time.monotonic() >= quiet_at:
            return
        try:
            client.pump(limit.earliest(Deadline(at=quiet_at)))
        except DeadlineExceeded:
            if deadline.expired():
                raise


def _view(mirror: Mirror) -> ShellView:
    from phux.client.shell_scan import view, view_of_engine

    if mirror.engine is not None:
        return view_of_engine(mirror.engine)
    raw = bytes(mirror.raw or b"")
    return view(raw, mirror.cols, mirror.rows, mirror.checkpoint_bytes, mirror.mark_key)


def integrated_shell(pane: Pane) -> str | None:
    """The shell the server started with its integration (``phux.shell``): bash, zsh,
    fish or sh; None for a pane whose program phux did not integrate."""
    from phux.signed_marks import pane_shell

    return pane_shell(pane.metadata) or None


def editor_up(pane: Pane, fg: Foreground | None) -> bool:
    """The pane's own bash or zsh holds the terminal with its line editor up (the tty
    out of canonical mode: readline, zle), which they put up only to read a command
    line. Not fish: its reader takes the tty while config.fish still runs, and keeps
    it while its prompt event handlers do."""
    return integrated_shell(pane) in ("bash", "zsh") and at_line_editor(pane.pid, fg)


def shell_starting(pane: Pane, integration: str) -> bool:
    """An integrated shell that has not marked its first prompt yet: it announced
    itself (``133;I;start``: its startup files run), or phux started it with its
    integration (fish announces only after config.fish) and no mark came."""
    if integration == "starting":
        return True
    return integration == "none" and integrated_shell(pane) is not None


def _await_first_prompt(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    deadline: Deadline,
    started: float,
    command: str | Sequence[str],
    force: bool = False,
) -> None:
    """Before typing, wait (within the run's deadline) for the prompt of a shell that is
    drawing it: an integrated shell whose startup files still run (it announced
    itself, or phux started it with its integration, and no marked prompt came yet),
    or whose prompt hooks run after a command's D mark, before the prompt's B (a hook's
    child may hold the terminal meanwhile: that is not a running command). A shell
    that drew a prompt without marks (its editor is up, the pane quiet) is not waited
    for. Nothing is typed until then; past the deadline, ``ShellNotReady`` says so.
    ``force`` (type anyway) does not wait for an integrated shell."""
    if integrated_shell(pane) is None:
        _await_unmarked(client, pane, mirror, deadline, started, command)
        return
    if force:
        return
    view = _view(mirror)
    seen = mirror.next_seq
    up_since: float | None = None
    try:
        while mirror.alive:
            starting = shell_starting(pane, view.integration)
            if not starting and not view.drawing:
                return
            fg = mirror.foreground_of(pane)
            wake = deadline
            if not editor_up(pane, fg):
                up_since = None
            else:
                # The editor reads a line though the marks did not say the prompt is
                # drawn: once the pane stayed quiet since, no marks come for this prompt
                # (a theme's hook replaced them). Counted from when the editor came up
                # too: the tty's modes may be read before the prompt printed next.
                if up_since is None:
                    up_since = time.monotonic()
                quiet_at = max(mirror.last_output, up_since) + _UNMARKED_PROMPT_QUIET
                if time.monotonic() >= quiet_at:
                    return
                wake = deadline.earliest(Deadline(at=quiet_at))
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if deadline.expired():
                    raise
            if mirror.next_seq != seen:
                seen = mirror.next_seq
                view = _view(mirror)
    except DeadlineExceeded:
        fg = mirror.foreground_of(pane)
        shown = command_line(command, integrated_shell(pane))
        holder = f": {fg.name} runs" if fg is not None and fg.pgrp != pane.pid and fg.name else ""
        if shell_starting(pane, view.integration):
            why = f"the shell is still starting (its startup files drew no prompt yet{holder})"
        else:
            why = f"the shell is still drawing its prompt (its prompt hooks run{holder})"
        raise ShellNotReady(shown, _ms_since(started), why) from None


def _await_unmarked(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    deadline: Deadline,
    started: float,
    command: str | Sequence[str],
) -> None:
    """A young pane whose program phux did not integrate may not have drawn its first
    prompt yet: wait for output that then settles (up to ``_FIRST_PROMPT_QUIET`` once
    it printed), so that the markers are not typed into a shell still starting."""
    from phux.client.pane_state import foreground_is_shell

    fg = pane.foreground
    if fg is not None and fg.pgrp != pane.pid:
        return
    if fg is not None and not foreground_is_shell(pane.pid, fg):
        # Not a shell (`-- sleep 600` may never print): nothing to await. (A shell phux
        # integrated is awaited in _await_first_prompt even so: a listing taken before
        # its exec names the server's own program.)
        return
    if pane.created_ms and time.time() * 1000 - pane.created_ms > _FIRST_PROMPT_AGE_MS:
        return
    try:
        # (No mark can end this wait: a pane phux did not integrate has no key, and
        # no client or replica acts on an unsigned mark.)
        while mirror.alive:
            if mirror.next_seq > 0:
                quiet_at = mirror.last_output + _FIRST_PROMPT_QUIET
                if time.monotonic() >= quiet_at:
                    return
                wake = deadline.earliest(Deadline(at=quiet_at))
            else:
                wake = deadline
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if deadline.expired():
                    raise
    except DeadlineExceeded:
        shown = command_line(command, fg.name if fg else None)
        raise RunTimedOut(shown, _ms_since(started)) from None

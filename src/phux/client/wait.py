"""``wait``: block until the screen shows text (or matches a regex), goes idle, the
shell is at an idle prompt (``prompt``), or the pane's program exits (``exit``).

The condition is re-evaluated after each batch of output frames (everything
readable when the socket wakes us), never on a poll timer. Text conditions
match logical lines (soft-wrapped rows joined): the viewport, plus the rows
that scrolled into history since the previous check, so text that appears and
scrolls away within one batch still counts. In a flood of plain output
(printable ASCII, SGRs, CR LFs) the lines are searched as they come, as text
(client/line_scan.py), the engine is not looked at meanwhile, and the mirror
feeds it 16 MiB at a time, drawing only the rows its history keeps: every line
that passed is still searched, however far past the history it scrolled.
Output dropped for the client while it fell 4 MiB behind (a tombstone, spec/L1.md
§6) is searched from the fresh bootstrap's checkpoint on (its journal's bytes, as
they come); what came before that checkpoint is state only: the wait reads the
screen it gives, not the lines that scrolled past, and says how much it lost
(``lost_bytes``).
Idle means no output for
``idle_ms`` (default 500 ms) since the wait started or the last output.
A pane that has exited (or exits meanwhile) meets no condition: TerminalGone
says so with its exit status.
``--until`` / ``--regex`` take precedence over ``--idle``. ``timeout=0`` checks
the current state once; a quiet-time condition (idle, prompt) is watched for
just that quiet time (see ``_once_limit``).

``prompt``: the pane's own shell holds the foreground (the PTY says so, kept
current by TERMINAL_STATE) and is at an idle primary prompt: with shell
integration, its prompt's B mark is drawn, nothing is typed after it and
nothing printed for 100 ms (keys sent just before may still be on their way);
without (no OSC 133 mark seen, or a shell whose hooks are gone:
``pane_state.unmarked_prompt``), the pane has printed nothing for ``idle_ms``
(default 500 ms), except that a shell phux integrated that is still starting
(announced, or ``phux.shell`` with no mark yet: its startup files run) is at no
prompt until its first marked prompt, or until its bash or zsh line editor is up.
Either way, keys its shell has not read yet (the server's count of the pane's unread
input, read when the prompt looks idle) mean it is not idle.
``exit``: the pane's program has exited; the result carries its status
(``exit_code``: the code, or 128 + the signal).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded, InvalidArgument, TerminalGone, describe_exit
from phux.client.line_scan import LineScan
from phux.client.mirror import FLOOD_HOLD_BYTES, HOLD_BYTES
from phux.client.models import WaitResult

if TYPE_CHECKING:
    from phux.client.core import ClientCore

DEFAULT_IDLE_MS = 500
PROMPT_QUIET_S = 0.1
"""``prompt`` with shell integration: how long the drawn prompt must stay quiet (keys
sent just before the wait may still be on their way to the shell)."""
ONCE_SLACK_S = 0.05
"""``timeout=0`` on a condition that needs a quiet time: how long past that time the
one check may come, so that a pane that stayed quiet is seen to have."""


def _once_limit(deadline: Deadline, timeout: float | None, quiet_s: float) -> Deadline:
    """The wait's limit. ``timeout=0`` checks the current state once: a condition
    that is quiet time (idle, a prompt that must stay still) cannot be seen at an
    instant, so the check watches for exactly that long, then answers: met when no
    output came, timed out otherwise. Nothing tells when the pane last printed
    before the wait began, so the quiet time is counted from the wait's start."""
    if timeout == 0:
        timeout = quiet_s + ONCE_SLACK_S if quiet_s > 0 else 0.0
    return deadline.earliest(Deadline.after(timeout))


def wait_for(
    client: ClientCore,
    target: str | None,
    *,
    until: str | None,
    regex: str | None,
    idle_ms: int | None,
    timeout: float | None,
    deadline: Deadline,
    prompt: bool = False,
    exit: bool = False,
) -> WaitResult:
    if until is not None and regex is not None:
        raise InvalidArgument("give either --until or --regex, not both")
    if sum((until is not None or regex is not None, prompt, exit)) > 1:
        raise InvalidArgument("give one condition: --until/--regex, --prompt or --exit")
    if prompt or exit:
        if idle_ms is not None and idle_ms < 0:
            raise InvalidArgument("--idle must be a non-negative number of milliseconds")
        return _wait_shell(client, target, prompt, idle_ms, timeout, deadline)
    if until == "":
        raise InvalidArgument("--until needs non-empty text")
    pattern: re.Pattern[str] | None = None
    if regex is not None:
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise InvalidArgument(f"bad --regex {regex!r}: {exc}") from None
    if idle_ms is not None and idle_ms < 0:
        raise InvalidArgument("--idle must be a non-negative number of milliseconds")
    text_mode = until is not None or pattern is not None
    idle_s = (DEFAULT_IDLE_MS if idle_ms is None else idle_ms) / 1000.0
    quiet_s = 0.0 if text_mode else idle_s
    limit = _once_limit(deadline, timeout, quiet_s)  # --timeout counts from the call

    pane = client.resolve(target, deadline)  # a read: the active pane stays
    mirror = client.mirror(pane, deadline)
    if timeout == 0:
        # Watched from when the pane is seen: replaying a long scrollback (or a loaded
        # machine) must not use up the quiet time before the first look.
        limit = _once_limit(deadline, timeout, quiet_s)
    fresh_rows = 0
    news: list[bytes] = []
    """Output since the last look, for the line scan."""

    def count_rows(seq: int, data: bytes) -> None:
        nonlocal fresh_rows
        fresh_rows += data.count(b"\n") + len(data) // max(mirror.cols, 1) + 1
        if scan.active:
            news.append(data)

    def line_matches(line: str) -> bool:
        if until is not None:
            return until in line
        assert pattern is not None
        return pattern.search(line) is not None

    def matches() -> bool:
        nonlocal fresh_rows
        engine = mirror.engine
        assert engine is not None
        scroll = min(fresh_rows, engine.history_size)
        fresh_rows = 0
        lines = engine.logical_lines(scroll if scroll > 0 else None)
        return any(map(line_matches, lines))

    # Plain output (text, SGRs, CR LFs) is searched as lines as it comes, and the
    # engine is not looked at meanwhile: the mirror feeds it in big feeds, of which it
    # draws only the rows its history keeps (client/line_scan.py).
    scan = LineScan(line_matches, until)
    tombstones = mirror.tombstones
    lost_before = mirror.lost_bytes

    def stop_scan(*_: int) -> None:
        scan.stop()  # a resize, or output lost: the engine must be looked at

    def scanned() -> bool | None:
        """The news searched as lines: True/False whether a line matched, None if the
        engine must be looked at (not plain, or the stream broke: a tombstone, a
        resize)."""
        nonlocal fresh_rows
        if not scan.active or mirror.tombstones != tombstones:
            scan.stop()
            return None
        data = b"".join(news)
        news.clear()
        found = scan.feed(data)
        if found is not None:
            fresh_rows = 0  # (searched: the engine's history need not be)
        return found

    # (a search for a text needs only its length of the line before the cursor)
    tail = None if scan.needle is None else len(scan.needle)

    def look() -> bool:
        """The engine's lines (it is fed all that came), then the scan from there."""
        news.clear()
        met = matches()
        rescan()
        return met

    def rescan() -> None:
        """The scan from the engine's state on (it is fed all that came). Also when
        a fresh bootstrap after a tombstone rebuilt it: the journal's bytes that
        follow its checkpoint are searched as they come, as live output is."""
        nonlocal tombstones, fresh_rows
        news.clear()
        engine = mirror.engine
        tombstones = mirror.tombstones
        if not mirror.ready:
            fresh_rows = 0  # (the rebuilt engine's rows are all fresh from here)
        prefix = None if engine is None else engine.plain_line_prefix(tail)
        if prefix is None and engine is not None:
            # (fed up to a CR whose LF has not come yet: a flood cut anywhere)
            scan.start_at_cr(engine.plain_line_at_cr(tail))
        else:
            scan.start(prefix)

    checks = 0
    mirror.bytes_hooks.append(count_rows)
    mirror.hold_bytes = FLOOD_HOLD_BYTES
    mirror.resize_hooks.append(stop_scan)
    mirror.gap_hooks.append(stop_scan)
    mirror.reset_hooks.append(rescan)
    mirror.last_output = time.monotonic()
    try:
        while True:
            checks += 1
            if text_mode:
                found = scanned()
                if found is None:
                    found = look()
                if found:
                    return _result(
                        True,
                        checks,
                        mirror.engine,
                        pane.terminal,
                        lost=mirror.lost_bytes - lost_before,
                    )
                if not mirror.alive:
                    raise TerminalGone(
                        f"terminal {pane.id} {describe_exit(mirror.exit)} before the condition"
                        " was met"
                    )
                wake = limit
                # (while the scan goes on, no frame was opened since the last look)
                engine = None if scan.active else mirror.engine
                held = engine.frame_deadline if engine is not None else None
                if held is not None:
                    # A 2026 frame holds what is read: look again when its bound passes
                    # (the live screen shows then, with or without more output).
                    wake = limit.earliest(Deadline(at=held))
            else:
                if not mirror.alive:
                    # Quiet, but because it is gone: say so, with its status.
                    raise TerminalGone(f"terminal {pane.id} {describe_exit(mirror.exit)}")
                quiet_until = mirror.last_output + idle_s
                if time.monotonic() >= quiet_until:
                    return _result(True, checks, mirror.engine, pane.terminal)
                wake = limit.earliest(Deadline(at=quiet_until))
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if limit.expired():
                    checks += 1
                    if text_mode:
                        met = scanned() or look()
                    else:
                        met = time.monotonic() >= (mirror.last_output + idle_s)
                    return _result(
                        met,
                        checks,
                        mirror.engine,
                        pane.terminal,
                        lost=mirror.lost_bytes - lost_before,
                    )
    finally:
        mirror.bytes_hooks.remove(count_rows)
        mirror.resize_hooks.remove(stop_scan)
        mirror.gap_hooks.remove(stop_scan)
        mirror.reset_hooks.remove(rescan)
        mirror.hold_bytes = HOLD_BYTES
        client.release(mirror)


def _result(
    met: bool,
    checks: int,
    engine: object,
    pane: int,
    state: tuple[str | None, str] | None = None,
    exit_code: int | None = None,
    lost: int = 0,
) -> WaitResult:
    from phux.client import models
    from phux.engine import Terminal
    from phux.engine.screen_state import screen_state

    models.ScreenState  # noqa: B018 - make the annotation resolvable for msgspec

    assert isinstance(engine, Terminal)
    data = engine.project_data(pane=pane)
    if state is not None:
        program, name = state
        if program is not None:
            data["program"] = program
        data["state"] = name
    return WaitResult(
        met=met, checks=checks, screen=screen_state(data), exit_code=exit_code, lost_bytes=lost
    )


def _prompt_drawn(engine: object) -> bool:
    """The engine's last OSC 133 mark is a primary prompt's B with nothing typed after."""
    from phux.engine import Terminal

    assert isinstance(engine, Terminal)
    if engine.shell_phase != "prompt" or engine.pending_input:
        return False
    cycle = engine.screen.shell.cycle
    return bool(cycle) and cycle[-1][0] == "B"


def _wait_shell(
    client: ClientCore,
    target: str | None,
    prompt: bool,
    idle_ms: int | None,
    timeout: float | None,
    deadline: Deadline,
) -> WaitResult:
    from phux.client.pane_state import project_mirror, unmarked_prompt
    from phux.client.run import editor_up, shell_starting
    from phux.client.run_base import UNREAD_RECHECK_S, _status_code

    idle_s = (DEFAULT_IDLE_MS if idle_ms is None else idle_ms) / 1000.0
    limit = deadline.earliest(Deadline.after(timeout))
    pane = client.resolve(target, deadline)
    mirror = client.mirror(pane, deadline)
    if prompt:  # the shell may have taken the terminal back since the listing
        pane = client.listed_after_subscribe(pane, mirror, deadline)
    checks = 0
    mirror.last_output = time.monotonic()
    if timeout == 0 and prompt:  # the quiet time depends on the marks the mirror saw
        engine = mirror.engine
        with_marks = (
            engine is not None
            and engine.shell_phase != "none"
            and not unmarked_prompt(pane.pid, mirror.foreground_of(pane), engine)
        )
        limit = _once_limit(deadline, 0, PROMPT_QUIET_S if with_marks else idle_s)

    def status() -> int | None:
        return _status_code(mirror.exit) if not mirror.alive else None

    try:
        while True:
            checks += 1
            wake = limit
            if not prompt:
                met = not mirror.alive
            elif not mirror.alive:
                raise TerminalGone(f"terminal {pane.id} exited before its shell was at a prompt")
            else:
                fg = mirror.foreground_of(pane)
                own = fg is None or fg.pgrp == pane.pid
                engine = mirror.engine
                marks = engine is not None and engine.shell_phase != "none"
                # Keys sent just before may not be echoed yet: the prompt must also
                # have stayed quiet a moment (without marks: for idle_ms).
                quiet_at = mirror.last_output + (PROMPT_QUIET_S if marks else idle_s)
                drawn = _prompt_drawn(engine) if marks else True
                if marks and not drawn and unmarked_prompt(pane.pid, fg, engine):
                    # Its hooks are gone (replaced, `exec bash`): a prompt without
                    # marks, as `state` says, held to a prompt without marks' quiet time.
                    drawn = True
                    quiet_at = mirror.last_output + idle_s
                if drawn and not marks and engine is not None:
                    # An integrated shell still starting (its startup files run) is at
                    # no prompt, unless its line editor is up (a prompt without marks).
                    integration = str(getattr(engine, "integration", "none"))
                    drawn = not shell_starting(pane, integration) or editor_up(pane, fg)
                met = own and drawn and time.monotonic() >= quiet_at
                if own and drawn and not met:
                    wake = limit.earliest(Deadline(at=quiet_at))
                if met and client.resolve(pane.id, deadline).unread_input:
                    # A quiet prompt with keys its shell has not read (it is stopped,
                    # busy in a hook, descheduled): not idle. Nothing announces the
                    # read, so the kernel's count is asked again a moment later.
                    met = False
                    wake = limit.earliest(Deadline.after(UNREAD_RECHECK_S))
            if met:
                return _result(
                    True,
                    checks,
                    mirror.engine,
                    pane.terminal,
                    project_mirror(pane, mirror),
                    status(),
                )
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if limit.expired():
                    return _result(
                        False,
                        checks,
                        mirror.engine,
                        pane.terminal,
                        project_mirror(pane, mirror),
                        status(),
                    )
    finally:
        client.release(mirror)

"""``wait``: block until the screen shows text (or matches a regex), or goes idle.

The condition is re-evaluated after each batch of output frames (everything
readable when the socket wakes us), never on a poll timer. Text conditions
match logical lines (soft-wrapped rows joined): the viewport, plus the rows
that scrolled into history since the previous check, so text that appears and
scrolls away within one batch still counts. Idle means no output for
``idle_ms`` (default 500 ms) since the wait started or the last output.
A pane that has exited (or exits meanwhile) meets no condition: TerminalGone
says so with its exit status.
``--until`` / ``--regex`` take precedence over ``--idle``.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded, InvalidArgument, TerminalGone, describe_exit
from phux.client.models import WaitResult

if TYPE_CHECKING:
    from phux.client.client import Client

DEFAULT_IDLE_MS = 500


def wait_for(
    client: Client,
    target: str | None,
    *,
    until: str | None,
    regex: str | None,
    idle_ms: int | None,
    timeout: float | None,
    deadline: Deadline,
) -> WaitResult:
    if until is not None and regex is not None:
        raise InvalidArgument("give either --until or --regex, not both")
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
    limit = deadline.earliest(Deadline.after(timeout))

    pane = client.resolve(target, deadline)
    client.used(pane, deadline)
    mirror = client.mirror(pane, deadline)
    fresh_rows = 0

    def count_rows(seq: int, data: bytes) -> None:
        nonlocal fresh_rows
        fresh_rows += data.count(b"\n") + len(data) // max(mirror.cols, 1) + 1

    def matches() -> bool:
        nonlocal fresh_rows
        engine = mirror.engine
        assert engine is not None
        scroll = min(fresh_rows, engine.history_size)
        fresh_rows = 0
        lines = engine.logical_lines(scroll if scroll > 0 else None)
        if until is not None:
            return any(until in line for line in lines)
        assert pattern is not None
        return any(pattern.search(line) for line in lines)

    checks = 0
    mirror.bytes_hooks.append(count_rows)
    mirror.last_output = time.monotonic()
    try:
        while True:
            checks += 1
            if text_mode:
                if matches():
                    return _result(True, checks, mirror.engine, pane.terminal)
                if not mirror.alive:
                    raise TerminalGone(
                        f"terminal {pane.id} {describe_exit(mirror.exit)} before the condition"
                        " was met"
                    )
                wake = limit
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
                    met = (
                        matches()
                        if text_mode
                        else time.monotonic() >= (mirror.last_output + idle_s)
                    )
                    return _result(met, checks, mirror.engine, pane.terminal)
    finally:
        mirror.bytes_hooks.remove(count_rows)
        client.release(mirror)


def _result(met: bool, checks: int, engine: object, pane: int) -> WaitResult:
    from phux.client import models
    from phux.engine import Terminal

    models.ScreenState  # noqa: B018 - make the annotation resolvable for msgspec

    assert isinstance(engine, Terminal)
    return WaitResult(met=met, checks=checks, screen=engine.project(pane=pane))

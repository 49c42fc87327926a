"""What the agent verbs do, free of click: call :mod:`phux.client`, print, exit.

Both front doors of the CLI call these functions: the click commands in
:mod:`phux.cli.verbs` (help, usage errors, every verb) and the quick path in
:mod:`phux.cli.quick`, which parses the common one-shot command lines itself so
that ``phux send-keys`` / ``snapshot`` / ``run`` / ``wait`` never import click.
A verb ends by returning (exit 0) or raising :class:`VerbExit`; errors are
rendered here as the verb's one stderr line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from phux.cli.render import box_screen, error_line, screen_json, to_json, write_err, write_out
from phux.signed_marks import pane_key

# One meaning and one default for the CLI and MCP (phux.timeouts); re-exported.
from phux.timeouts import GRACE as GRACE
from phux.timeouts import RUN_TIMEOUT as RUN_TIMEOUT
from phux.timeouts import WAIT_TIMEOUT as WAIT_TIMEOUT

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import NoReturn

    from phux.client.client import Client
    from phux.client.deadline import Deadline

# Error exit codes each verb may use (seed 001 §5.2); anything else becomes 1.
_ERROR_EXITS: dict[str, frozenset[int]] = {
    "kill": frozenset({1, 2}),
    "run": frozenset({1, 3, 4, 5, 125}),
    "wait": frozenset({1, 124}),
}


class VerbExit(Exception):
    """End the verb with ``code`` (its diagnostics, if any, are already written)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def exit_code_for(verb: str, exit_code: int, code: str) -> int:
    """The exit code of a failed verb, restricted to the codes its seed row allows."""
    if code == "timeout" and verb == "run":
        return 125  # phux gave up
    if code == "timeout" and verb == "wait":
        return 124
    allowed = _ERROR_EXITS.get(verb, frozenset({1}))
    return exit_code if exit_code in allowed else 1


def fail(
    verb: str, code: str, message: str, exit_code: int, remedy: str, as_json: bool
) -> NoReturn:
    write_err(error_line(verb, code, message, exit_code, remedy, as_json=as_json))
    raise VerbExit(exit_code)


def finish(code: int) -> NoReturn:
    raise VerbExit(code)


def _click_control(exc: BaseException) -> bool:
    """Whether ``exc`` is click's own control flow (only possible once click is loaded)."""
    click = sys.modules.get("click")
    if click is None:
        return False
    return isinstance(exc, click.exceptions.Exit | click.ClickException)


@contextmanager
def reporting(verb: str, as_json: bool) -> Iterator[None]:
    """Render a client error as the verb's one stderr line and exit with its code."""
    from phux.client.errors import PhuxError
    from phux.runtime_paths import SocketDirError

    try:
        yield
    except PhuxError as exc:
        code = exit_code_for(verb, exc.exit_code, exc.code)
        fail(verb, exc.code, exc.message, code, exc.remedy, as_json)
    except SocketDirError as exc:
        fail(verb, "socket_dir", str(exc), 1, "choose another --socket path", as_json)
    except (BrokenPipeError, VerbExit):
        raise
    except Exception as exc:
        if _click_control(exc):
            raise
        # A bug, not a user error: still one line (JSON under --json), unless debugging.
        if os.environ.get("PHUX_DEBUG"):
            raise
        message = f"{type(exc).__name__}: {exc}"
        remedy = "this is a bug in phux; rerun with PHUX_DEBUG=1 for a traceback"
        fail(verb, "internal_error", message, 1, remedy, as_json)


def deadline_after(seconds: float | None) -> Deadline:
    from phux.client.deadline import Deadline

    return Deadline.after(seconds)


def open_client(socket: str | None) -> Client:
    from phux.client.client import Client

    return Client(socket, keep_warm=0, client_name="phux-cli")


# ---------------------------------------------------------------- the one-shot verbs


def snapshot(
    *,
    as_json: bool,
    scrollback: int | None,
    cells: bool,
    timeout: float,
    socket: str | None,
    target: str | None,
    schema_version: int | None = None,
) -> None:
    with reporting("snapshot", as_json), open_client(socket) as client:
        screen = client.snapshot_data(
            target,
            scrollback=scrollback,
            cells=cells,
            version=schema_version,
            deadline=deadline_after(timeout),
        )
    write_out(screen_json(screen) + "\n" if as_json else box_screen(screen))


def send_keys(
    *, timeout: float, socket: str | None, target: str, keys: Sequence[str], literal: bool = False
) -> None:
    with reporting("send-keys", False), open_client(socket) as client:
        client.send_keys(target, list(keys), deadline=deadline_after(timeout), literal=literal)


def run(
    *,
    timeout: float,
    as_json: bool,
    force: bool = False,
    socket: str | None,
    target: str,
    cmd: Sequence[str],
) -> NoReturn:
    command = " ".join(cmd)
    if not command.strip():  # a bad argument: 2, as for every other usage error
        fail(
            "run",
            "usage",
            "run needs a non-empty CMD",
            2,
            "give the command line, e.g. phux run work 'make test'",
            as_json,
        )
    with reporting("run", as_json), open_client(socket) as client:
        result = client.run(
            target,
            list(cmd),
            timeout=timeout,
            force=force,
            deadline=deadline_after(timeout + GRACE),
        )
    if as_json:
        from phux.client.models import RunResult

        write_out(to_json(RunResult.of(result)) + "\n")
    else:
        out = result.output
        write_out(out + ("\n" if out and not out.endswith("\n") else ""))
        if result.truncated:
            write_err("phux run: output truncated (the start scrolled out of the history)\n")
    finish(result.exit_code if 0 <= result.exit_code <= 255 else 255)


def history(
    *, as_json: bool, last: int | None, timeout: float, socket: str | None, target: str
) -> None:
    with reporting("history", as_json), open_client(socket) as client:
        deadline = deadline_after(timeout)
        result = client.history(target, last=last, deadline=deadline)
        # (only to explain an empty list: whether phux integrated the pane's shell)
        integrated = not result.commands and bool(
            pane_key(client.resolve(target, deadline).metadata)
        )
    if as_json:
        write_out(to_json(result) + "\n")
        return
    lines = []
    for entry in result.commands:
        code = "-" if entry.exit_code is None else str(entry.exit_code)
        took = "running" if entry.running else _duration(entry.duration_ms)
        # One line per command: a multi-line command shows its newlines escaped.
        command = entry.command.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{code:>4}  {took:>7}  {command}\n")
    if lines:
        write_out("".join(lines))
    else:
        write_err(_NO_COMMANDS[integrated])


_NO_COMMANDS = {
    True: "phux history: no commands yet (none ran since the shell started, or its "
    "startup files turned phux's shell integration off: PHUX_SHELL_INTEGRATION=0)\n",
    False: "phux history: no commands: the pane's program reports none (phux integrates "
    "bash, zsh, fish, sh and dash when it starts them without --no-shell-integration)\n",
}


def _duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def wait(
    *,
    until: str | None,
    regex: str | None,
    idle: int | None,
    timeout: float,
    as_json: bool,
    socket: str | None,
    target: str | None,
    prompt: bool = False,
    exit_: bool = False,
) -> NoReturn:
    with reporting("wait", as_json), open_client(socket) as client:
        result = client.wait(
            target,
            until=until,
            regex=regex,
            idle_ms=idle,
            timeout=timeout,
            prompt=prompt,
            exit=exit_,
            deadline=deadline_after(timeout + GRACE),
        )
    if as_json:
        write_out(to_json(result.screen) + "\n")
    if result.met:
        # --exit mirrors the program's status, as `run` mirrors a command's.
        finish(result.exit_code if exit_ and result.exit_code is not None else 0)
    if until is not None:
        what = f"text {until!r}"
    elif regex is not None:
        what = f"regex {regex!r}"
    elif prompt:
        what = "the shell to be at an idle prompt"
    elif exit_:
        what = "the pane's program to exit"
    else:
        what = "the pane to go idle"
    lost = ""
    if result.lost_bytes:
        # Not met may not mean not shown: say what the wait could not search.
        lost = (
            f" ({result.lost_bytes} bytes of output were dropped for this client while it"
            " fell behind, and never searched)"
        )
    write_err(
        error_line(
            "wait",
            "timeout",
            f"timed out after {timeout:g} s waiting for {what}{lost}",
            124,
            "raise --timeout, or check the pane with `phux snapshot`",
            as_json=as_json,
        )
    )
    finish(124)

"""Entry point of the ``phux`` command.

Kept light: the common one-shot command lines (``send-keys``, ``snapshot``,
``run``, ``wait`` with their usual options) are parsed by :mod:`phux.cli.quick`
without importing click; everything else (help, usage errors, the other verbs)
goes through the click group in :mod:`phux.cli.app`. Either way the verbs
import the client (and through it the wire codec, and the engine only when they
replay output) when they run, so ``phux send-keys`` does not pay for trio or
pyte.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    import click


def __getattr__(name: str) -> object:
    if name == "cli":  # the click group, loaded on demand
        from phux.cli.app import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _wants_json(args: Sequence[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _verb_name(args: Sequence[str], group: click.Group) -> str:
    for arg in args:
        if not arg.startswith("-"):
            return arg if arg in group.commands else ""
    return ""


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the exit flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _flushed(code: int) -> int:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    return code


_quick_ran = False
"""Whether the last run_cli took the quick path (so :func:`main` may skip teardown)."""


# A one-shot verb allocates a lot (imports, an engine's screens) and frees little:
# the default thresholds (700, 10, 10) make it spend ~8% of its time in cyclic
# collections that find nothing. These still collect young garbage every 50k
# allocations, so a long `wait` or `run` stays bounded.
_ONE_SHOT_GC_THRESHOLDS = (50_000, 20, 20)


def run_cli(argv: Sequence[str] | None = None, *, one_shot: bool = False) -> int:
    """Run one command line; return its exit code (never raises for the user's mistakes).

    ``one_shot``: this process exists for this one command line (the ``phux``
    entry point), so a quick verb may tune the process for that.
    """
    global _quick_ran
    from phux.cli.actions import VerbExit
    from phux.cli.quick import parse

    args = list(sys.argv[1:] if argv is None else argv)
    call = parse(args)
    _quick_ran = call is not None
    if call is None:
        return _run_click(args)
    verb, params = call
    if one_shot:
        import gc

        gc.set_threshold(*_ONE_SHOT_GC_THRESHOLDS)
    try:
        verb(**params)
    except VerbExit as exc:
        return _flushed(exc.code)
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except KeyboardInterrupt:  # as click does: end the ^C line
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("\n")
            sys.stderr.flush()
        return 130
    return _flushed(0)


def _run_click(args: list[str]) -> int:
    import click

    from phux.cli.actions import VerbExit
    from phux.cli.app import cli
    from phux.cli.render import error_line, write_err

    try:
        rv = cli.main(args, prog_name="phux", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except VerbExit as exc:
        return _flushed(exc.code)
    except click.ClickException as exc:
        if _wants_json(args):
            write_err(
                error_line(
                    _verb_name(args, cli),
                    "usage",
                    exc.format_message(),
                    exc.exit_code,
                    "see --help",
                    as_json=True,
                )
            )
        else:
            with contextlib.suppress(BrokenPipeError):
                exc.show()
        return exc.exit_code
    except click.Abort:  # Ctrl-C (click has already ended the ^C line)
        return 130
    except BrokenPipeError:  # click handles the ones raised inside a command
        _quiet_stdout()
        return 1
    except KeyboardInterrupt:
        return 130
    return _flushed(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


def _exit_now(code: int) -> None:
    """Exit without tearing the interpreter down (no module or object finalisation).

    A one-shot verb is done once its output is flushed and its client closed;
    dismantling the modules and the engine's screens would only delay the exit
    an agent waits for (15-40 ms). atexit handlers still run.
    """
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout and code == 0:
                code = 1
    atexit._run_exitfuncs()
    os._exit(code)


def main() -> None:
    code = run_cli(one_shot=True)
    if _quick_ran:  # only the quick verbs: nothing of theirs needs finalising
        _exit_now(code)
    sys.exit(code)

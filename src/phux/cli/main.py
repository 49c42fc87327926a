"""Entry point of the ``phux`` command.

Kept light: the verbs import the client (and through it the wire codec and the
engine) only when they run, so ``phux send-keys`` does not pay for trio or pyte.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

import click

from phux import __version__
from phux.cli.verbs import VERBS

_HELP = """phux: a terminal server for AI agents and the people beside them.

\b
The agent loop is read -> act -> wait -> read:
  phux new --json -s build
  phux send-keys build 'make test' Enter
  phux wait --until 'passed' --timeout 120 build
  phux snapshot --json --scrollback 200 build
or, when only the exit code and output matter:
  phux run --json build make test

Options go before TARGET. `phux VERB --help` lists each verb's options, the
TARGET grammar and its exit codes.
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help=_HELP,
)
@click.version_option(__version__, prog_name="phux")
def cli() -> None:
    pass


for _verb in VERBS:
    cli.add_command(_verb)

from phux.cli.server_cmd import server_cmd  # noqa: E402

cli.add_command(server_cmd)

from phux.cli.mcp_cmd import mcp_cmd  # noqa: E402

cli.add_command(mcp_cmd)

from phux.cli.attach_cmd import attach_cmd  # noqa: E402

cli.add_command(attach_cmd)


def _wants_json(args: Sequence[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _verb_name(args: Sequence[str]) -> str:
    for arg in args:
        if not arg.startswith("-"):
            return arg if arg in cli.commands else ""
    return ""


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the exit flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run one command line; return its exit code (never raises for the user's mistakes)."""
    from phux.cli.render import error_line, write_err

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = cli.main(args, prog_name="phux", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        if _wants_json(args):
            write_err(
                error_line(
                    _verb_name(args),
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
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


def main() -> None:
    sys.exit(run_cli())

"""The verbs that make, name, size and end sessions, windows and panes: new, kill,
rename, resize, signal, new-window, split, tag and untag (:mod:`phux.cli.verbs`
holds the reading and typing ones).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from phux.cli import help as texts
from phux.cli.actions import (
    deadline_after,
    finish,
    reporting,
)
from phux.cli.complete import complete_session, complete_target
from phux.cli.render import (
    to_json,
    write_out,
)

if TYPE_CHECKING:
    pass
from phux.cli.options import (
    Verb,
    deadline_option,
    env_option,
    json_option,
    open_client,
    select_option,
    socket_option,
    verb_epilog,
)

# ---------------------------------------------------------------- new


@click.command(
    "new",
    cls=Verb,
    short_help="Create a session (starting the server if needed).",
    epilog=verb_epilog(
        "\b\nExamples:\n"
        "  phux new --json -s build            # create-only, prints the ids\n"
        "  phux new -s logs -c /var/log -- tail -f syslog",
        "Options must come before COMMAND: everything from COMMAND on is the\n"
        "program's argv. Put `--` before a COMMAND that has options of its own.",
        texts.exit_codes(
            ("0", "created (when attached: then detached, or the program exited)"),
            ("1", "the name is taken / failure (when attached: the server went away)"),
            ("128+N", "when attached: the program was killed by signal N"),
        ),
        texts.PANE_ENV,
        texts.JSON_ERRORS,
    ),
)
@click.option("-s", "name", metavar="NAME", help="Session name (default: smallest free number).")
@env_option
@click.option(
    "-c",
    "cwd",
    metavar="CWD",
    help="Working directory of the first pane (default: the current one).",
)
@click.option(
    "-d",
    "detached",
    is_flag=True,
    help="Do not attach; print how to reach the session instead.",
)
@click.option(
    "--no-shell-integration",
    "no_shell_integration",
    is_flag=True,
    help="Start a shell without phux's prompt and command marks (OSC 133/7).",
)
@click.option(
    "--record",
    "record",
    metavar="FILE",
    default=None,
    help="Record the pane to FILE (asciicast v2) from its start, in a background "
    "`phux record --since` that ends when the pane exits.",
)
@click.option(
    "--record-input",
    "record_input",
    is_flag=True,
    help='With --record: also record the input written to the pane ("i" events).',
)
@json_option(
    'Create only and print {"session", "terminal_id"}; needs -s, and a taken name is an error.'
)
@deadline_option
@socket_option
@click.argument("command", nargs=-1)
def new_cmd(
    name: str | None,
    env: dict[str, str],
    cwd: str | None,
    detached: bool,
    no_shell_integration: bool,
    record: str | None,
    record_input: bool,
    as_json: bool,
    timeout: float,
    socket: str | None,
    command: tuple[str, ...],
) -> None:
    """Create a session running COMMAND (default: your shell), then attach to it.

    Starts the server first when none is running. Without -s the session gets
    the smallest free numeric name; an explicit -s NAME that exists is an
    error. It attaches only when stdin and stdout are a terminal and -d is not
    given; otherwise it prints the session's name and the commands that reach
    it. --json is create-only and never attaches.
    """
    if as_json and name is None:
        raise click.UsageError("--json needs an explicit -s NAME (it is create-only)")
    if record_input and record is None:
        raise click.UsageError("--record-input needs --record FILE")
    directory = os.path.abspath(cwd) if cwd is not None else os.getcwd()
    remote = bool(os.environ.get("PHUX_HOST"))
    with reporting("new", as_json):
        if record is not None:
            from phux.cli.record_cmd import prepare_file

            record = prepare_file(record)
        from phux.client import InvalidArgument, ensure_server

        deadline = deadline_after(timeout)
        # On another host, `phux proxy` there starts its server when needed.
        path = socket if remote else ensure_server(socket, deadline=deadline)
        with open_client(None if path is None else os.fspath(path)) as client:
            try:
                result = client.new(
                    name,
                    cwd=directory,
                    command=list(command),
                    env=env,
                    shell_integration=not no_shell_integration,
                    deadline=deadline,
                )
            except InvalidArgument as exc:
                import shlex

                if name is None and len(command) == 1 and "/" not in command[0]:
                    # tmux's grammar: a bare word is the program. Meant as a name?
                    word = shlex.quote(command[0])
                    exc.remedy = f"to name the session {word}, say -s: phux new -s {word}"
                raise
        if record is not None:
            from phux.cli.record_cmd import start_background

            start_background(
                record,
                result.terminal_id,
                None if path is None else os.fspath(path),
                with_input=record_input,
            )
    if as_json:
        write_out(to_json(result) + "\n")
        return
    if not detached and sys.stdin.isatty() and sys.stdout.isatty():
        with reporting("new", False):
            from phux.tui.attach import run_attach

            code = run_attach(
                f"@{result.terminal_id}", socket=None if path is None else os.fspath(path)
            )
        finish(code)
    import shlex

    via = f" --socket {shlex.quote(socket)}" if socket else ""
    session = shlex.quote(result.session)
    write_out(
        f"created session {session} (pane @{result.terminal_id})\n"
        f"  read it:  phux snapshot{via} {session}\n"
        f"  type:     phux send-keys{via} {session} 'echo hi' Enter\n"
        f"  run:      phux run{via} {session} make test\n"
        f"  attach:   phux attach{via} {session}\n"
        f"  end it:   phux kill{via} {session}\n"
        f"  {session} names its active pane; @{result.terminal_id} names this pane always\n"
    )


# ---------------------------------------------------------------- kill


@click.command(
    "kill",
    cls=Verb,
    short_help="Kill a session, window or pane, or the server.",
    epilog=verb_epilog(
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(
            ("0", "killed (with --server: also when no server was running)"),
            ("1", "target not found or already exited / no server"),
            ("2", "the server refused / usage error"),
        ),
    ),
)
@click.option("--server", "server", is_flag=True, help="Stop the server and every terminal.")
@deadline_option
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def kill_cmd(server: bool, timeout: float, socket: str | None, target: str | None) -> None:
    """Kill TARGET: a whole session (all its panes at once), a window, a pane or @N.

    With --server, stop the server instead (no TARGET); a server that is not
    running counts as stopped.
    """
    if server:
        if target is not None:
            raise click.UsageError("kill --server takes no TARGET")
        with reporting("kill", False):
            from phux.client import InvalidArgument, kill_server

            host = os.environ.get("PHUX_HOST")
            if host:
                raise InvalidArgument(
                    "kill --server stops this machine's server only",
                    remedy=f"run `ssh {host} phux kill --server`",
                )
            kill_server(socket, deadline=deadline_after(timeout))
        return
    if target is None:
        raise click.UsageError("missing TARGET (or --server)")
    with reporting("kill", False), open_client(socket) as client:
        client.kill(target, deadline=deadline_after(timeout))


# ---------------------------------------------------------------- rename / resize / signal


@click.command(
    "rename",
    cls=Verb,
    short_help="Rename a session.",
    epilog=verb_epilog(
        texts.ORDERING,
        texts.exit_codes(("0", "renamed"), ("1", "no such session / name taken / no server")),
    ),
)
@deadline_option
@socket_option
@click.argument("session", shell_complete=complete_session)
@click.argument("new_name", metavar="NEW")
def rename_cmd(timeout: float, socket: str | None, session: str, new_name: str) -> None:
    """Rename the session SESSION to NEW; its notes and its windows' follow the name."""
    with reporting("rename", False), open_client(socket) as client:
        client.rename(session, new_name, deadline=deadline_after(timeout))


def parse_size(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, int]:
    """``COLSxROWS``, each 1..1000."""
    cols_text, sep, rows_text = value.lower().partition("x")
    if not sep or not cols_text.isdigit() or not rows_text.isdigit():
        raise click.BadParameter(f"{value!r} is not COLSxROWS, e.g. 120x40")
    cols, rows = int(cols_text), int(rows_text)
    if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
        raise click.BadParameter(f"{value!r}: columns and rows must be 1..1000")
    return cols, rows


@click.command(
    "resize",
    cls=Verb,
    short_help="Resize a pane's terminal.",
    epilog=verb_epilog(
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(("0", "resized"), ("1", "no server / miss / failure")),
    ),
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("size", metavar="COLSxROWS", callback=parse_size)
def resize_cmd(timeout: float, socket: str | None, target: str, size: tuple[int, int]) -> None:
    """Resize TARGET's terminal to SIZE, written COLSxROWS (e.g. 120x40).

    The program gets SIGWINCH. An attached client may resize it back. Lines
    the program wrapped are wrapped again at the new width, in the scrollback
    too (as tmux does); the alternate screen (vim, top) is not.
    """
    cols, rows = size
    with reporting("resize", False), open_client(socket) as client:
        client.resize(target, cols, rows, deadline=deadline_after(timeout))


@click.command(
    "signal",
    cls=Verb,
    short_help="Send a signal to a pane's foreground program.",
    epilog=verb_epilog(
        "NAME is one of HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH\n"
        "(with or without SIG, any case).",
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(("0", "sent"), ("1", "no server / miss / unknown signal")),
    ),
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("name")
def signal_cmd(timeout: float, socket: str | None, target: str, name: str) -> None:
    """Send signal NAME to the foreground process group of TARGET."""
    with reporting("signal", False), open_client(socket) as client:
        client.signal(target, name, deadline=deadline_after(timeout))


# ---------------------------------------------------------------- windows, panes, tags


class CommandVerb(Verb):
    """A verb whose COMMAND starts after `--` (new-window, split): options may come
    anywhere before it, as tmux's ``new-window -n NAME``; after `--` every word is
    the program's argv."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trailing = None
        self.context_settings["allow_interspersed_args"] = True


def _argv(command: tuple[str, ...]) -> list[str]:
    """COMMAND: a leading `--` (when click left one) only separates it."""
    return list(command[1:] if command[:1] == ("--",) else command)


SELECT_RULE = (
    "The session's active pane (what its name targets) stays where it was unless\n"
    "--select: reach the new pane by the @N printed, or SESSION:W.P."
)


def _print_pane(result: Any, as_json: bool) -> None:
    if as_json:
        write_out(to_json(result) + "\n")
    else:
        write_out(f"{result.session}:{result.window}.{result.pane} @{result.terminal_id}\n")


@click.command(
    "new-window",
    cls=CommandVerb,
    short_help="Add a window to a session.",
    epilog=verb_epilog(
        "\b\nExamples:\n"
        "  phux new-window build -n logs -- tail -f build.log\n"
        "  phux snapshot build:logs        # or build:1, build:1.0",
        "Prints SESSION:W.P @N. Options may come anywhere before `--`; write `--`\n"
        "before a COMMAND (every word after it is the program's argv).",
        SELECT_RULE,
        texts.PANE_ENV,
        texts.exit_codes(("0", "created"), ("1", "no such session / bad name / failure")),
        texts.JSON_ERRORS,
    ),
)
@click.option("-n", "name", metavar="NAME", help="Window name, for NAME:WINDOW selectors.")
@click.option("-c", "cwd", metavar="CWD", help="Working directory (default: the current one).")
@env_option
@select_option
@json_option('Print {"session", "window", "pane", "terminal_id"}.')
@deadline_option
@socket_option
@click.argument("session", shell_complete=complete_session)
@click.argument("command", nargs=-1)
def new_window_cmd(
    name: str | None,
    cwd: str | None,
    env: dict[str, str],
    select: bool,
    as_json: bool,
    timeout: float,
    socket: str | None,
    session: str,
    command: tuple[str, ...],
) -> None:
    """Add a window to SESSION running COMMAND (default: your shell); its pane is 0."""
    with reporting("new-window", as_json), open_client(socket) as client:
        result = client.new_window(
            session,
            name=name,
            command=_argv(command),
            cwd=os.path.abspath(cwd) if cwd is not None else None,
            env=env,
            select=select,
            deadline=deadline_after(timeout),
        )
    _print_pane(result, as_json)


@click.command(
    "split",
    cls=CommandVerb,
    short_help="Add a pane to a window.",
    epilog=verb_epilog(
        "\b\nExample:\n  phux split build:0 -- htop     # then: phux snapshot build:0.1",
        "Prints SESSION:W.P @N. Options may come anywhere before `--`; write `--`\n"
        "before a COMMAND (every word after it is the program's argv).",
        SELECT_RULE,
        texts.PANE_ENV,
        texts.TARGET_GRAMMAR,
        texts.exit_codes(("0", "created"), ("1", "target not found / failure")),
        texts.JSON_ERRORS,
    ),
)
@click.option("-c", "cwd", metavar="CWD", help="Working directory (default: the current one).")
@env_option
@select_option
@json_option('Print {"session", "window", "pane", "terminal_id"}.')
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("command", nargs=-1)
def split_cmd(
    cwd: str | None,
    env: dict[str, str],
    select: bool,
    as_json: bool,
    timeout: float,
    socket: str | None,
    target: str,
    command: tuple[str, ...],
) -> None:
    """Add a pane running COMMAND (default: your shell) to the window of TARGET's pane,
    with the next pane index and the same size."""
    with reporting("split", as_json), open_client(socket) as client:
        result = client.split(
            target,
            command=_argv(command),
            cwd=os.path.abspath(cwd) if cwd is not None else None,
            env=env,
            select=select,
            deadline=deadline_after(timeout),
        )
    _print_pane(result, as_json)


def _tag_verb(remove: bool) -> click.Command:
    verb = "untag" if remove else "tag"

    @click.command(
        verb,
        cls=Verb,
        short_help=("Remove tags from a pane." if remove else "Tag a pane, for #TAG selectors."),
        epilog=verb_epilog(
            "Tags are words without `,`, `:`, `.` or spaces. Prints the pane's tags after.",
            texts.TARGET_GRAMMAR,
            texts.ORDERING_TRAILING,
            texts.exit_codes(("0", "done"), ("1", "target not found / bad tag / failure")),
        ),
    )
    @deadline_option
    @socket_option
    @click.argument("target", shell_complete=complete_target)
    @click.argument("tags", metavar="TAG...", nargs=-1, required=True)
    def command(timeout: float, socket: str | None, target: str, tags: tuple[str, ...]) -> None:
        with reporting(verb, False), open_client(socket) as client:
            after = client.tag(target, list(tags), deadline_after(timeout), remove=remove)
        write_out(",".join(after) + "\n")

    command.help = (
        "Remove each TAG from TARGET's pane."
        if remove
        else "Add each TAG to TARGET's pane: `#TAG` then selects it (and its siblings "
        "tagged alike)."
    )
    return command


tag_cmd = _tag_verb(remove=False)
untag_cmd = _tag_verb(remove=True)

"""The agent verbs: parse, call :mod:`phux.client`, print, map errors to exit codes.

Nothing here decides anything a second front end would need: selectors, key
names, sentinels, wait conditions and server start-up all live in the client.
The client (and through it msgspec, the wire codec and the engine) is
imported inside each verb, so ``phux --help`` and the verbs that do not need
the engine stay quick to start.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from phux.cli import actions
from phux.cli import help as texts
from phux.cli.actions import (
    GRACE,
    RUN_TIMEOUT,
    WAIT_TIMEOUT,
    deadline_after,
    exit_code_for,
    fail,
    finish,
    reporting,
)
from phux.cli.complete import complete_keys, complete_target
from phux.cli.render import (
    session_lines,
    to_json,
    watch_line,
    write_err,
    write_out,
)
from phux.timeouts import TIMEOUTS

if TYPE_CHECKING:
    pass
from phux.cli.manage_cmd import (
    kill_cmd,
    new_cmd,
    new_window_cmd,
    rename_cmd,
    resize_cmd,
    signal_cmd,
    split_cmd,
    tag_cmd,
    untag_cmd,
)
from phux.cli.options import (
    Verb,
    deadline_option,
    json_option,
    open_client,
    socket_option,
    verb_epilog,
)

F = TypeVar("F", bound=Callable[..., Any])

WATCH_EVENTS = (
    "title_changed",
    "bell",
    "dirty",
    "idle",
    "pane_spawned",
    "pane_closed",
    "command_started",
    "command_finished",
)

__all__ = [
    "GRACE",
    "VERBS",
    "Verb",
    "deadline_after",
    "exit_code_for",
    "fail",
    "finish",
    "reporting",
]


# ---------------------------------------------------------------- ls


@click.command(
    "ls",
    cls=Verb,
    short_help="List sessions.",
    epilog=verb_epilog(
        texts.exit_codes(("0", "listed (possibly no sessions)"), ("1", "no server / failure")),
        texts.JSON_ERRORS,
    ),
)
@json_option(
    'Print SessionList JSON: {"schema_version", "sessions": [{name, windows, attached, exited}]}.'
)
@click.option(
    "--panes",
    "with_panes",
    is_flag=True,
    help="Also list each session's panes (with --json: a `panes` list per session: id, "
    "window, window_name, index, cols, rows, tags, title, cwd, program, state). The state "
    "comes from the listing alone (what holds the terminal, its tty modes): a shell at a "
    "continuation prompt or running a builtin reads `prompt` here; `snapshot` and `wait` "
    "also read the shell's marks.",
)
@deadline_option
@socket_option
def ls_cmd(as_json: bool, with_panes: bool, timeout: float, socket: str | None) -> None:
    """List sessions, sorted by name: `name: N windows (attached)`.

    A session whose panes all exited is listed as `(exited)` (JSON: "exited": true)
    while the server keeps them: its name still reaches their final screens.
    Never starts a server: with none running it says so and exits 1.
    """
    panes = None
    with reporting("ls", as_json):
        deadline = deadline_after(timeout)
        with open_client(socket) as client:
            local = client.host is None
            if with_panes:
                found, panes = client.ls_panes(deadline=deadline)
            else:
                found = client.ls(deadline=deadline)
            sessions = sorted(found, key=lambda s: s.name)
    if as_json:
        from phux.client.models import SessionList

        write_out(to_json(SessionList.from_infos(sessions, panes, local=local)) + "\n")
    elif sessions:
        write_out(session_lines(sessions))
        if panes is not None:
            from phux.client.models import PaneSummary

            for session in sessions:
                for pane in panes.get(session.name, []):
                    row = PaneSummary.of(pane, local=local)
                    tags = ",".join(row.tags) or "-"
                    write_out(
                        f"  {session.name}:{row.window}.{row.index}\t{row.id}\t"
                        f"{row.cols}x{row.rows}\t{row.program or '-'}\t{tags}\t{row.cwd or '-'}\n"
                    )
    else:
        write_err("phux ls: no sessions\n")


# ---------------------------------------------------------------- snapshot


@click.command(
    "snapshot",
    cls=Verb,
    short_help="Read a pane's screen.",
    epilog=verb_epilog(
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.SCROLLBACK,
        texts.exit_codes(("0", "ok"), ("1", "no server / target not found / failure")),
        texts.JSON_ERRORS,
    ),
)
@json_option(
    "Print ScreenState JSON (schema_version 4: pane, cols, rows, cursor, lines, scrollback, "
    "title, wrapped, alternate, and styles with --cells)."
)
@click.option(
    "--scrollback",
    type=click.IntRange(min=0),
    is_flag=False,
    flag_value=0,
    default=None,
    metavar="[N]",
    help="Include history above the viewport: bare --scrollback (or =0) for all of it, "
    "N for the newest N rows (see below). Absent: the viewport only.",
)
@click.option(
    "--cells",
    is_flag=True,
    help="Add `styles`: the styled text as runs (row, col, width, text, the SGR flags and "
    "fg/bg that differ from the default, OSC 133 mark prompt / input).",
)
@click.option(
    "--schema-version",
    type=click.Choice(["3", "4"]),
    default=None,
    help="Print an older ScreenState shape: 3 has per-cell `cells` instead of `styles` "
    "(kept for one version). Default: 4.",
)
@deadline_option
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def snapshot_cmd(
    as_json: bool,
    scrollback: int | None,
    cells: bool,
    schema_version: str | None,
    timeout: float,
    socket: str | None,
    target: str | None,
) -> None:
    """Print a pane's screen without attaching to it or resizing it.

    TARGET defaults to the last used session. Without --json the screen is
    drawn in a box: the header names the pane (@N), its size and title, the
    footer gives the cursor as row,column (1-based).
    """
    actions.snapshot(
        as_json=as_json,
        scrollback=scrollback,
        cells=cells,
        timeout=timeout,
        socket=socket,
        target=target,
        schema_version=int(schema_version) if schema_version else None,
    )


# ---------------------------------------------------------------- send-keys


@click.command(
    "send-keys",
    cls=Verb,
    short_help="Type keys into a pane.",
    epilog=verb_epilog(
        "\b\nKEYS are tmux key names or literal text, e.g.\n"
        "  phux send-keys work 'make test' Enter\n"
        "  phux send-keys work C-c\n"
        "Names: Enter Tab BTab Escape Space BSpace Up Down Left Right Home End\n"
        "PageUp PageDown IC DC F1-F12, with C- (control), M- (meta) and S- (shift)\n"
        "prefixes. Any other word is typed literally, character by character.",
        texts.TARGET_GRAMMAR,
        texts.ORDERING_TRAILING,
        texts.exit_codes(
            ("0", "written to the terminal"),
            ("1", "no server / miss / failure, or the program did not read it in --timeout"),
        ),
    ),
)
@click.option(
    "-l",
    "--literal",
    is_flag=True,
    help="Type every word as text, even one that names a key (tmux's -l).",
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("keys", nargs=-1, required=True, shell_complete=complete_keys)
def send_keys_cmd(
    literal: bool, timeout: float, socket: str | None, target: str, keys: tuple[str, ...]
) -> None:
    """Type KEYS into the pane TARGET, as one write.

    Literal text is typed as keystrokes, never as a bracketed paste (so
    `':wq' Enter` saves in vim); use `phux paste` to paste. Returns once the
    server has written the bytes to the terminal; it does not wait for the
    program to react (use `phux wait` for that). One call is typed as one piece
    that no other client's input interleaves with. A program that is not
    reading its input takes a few KiB, then no more: if the call times out
    (the error says the program is not reading), none of it is typed later,
    not even what the tty had taken. C-c, C-\\ or C-z alone go ahead of
    input queued by others and discard it.
    """
    actions.send_keys(timeout=timeout, socket=socket, target=target, keys=keys, literal=literal)


# ---------------------------------------------------------------- paste


@click.command(
    "paste",
    cls=Verb,
    short_help="Paste text into a pane.",
    epilog=verb_epilog(
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(
            ("0", "written"),
            ("1", "no server / miss / failure, or the program did not read it in --timeout"),
        ),
    ),
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("text", required=False)
def paste_cmd(timeout: float, socket: str | None, target: str, text: str | None) -> None:
    """Paste TEXT (or all of stdin) into TARGET as one paste.

    Bracketed when the program asked for bracketed paste, so a shell or
    editor takes it as typed text, not as commands; no key names are parsed.
    """
    if text is None:
        if sys.stdin.isatty():
            write_err("phux paste: reading the text from stdin (end it with Ctrl-D)\n")
        text = sys.stdin.read()
    with reporting("paste", False), open_client(socket) as client:
        client.paste(target, text, deadline=deadline_after(timeout))


# ---------------------------------------------------------------- run


@click.command(
    "run",
    cls=Verb,
    short_help="Run a shell command in a pane; mirror its exit code.",
    epilog=verb_epilog(
        "\b\nExamples:\n"
        "  phux run --timeout 120 --json build 'cargo test 2>&1 | tail'\n"
        '  phux run build echo "it\'s"        # several words: each one quoted',
        texts.RUN_RULES,
        texts.TARGET_GRAMMAR,
        texts.ORDERING_TRAILING,
        TIMEOUTS,
        texts.exit_codes(
            ("0-255", "the command's own exit code (clamped to 0..255)"),
            ("3", "pane_busy: refused, the pane is not at an idle shell prompt; nothing typed"),
            ("4", "incomplete_command: the shell asked for more input; interrupted, nothing ran"),
            ("5", "pane_exited: the pane's program died while the command ran"),
            (
                "125",
                "phux gave up waiting (--timeout); no JSON is printed (the shell still\n"
                "        starting or drawing its prompt: nothing was typed, the message says so)",
            ),
            ("1", "no server / target not found / other failure"),
        ),
        "Codes 3, 4, 5 and 125 can also be a command's own: with --json, a failure\n"
        "of phux itself prints no document and writes its one JSON line to stderr.",
        texts.JSON_ERRORS,
    ),
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=RUN_TIMEOUT,
    show_default=True,
    metavar="SECS",
    help="Give up (exit 125) when the command has not finished after SECS seconds "
    "(more than 0; the command keeps running).",
)
@json_option("Print RunResult JSON: {command, exit_code, output, duration_ms, truncated}.")
@click.option(
    "--force",
    is_flag=True,
    help="Type the command even when the pane is not at an idle shell prompt.",
)
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("cmd", nargs=-1, required=True)
def run_cmd(
    timeout: float,
    as_json: bool,
    force: bool,
    socket: str | None,
    target: str,
    cmd: tuple[str, ...],
) -> None:
    """Run CMD in the shell of TARGET and mirror its exit code.

    One CMD word is a shell command line, typed as is; several words are each
    quoted, so `phux run work echo "it's"` prints it's. Prints the command's
    whole output (or, with --json, a RunResult) and exits with the command's
    own exit code, so `phux run work make && next` composes like a shell.
    """
    actions.run(
        timeout=timeout, as_json=as_json, force=force, socket=socket, target=target, cmd=cmd
    )


# ---------------------------------------------------------------- wait


@click.command(
    "wait",
    cls=Verb,
    short_help="Wait until a pane shows TEXT, goes idle, is at a prompt or exits.",
    epilog=verb_epilog(
        "--until matches any visible row, including the shell's echo of the command\n"
        "you just typed: match text that only the command's output contains.",
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        "--prompt: with shell integration, until the shell's prompt is drawn with\n"
        "nothing typed after it; without (no OSC 133 marks), until the shell holds\n"
        "the terminal and the pane has printed nothing for --idle MS (default 500).\n"
        "Either way not while the shell has keys it has not read yet.",
        TIMEOUTS,
        texts.exit_codes(
            ("0", "the condition holds"),
            ("0-255", "--exit: the program's own exit status (128+N: killed by signal N)"),
            ("124", "--timeout passed first (with --json the last screen is printed)"),
            (
                "1",
                "no server / target not found / bad pattern / the pane exited (the"
                " message gives its exit status)",
            ),
        ),
        texts.JSON_ERRORS,
    ),
)
@click.option("--until", metavar="TEXT", help="Wait until TEXT appears on the screen.")
@click.option("--regex", metavar="RE", help="Wait until the Python regex RE matches a row.")
@click.option(
    "--idle",
    type=click.IntRange(min=0),
    metavar="MS",
    help="Wait until the pane has printed nothing for MS milliseconds "
    "(the default condition when neither --until nor --regex is given).",
)
@click.option(
    "--prompt",
    is_flag=True,
    help="Wait until the pane's shell is at an idle prompt (its program's state is `prompt`).",
)
@click.option(
    "--exit",
    "exit_",
    is_flag=True,
    help="Wait until the pane's program exits; exit with its status. Name the pane by @N: "
    "an exited pane is no longer part of its session.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=WAIT_TIMEOUT,
    show_default=True,
    metavar="SECS",
    help="Give up (exit 124) after SECS seconds; 0 checks the current state once "
    "(--idle and --prompt are watched for just their quiet time).",
)
@json_option("Print the final ScreenState JSON (also on timeout).")
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def wait_cmd(
    until: str | None,
    regex: str | None,
    idle: int | None,
    prompt: bool,
    exit_: bool,
    timeout: float,
    as_json: bool,
    socket: str | None,
    target: str | None,
) -> None:
    """Wait until TARGET's screen shows --until TEXT or matches --regex RE, its
    shell is at an idle prompt (--prompt), its program exited (--exit), or (with
    none of these) until it has been idle for --idle MS.

    TARGET defaults to the last used session. The read neither attaches nor
    resizes the pane.
    """
    if until is not None and regex is not None:
        raise click.UsageError("--until and --regex are exclusive: give one")
    if sum((until is not None or regex is not None, prompt, exit_)) > 1:
        raise click.UsageError("give one condition: --until/--regex, --prompt or --exit")
    actions.wait(
        until=until,
        regex=regex,
        idle=idle,
        timeout=timeout,
        as_json=as_json,
        socket=socket,
        target=target,
        prompt=prompt,
        exit_=exit_,
    )


# ---------------------------------------------------------------- watch


@click.command(
    "watch",
    cls=Verb,
    short_help="Stream a pane's events, one per line.",
    epilog=verb_epilog(
        "\b\nEvents: " + ", ".join(WATCH_EVENTS) + ".\n"
        "Human lines are tab-separated: EVENT, @N, then key=value fields.",
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(
            ("0", "the stream ended (--until seen, --timeout passed, or the pane closed)"),
            ("124", "--timeout passed before the --until event"),
            ("1", "no server / target not found / the stream ended before --until"),
        ),
        texts.JSON_ERRORS,
    ),
)
@json_option('One JSON object per line: {"event": NAME, "terminal": "@N", ...}.')
@click.option(
    "--until",
    "until_event",
    type=click.Choice(WATCH_EVENTS),
    metavar="EVENT",
    help="Stop after the first EVENT (one of the names below).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECS",
    help="Stop after SECS seconds (default: run until the pane closes or Ctrl-C).",
)
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def watch_cmd(
    as_json: bool,
    until_event: str | None,
    timeout: float | None,
    socket: str | None,
    target: str | None,
) -> None:
    """Print TARGET's live events as they happen, one per line.

    Neither attaches nor resizes the pane. stdout carries only events;
    diagnostics go to stderr. TARGET defaults to the last used session.
    """
    import msgspec

    deadline = deadline_after(None if timeout is None else timeout + GRACE)
    with (
        reporting("watch", as_json),
        open_client(socket) as client,
        client.watch(target, until_event=until_event, timeout=timeout, deadline=deadline) as events,
    ):
        for event in events:
            doc = msgspec.to_builtins(event)
            write_out(to_json(doc) + "\n" if as_json else watch_line(doc), flush=True)
        met, timed_out = events.met, events.timed_out
    if until_event is None or met:
        finish(0)
    if timed_out:
        fail(
            "watch",
            "timeout",
            f"no {until_event} event within {timeout:g} s",
            124,
            "raise --timeout",
            as_json,
        )
    fail(
        "watch",
        "stream_ended",
        f"the stream ended before a {until_event} event",
        1,
        "the pane closed first: read its final screen with `phux snapshot TARGET`",
        as_json,
    )


# ---------------------------------------------------------------- history


@click.command(
    "history",
    cls=Verb,
    short_help="List the commands a pane's shell ran.",
    epilog=verb_epilog(
        "\b\nFrom the shell integration phux injects into bash, zsh, fish and sh\n"
        "(or any shell printing OSC 133 marks): commands typed by agents and by\n"
        "people alike, as far back as the pane's history reaches.",
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(("0", "listed (possibly none)"), ("1", "no server / target not found")),
        texts.JSON_ERRORS,
    ),
)
@json_option(
    'Print HistoryResult JSON: {"schema_version", "pane", "commands": [{command, cwd, '
    "exit_code, started_ms, duration_ms, running, output, truncated}]}, oldest first."
)
@click.option(
    "-n",
    "last",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Only the last N commands.",
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
def history_cmd(
    as_json: bool, last: int | None, timeout: float, socket: str | None, target: str
) -> None:
    """List the commands TARGET's shell ran, oldest first.

    One line per command: exit code (- when unknown), duration, command line.
    --json adds each command's working directory, start time and output.
    """
    actions.history(as_json=as_json, last=last, timeout=timeout, socket=socket, target=target)


VERBS: Sequence[click.Command] = (
    ls_cmd,
    snapshot_cmd,
    send_keys_cmd,
    paste_cmd,
    run_cmd,
    wait_cmd,
    watch_cmd,
    history_cmd,
    new_cmd,
    kill_cmd,
    rename_cmd,
    resize_cmd,
    signal_cmd,
    new_window_cmd,
    split_cmd,
    tag_cmd,
    untag_cmd,
)

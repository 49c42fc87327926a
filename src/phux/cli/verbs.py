"""The agent verbs: parse, call :mod:`phux.client`, print, map errors to exit codes.

Nothing here decides anything a second front end would need: selectors, key
names, sentinels, wait conditions and server start-up all live in the client.
The client (and through it msgspec, the wire codec and the engine) is
imported inside each verb, so ``phux --help`` and the verbs that do not need
the engine stay quick to start.
"""

from __future__ import annotations

import os
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
from phux.cli.complete import complete_keys, complete_session, complete_target
from phux.cli.render import (
    session_lines,
    to_json,
    watch_line,
    write_err,
    write_out,
)
from phux.timeouts import TIMEOUTS

if TYPE_CHECKING:
    from phux.client.client import Client

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


# ---------------------------------------------------------------- plumbing


class Verb(click.Command):
    """A verb, with the CLI's one grammar on top of click's parser.

    * A verb without a free-form trailing argument (snapshot, wait, watch, kill
      ...) takes options anywhere: ``snapshot build --json --scrollback 200``.
    * A verb whose last argument takes the rest of the line (KEYS, CMD) reads
      options only before TARGET, and everything after TARGET literally; a word
      there that is one of the verb's own options (``run build 'make' --json``)
      is refused with the remedy, since typing it was most likely not meant.
      After ``--`` nothing is an option.
    * ``--scrollback`` takes a row count only as the next word of digits (or
      ``=N``); otherwise it is bare and means all history.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = dict(kwargs.pop("context_settings", None) or {})
        settings.setdefault("help_option_names", ["-h", "--help"])
        settings.setdefault("max_content_width", 100)
        kwargs["context_settings"] = settings
        super().__init__(*args, **kwargs)
        self.trailing = next(
            (p.name for p in self.params if isinstance(p, click.Argument) and p.nargs == -1),
            None,
        )
        self.context_settings["allow_interspersed_args"] = self.trailing is None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if any(param.name == "scrollback" for param in self.params):
            args = _bare_scrollback(self, args)
        if self.trailing is not None:
            stray = _options_after_target(self, args)
            if stray:
                raise click.UsageError(
                    f"{stray!r} comes after TARGET, where every word is part of "
                    f"{self.trailing.upper()}; put {self.name}'s options before TARGET "
                    f"(phux {self.name} {stray} TARGET ...), or write -- before TARGET "
                    f"to pass {stray!r} on literally",
                    ctx,
                )
        return super().parse_args(ctx, args)


def _option_names(command: click.Command) -> dict[str, bool]:
    """Every option name of ``command`` -> whether it takes a value."""
    names: dict[str, bool] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                names[name] = not param.is_flag and not param.count
    return names


def _options_after_target(command: click.Command, args: list[str]) -> str | None:
    """The first word after TARGET that is one of ``command``'s options, unless a
    ``--`` before TARGET made the rest literal."""
    names = _option_names(command)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return None
        if not arg.startswith("-") or arg == "-":
            break
        name = arg.partition("=")[0]
        i += 2 if names.get(name) and "=" not in arg else 1
    for word in args[i + 1 :]:
        if word.partition("=")[0] in names and word.startswith("--"):
            return word
    return None


def _bare_scrollback(command: click.Command, args: list[str]) -> list[str]:
    """``--scrollback`` not followed by a word of digits means all history
    (``--scrollback=0``); a word of digits right after it is always its count. A
    ``--scrollback`` that is another option's value (``--socket --scrollback``) is
    left alone, as click will read it."""
    takes_value = {name for name, value in _option_names(command).items() if value}
    takes_value.discard("--scrollback")
    out = list(args)
    i = 0
    while i < len(out):
        arg = out[i]
        if arg == "--":
            break
        if arg in takes_value:
            i += 2
            continue
        if arg == "--scrollback" and not (i + 1 < len(out) and _digits(out[i + 1])):
            out[i] = "--scrollback=0"
        i += 1
    return out


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def open_client(socket: str | None) -> Client:
    """The verbs' client (``actions.open_client``, looked up at call time)."""
    return actions.open_client(socket)


# ---------------------------------------------------------------- shared options


def socket_option(f: F) -> F:
    """--socket, and --host: where the server is."""
    f = click.option(
        "--host",
        metavar="[USER@]HOST",
        default=None,
        expose_value=False,
        callback=_use_host,
        help="Drive the phux server on HOST, over ssh (default: $PHUX_HOST; "
        "a TARGET may also say HOST/name). --socket is then HOST's socket.",
    )(f)
    return click.option(
        "--socket",
        metavar="PATH",
        default=None,
        help="Server socket (default: $PHUX_SOCKET, then the per-user default).",
    )(f)


def _use_host(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # --host H is $PHUX_HOST=H for this process: the client reads one place.
    if value is not None:
        if not value or value.startswith("-"):
            raise click.BadParameter("name it as [USER@]HOST", ctx, param)
        os.environ["PHUX_HOST"] = value


def json_option(what: str) -> Callable[[F], F]:
    def deco(f: F) -> F:
        return click.option("--json", "as_json", is_flag=True, help=what)(f)

    return deco


def deadline_option(f: F) -> F:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=texts.DEFAULT_DEADLINE,
        show_default=True,
        metavar="SECS",
        help=texts.DEADLINE_HELP,
    )(f)


def _parse_env(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> dict[str, str]:
    from phux.client.client import parse_env
    from phux.client.errors import InvalidArgument

    try:
        return parse_env(value)
    except InvalidArgument as exc:
        raise click.BadParameter(exc.message) from None


def env_option(f: F) -> F:
    """tmux's ``-e VAR=VALUE``: set in the new pane over the server's environment."""
    return click.option(
        "-e",
        "env",
        metavar="VAR=VALUE",
        multiple=True,
        callback=_parse_env,
        help="Set VAR in the pane (repeatable); the rest of its environment is the "
        "server's, not this command's.",
    )(f)


def select_option(f: F) -> F:
    return click.option(
        "--select",
        "select",
        is_flag=True,
        help="Make the new pane its session's active pane, which the session's name "
        "then names (default: the active pane stays; target the new one by its @N).",
    )(f)


def verb_epilog(*extra: str) -> str:
    return texts.epilog(*extra, texts.SOCKET)


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
        "the terminal and the pane has printed nothing for --idle MS (default 500).",
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

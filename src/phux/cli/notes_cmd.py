"""``phux note``, ``phux tasks``, ``phux task`` and ``phux summary``.

Notes and tasks live on the server as L3 metadata (``phux.client.notes``); the
summary is ``phux.client.summary``'s. These verbs only parse, call and print.
"""

from __future__ import annotations

import sys

import click

from phux.cli import help as texts
from phux.cli.actions import deadline_after, fail, reporting
from phux.cli.complete import complete_target
from phux.cli.options import Verb, deadline_option, json_option, open_client, socket_option
from phux.cli.render import to_json, write_err, write_out

NOTE_TARGETS = """\
\b
Whose notes TARGET names follows its form:
  name        the session's (kept by name: they outlive its panes)
  name:N      window N's (name:tag: that window's)
  name:N.M    a pane's, as @N, #tag, . and = (they end with the pane)
--scope session|window|pane takes the session's or window's notes of a pane
TARGET instead (`phux note . --scope window`)."""

NOTE_LIMITS = """\
Notes are UTF-8 markdown, at most the server's max_metadata_value (64 KiB)
each; a write past it changes nothing (exit 1, code too_large). A pane that
exited keeps its notes read-only. Two clients editing at once both keep their
edit: those on the server's machine take turns, and an edit that replaced one
made from another machine (--host) is made again on it (exit 1, code
conflict, when the notes changed under it 8 times in a row)."""

TASK_RULES = """\
\b
Tasks are the notes' `- [ ] text` (open) and `- [x] text` (done) lines,
numbered from 1 in order (`phux tasks` shows the numbers):
  phux task work add fix the flaky test     # appends `- [ ] fix the flaky test`
  phux task work done 2                     # `- [ ]` -> `- [x]`
  phux task work undo 2                     # `- [x]` -> `- [ ]`
  phux task work rm 2                       # deletes the line"""

_SCOPE = click.option(
    "--scope",
    type=click.Choice(["session", "window", "pane"]),
    default=None,
    help="Whose notes: the session's, window's or pane's of TARGET (default: by TARGET's form).",
)

_WRITE_CODES = texts.exit_codes(
    ("0", "done"),
    ("1", "no server / target not found / too large / task not found / pane exited"),
)


# ---------------------------------------------------------------- note


@click.command(
    "note",
    cls=Verb,
    short_help="Read or write the notes of a session, window or pane.",
    epilog=texts.epilog(
        "\b\nExamples:\n"
        "  phux note build --set 'deploy to staging only'\n"
        "  phux note build:0.1 --append 'tail -f started here'\n"
        "  phux note build --file NOTES.md        # - reads stdin",
        NOTE_TARGETS,
        NOTE_LIMITS,
        _WRITE_CODES,
        texts.JSON_ERRORS,
        texts.SOCKET,
    ),
)
@click.option("--set", "set_text", metavar="TEXT", help="Replace the notes with TEXT.")
@click.option("--append", "append_text", metavar="TEXT", help="Add TEXT on lines of its own.")
@click.option(
    "--file", "path", metavar="PATH", help="Replace the notes with the file's text (- is stdin)."
)
@click.option("--clear", is_flag=True, help="Delete the notes.")
@_SCOPE
@json_option(
    'Print NotesResult JSON: {"schema_version", "scope", "target", "notes", "tasks"} '
    "(after a write: the notes as written)."
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
def note_cmd(
    set_text: str | None,
    append_text: str | None,
    path: str | None,
    clear: bool,
    scope: str | None,
    as_json: bool,
    timeout: float,
    socket: str | None,
    target: str,
) -> None:
    """Print TARGET's notes, or change them with one of --set, --append, --file, --clear.

    Notes are markdown kept by the server: every client (agents, people, MCP
    hosts) sees a change at once, and they outlive the client that wrote them.
    """
    given = [x for x in (set_text, append_text, path) if x is not None] + ([True] if clear else [])
    if len(given) > 1:
        raise click.UsageError("give one of --set, --append, --file, --clear")
    from phux.client import notes

    text: str | None = set_text
    if path is not None:
        text = _read_file(path, as_json)
    with reporting("note", as_json), open_client(socket) as client:
        deadline = deadline_after(timeout)
        if text is not None:
            new = text
            result = notes.edit_notes(client, target, lambda _: new, deadline, scope=scope)
        elif append_text is not None:
            more = append_text
            result = notes.edit_notes(
                client, target, lambda old: notes.append(old, more), deadline, scope=scope
            )
        elif clear:
            result = notes.edit_notes(client, target, lambda _: "", deadline, scope=scope)
        else:
            result = notes.get_notes(client, target, deadline, scope=scope)
            if not as_json:
                if result.notes:
                    write_out(result.notes if result.notes.endswith("\n") else result.notes + "\n")
                else:
                    write_err(f"phux note: no notes for {result.scope} {result.target}\n")
                return
    if as_json:
        write_out(to_json(result) + "\n")


def _read_file(path: str, as_json: bool) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
        return data.decode("utf-8")
    except UnicodeDecodeError:
        fail("note", "invalid_argument", f"{path} is not UTF-8 text", 1, "notes are text", as_json)
    except OSError as exc:
        fail("note", "invalid_argument", f"cannot read {path}: {exc.strerror}", 1, "", as_json)


# ---------------------------------------------------------------- tasks / task


def _task_lines(tasks: list[object]) -> str:
    out = []
    for task in tasks:
        mark = "x" if getattr(task, "done", False) else " "
        out.append(f"{getattr(task, 'index', 0):>3} [{mark}] {getattr(task, 'text', '')}\n")
    return "".join(out)


@click.command(
    "tasks",
    cls=Verb,
    short_help="List the tasks in the notes of a session, window or pane.",
    epilog=texts.epilog(
        "One line per task: its number, [ ] or [x], its text.",
        TASK_RULES,
        NOTE_TARGETS,
        texts.exit_codes(("0", "listed (possibly none)"), ("1", "no server / target not found")),
        texts.JSON_ERRORS,
        texts.SOCKET,
    ),
)
@click.option("--open", "open_only", is_flag=True, help="Only the tasks not done.")
@_SCOPE
@json_option(
    'Print TaskList JSON: {"schema_version", "scope", "target", "tasks": '
    "[{index, done, text, line}]}."
)
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
def tasks_cmd(
    open_only: bool,
    scope: str | None,
    as_json: bool,
    timeout: float,
    socket: str | None,
    target: str,
) -> None:
    """List the tasks (`- [ ]` / `- [x]` lines) of TARGET's notes, numbered from 1."""
    from phux.client import notes

    with reporting("tasks", as_json), open_client(socket) as client:
        deadline = deadline_after(timeout)
        place = notes.locate(client, target, scope, deadline)
        result = notes.task_list(
            place, notes.read_existing(client, place, deadline), open_only=open_only
        )
    if as_json:
        write_out(to_json(result) + "\n")
    elif result.tasks:
        write_out(_task_lines(list(result.tasks)))
    else:
        write_err(f"phux tasks: no tasks in the {result.scope} notes of {result.target}\n")


@click.command(
    "task",
    cls=Verb,
    short_help="Add a task, mark one done or open, or remove one.",
    epilog=texts.epilog(
        TASK_RULES,
        "Prints the tasks after the change.",
        NOTE_TARGETS,
        NOTE_LIMITS,
        texts.ORDERING_TRAILING,
        _WRITE_CODES,
        texts.JSON_ERRORS,
        texts.SOCKET,
    ),
)
@_SCOPE
@json_option("Print the TaskList JSON after the change.")
@deadline_option
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("action", type=click.Choice(["add", "done", "undo", "rm"]))
@click.argument("words", metavar="TEXT|N", nargs=-1, required=True)
def task_cmd(
    scope: str | None,
    as_json: bool,
    timeout: float,
    socket: str | None,
    target: str,
    action: str,
    words: tuple[str, ...],
) -> None:
    """Change one task of TARGET's notes: `add TEXT`, `done N`, `undo N` or `rm N`."""
    from phux.client import notes

    if action != "add" and len(words) != 1:
        raise click.UsageError(f"{action} takes one task number N")
    with reporting("task", as_json), open_client(socket) as client:
        deadline = deadline_after(timeout)
        change = notes.task_change(action, " ".join(words))
        place = notes.locate(client, target, scope, deadline)
        result = notes.task_list(place, notes.update(client, place, change, deadline))
    if as_json:
        write_out(to_json(result) + "\n")
    else:
        write_out(_task_lines(list(result.tasks)))


# ---------------------------------------------------------------- summary


@click.command(
    "summary",
    cls=Verb,
    short_help="Sum up a pane: state, last commands, last failure, screen, notes.",
    epilog=texts.epilog(
        "\b\nWhat an agent coming back to a pane needs, from phux's own facts (no LLM):\n"
        "where it is (session, window, pane), its program and state and for how long,\n"
        "its cwd, the last commands with exit codes and durations (as `phux history`),\n"
        "the output tail of the newest failed command, the screen's last non-blank\n"
        "lines, whether a person is attached and which client typed last (from the\n"
        "server's input audit), the pane's notes and the open tasks of its session,\n"
        "window and own notes. A read: the active pane stays.",
        texts.TARGET_GRAMMAR,
        texts.ORDERING,
        texts.exit_codes(("0", "ok"), ("1", "no server / target not found / failure")),
        texts.JSON_ERRORS,
        texts.SOCKET,
    ),
)
@click.option(
    "-n",
    "last",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    metavar="N",
    help="List the last N commands.",
)
@click.option(
    "--tail",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    metavar="N",
    help="Output lines of the last failed command to show.",
)
@json_option(
    "Print SummaryResult JSON (spec/schemas/summary_result.schema.json, schema_version 1)."
)
@deadline_option
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def summary_cmd(
    last: int, tail: int, as_json: bool, timeout: float, socket: str | None, target: str | None
) -> None:
    """Sum up TARGET's pane (default: the current pane) in a few lines."""
    from phux.client.summary import pane_summary

    with reporting("summary", as_json), open_client(socket) as client:
        result = pane_summary(
            client, target, last=last, tail=tail, deadline=deadline_after(timeout)
        )
    if as_json:
        write_out(to_json(result) + "\n")
        return
    write_out(render_summary(result))


def _ago(ms: int | None) -> str:
    from phux.cli.actions import _duration

    return "?" if ms is None else _duration(ms)


def render_summary(s: object) -> str:
    """The human text of a SummaryResult."""
    from phux.cli.actions import _duration
    from phux.client.models import SummaryResult

    assert isinstance(s, SummaryResult)
    where = f"{s.session}:{s.window}.{s.index}" if s.session is not None else "-"
    out = [f"{s.pane}  {where}" + (f"  ({s.window_name})" if s.window_name else "") + "\n"]
    state = s.state if s.alive else f"exited ({s.exit_status})"
    out.append(f"state:    {state}, {s.program or '-'}, for {_ago(s.state_for_ms)}\n")
    out.append(f"cwd:      {s.cwd or '-'}\n")
    who = "-"
    if s.last_input is not None:
        who = s.last_input.client.partition("/")[0] + (" (a person)" if s.last_input.person else "")
    out.append(f"attached: {'yes' if s.attached else 'no'}; last input: {who}\n")
    if s.commands:
        out.append("commands:\n")
        for c in s.commands:
            code = "-" if c.exit_code is None else str(c.exit_code)
            took = "running" if c.running else _duration(c.duration_ms)
            out.append(f"  {code:>4}  {took:>7}  {c.command.replace(chr(10), ' ')}\n")
    if s.last_failed is not None:
        f = s.last_failed
        out.append(f"last failed (exit {f.exit_code}): {f.command}\n")
        out.extend(f"  | {line}\n" for line in f.output_tail)
    if s.screen_tail:
        out.append("screen:\n")
        out.extend(f"  | {line}\n" for line in s.screen_tail)
    if s.notes:
        out.append("notes:\n")
        out.extend(f"  {line}\n" for line in s.notes.rstrip("\n").split("\n"))
    if s.open_tasks:
        out.append("open tasks:\n")
        out.extend(f"  {t.target} {t.index}. {t.text}\n" for t in s.open_tasks)
    return "".join(out)


NOTE_VERBS = (note_cmd, tasks_cmd, task_cmd, summary_cmd)

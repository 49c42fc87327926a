"""``phux record``: a pane as an asciicast v2 file (the work is in :mod:`phux.client.record`)."""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from typing import TextIO

import click

from phux.cli import help as texts
from phux.cli.actions import GRACE, deadline_after, finish, open_client, reporting
from phux.cli.complete import complete_target
from phux.cli.options import Verb, socket_option
from phux.cli.render import write_err

_EPILOG = texts.epilog(
    "\b\nThe file (asciicast v2, one JSON value a line):\n"
    '  {"version": 2, "width", "height", "timestamp", "title", "env": {"TERM", "SHELL"}}\n'
    '  [SECONDS, "o", "output text"]      what the pane printed\n'
    '  [SECONDS, "r", "COLSxROWS"]        the pane was resized\n'
    '  [SECONDS, "i", "input text"]       with --input: input written to the pane\n'
    "Play it with `asciinema play FILE`, print it with `asciinema cat FILE`,\n"
    "or put it in the asciinema web player.",
    "With --since the file starts with what the pane printed before (the\n"
    "server's retained state: its scrollback, screen and modes, then the\n"
    "journal after its last checkpoint), all at time 0: the server keeps the\n"
    "bytes, not when they were printed.\n\n"
    "With --input the file also holds the input that reached the pane, from\n"
    "every client (agents' send-keys and run, people attached), in order with\n"
    "the output as the server wrote and read it; input cancelled before it was\n"
    "written is not in it. It needs a server of protocol 1.3 or later.",
    texts.TARGET_GRAMMAR,
    texts.ORDERING,
    texts.exit_codes(
        ("0", "recorded until the pane exited, --timeout passed, or Ctrl-C"),
        ("1", "no server / target not found / FILE cannot be written"),
    ),
    texts.SOCKET,
)


def default_file(session: str | None, now: float | None = None) -> str:
    """``<session>-<YYYYmmdd-HHMMSS>.cast`` in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in (session or "pane"))
    return f"{name}-{stamp}.cast"


@click.command(
    "record",
    cls=Verb,
    short_help="Record a pane as an asciicast v2 file (asciinema).",
    epilog=_EPILOG,
)
@click.option(
    "--since",
    is_flag=True,
    help="Begin with what the pane already printed (at time 0), not only what comes next.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECS",
    help="Stop after SECS seconds (default: until the pane exits or Ctrl-C).",
)
@click.option(
    "--input",
    "with_input",
    is_flag=True,
    help='Also record the input written to the pane, from every client ("i" events).',
)
@click.option("--title", metavar="TEXT", default=None, help="Title (default: the pane's name).")
@socket_option
@click.argument("target", shell_complete=complete_target)
@click.argument("file", required=False)
def record_cmd(
    since: bool,
    timeout: float | None,
    with_input: bool,
    title: str | None,
    socket: str | None,
    target: str,
    file: str | None,
) -> None:
    """Record TARGET's output (with --input, its input too) to FILE as asciicast v2,
    until the pane exits.

    FILE defaults to SESSION-YYYYmmdd-HHMMSS.cast in the current directory;
    `-` writes to stdout. Events are flushed as they happen, so the file is
    playable while recording and whole up to its last line if the recorder is
    killed. Never resizes the pane. A summary goes to stderr at the end.
    """
    with reporting("record", False), open_client(socket) as client:
        from phux.client.record import Recorder

        deadline = deadline_after(GRACE * 2)
        pane = client.resolve(target, deadline)
        path = file if file is not None else default_file(pane.session)
        # A default name is never an existing file: it is made anew (O_EXCL).
        out = sys.stdout if path == "-" else _open(path, exclusive=file is None)
        try:
            recorder = Recorder(
                client,
                pane.id,
                out,
                since=since,
                title=title,
                timeout=timeout,
                deadline=deadline,
                input=with_input,
            )
            stats = recorder.run()
        except OSError as exc:  # the disk filled up, or the file went away
            raise _unwritable(path, exc) from None
        finally:
            if out is not sys.stdout:
                with contextlib.suppress(OSError):
                    out.close()
    why = (
        "the pane exited"
        if stats.pane_exited
        else ("--timeout passed" if stats.timed_out else "interrupted")
    )
    lost = f"; {stats.gaps} stretch(es) of output lost (the recorder fell behind)" * bool(
        stats.gaps
    )
    where = "stdout" if path == "-" else path
    typed = f" ({stats.input_bytes} bytes of input)" * with_input
    if stats.hidden_input_bytes:
        typed += f" ({stats.hidden_input_bytes} bytes typed at a hidden prompt left out)"
    write_err(
        f"phux record: {stats.events} events{typed}, {stats.duration:.1f} s to {where} "
        f"({why}){lost}\n"
    )
    finish(0)


def prepare_file(path: str) -> str:
    """``path`` made absolute and created empty, before ``new`` creates anything:
    a FILE that cannot be written fails the command here, where it can be said,
    not in a background recorder with no stderr."""
    import os

    path = os.path.abspath(path)
    _open(path).close()
    return path


def start_background(
    path: str, terminal: int, socket: str | None, *, with_input: bool = False
) -> None:
    """Record pane ``@terminal`` to ``path`` in a detached ``phux record --since``
    process (``phux new --record``; ``--input`` with ``with_input``): it ends when
    the pane exits. ``--since`` makes the start race-free: whatever the pane
    printed before the recorder subscribed is in the bootstrap, at time 0."""
    import os
    import subprocess

    argv = [sys.executable, "-m", "phux", "record", "--since"]
    if with_input:
        argv.append("--input")
    # `path` comes from prepare_file: absolute, so the recorder's cwd is irrelevant.
    if socket is not None:
        argv += ["--socket", socket]
    argv += [f"@{terminal}", path]
    with open(os.devnull, "r+b") as devnull:
        subprocess.Popen(
            argv,
            stdin=devnull,
            stdout=devnull,
            stderr=devnull,
            start_new_session=True,  # not ended by the terminal `new` attaches in
            close_fds=True,
        )


def _open(path: str, *, exclusive: bool = False) -> TextIO:
    """``path`` emptied (or created 0600) for writing, never through a symlink."""
    from phux.runtime_paths import open_private

    try:
        fd = open_private(path, append=False, exclusive=exclusive)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    return open(fd, "w", encoding="utf-8")


def _unwritable(path: str, exc: OSError) -> Exception:
    from phux.client.errors import CannotWrite

    if exc.errno == errno.ELOOP:
        why = "it is a symbolic link (phux never writes a recording through one)"
    elif exc.errno == errno.EEXIST:
        why = "it exists (a default name is never overwritten)"
    else:
        why = exc.strerror or str(exc)
    return CannotWrite(f"cannot write {path}: {why}")

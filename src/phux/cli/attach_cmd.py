"""``phux attach``: the human side (the work is in :mod:`phux.tui.attach`)."""

from __future__ import annotations

import click

from phux.cli import help as texts
from phux.cli.actions import finish, reporting
from phux.cli.complete import complete_target
from phux.cli.options import Verb, socket_option

_EPILOG = texts.epilog(
    "\b\nKeys while attached (tmux's, after the prefix C-b):\n"
    "  d         detach (the session keeps running)\n"
    '  %  "      split the pane left/right, top/bottom\n'
    "  o arrows  select the next pane, the pane in that direction\n"
    "  z         zoom the active pane (again: unzoom)\n"
    "  C-arrows  resize the active pane by a cell (M-arrows: by five); these\n"
    "            and the arrows repeat without C-b for 0.5 s, as in tmux\n"
    "  M-1..M-5  layouts: even-horizontal, even-vertical, main-horizontal,\n"
    "            main-vertical, tiled (sizes are kept for the next attach)\n"
    "  x         kill the active pane (asks y/n on the status line)\n"
    "  c         new window;  n p 0-9  select a window;  ,  rename it\n"
    "            (new panes and windows start in the active pane's directory)\n"
    "  w         every session, window and pane; Enter switches to it\n"
    "  [         copy mode: scroll and search the pane's history (the mouse\n"
    "            wheel enters it too with the mouse taken, unless the program\n"
    "            uses the mouse)\n"
    "  ?         the key list;  C-b C-b  send one C-b to the program\n"
    "With several panes the mouse is attach's (a click selects a pane, the wheel\n"
    "scrolls it in copy mode; programs get no mouse reports; Shift selects text),\n"
    "unless --no-mouse; a single pane's attach takes it only with --mouse.\n"
    "Change the prefix and the detach key with\n"
    "--detach-key or $PHUX_DETACH_KEY, e.g. 'C-a' or 'C-a x' ('none': no prefix).",
    "\b\nCopy mode (tmux's vi keys; the pane stays live, the view stays put):\n"
    "  arrows, h j k l   move (C-y / C-e scroll a line); w b e by words\n"
    "  PgUp PgDn, C-b C-f, C-u C-d   a page, half a page\n"
    "  g / G     the oldest / newest line; 0 ^ $ the line's start and end\n"
    "  / and ?   search down / up (Enter runs it); n N repeat it\n"
    "  Space     start a selection; Escape clears it\n"
    "  Enter, y  copy it to your clipboard (OSC 52) and leave, only with\n"
    "            --allow-clipboard (otherwise the clipboard is off and says so)\n"
    "  q         back to the live screen\n"
    "[n/m] at the top right: lines above the bottom / lines of history.\n"
    "With the mouse taken, while the program has not asked for mouse reports,\n"
    "attach asks your terminal for them (for the wheel): select text natively\n"
    "with Shift held.",
    texts.TARGET_GRAMMAR,
    texts.exit_codes(
        ("0", "detached, or the program exited (its status is printed)"),
        ("1", "no server / target not found / not a terminal / the server went away"),
        ("128+N", "ended by signal N (SIGTERM, SIGHUP); the terminal is restored first"),
    ),
    texts.SOCKET,
)


@click.command(
    "attach",
    cls=Verb,
    short_help="Attach this terminal to a session (for people).",
    epilog=_EPILOG,
)
@click.option(
    "--detach-key",
    metavar="KEY",
    default=None,
    help="The prefix (a control key) and the detach key after it (default 'C-b d'; "
    "$PHUX_DETACH_KEY); the other keys stay tmux's.",
)
@click.option(
    "--allow-clipboard",
    is_flag=True,
    default=None,
    help="Let the program set your clipboard (OSC 52 writes, dropped by default as tmux "
    "does; reads never pass), and copy mode copy to it. Also $PHUX_ALLOW_CLIPBOARD=1.",
)
@click.option(
    "--mouse/--no-mouse",
    default=None,
    help="Take your mouse: a click selects a pane, the wheel scrolls into copy mode "
    "(default: with several panes only, so a single pane's attach leaves your "
    "terminal's wheel and selection as they are).",
)
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def attach_cmd(
    detach_key: str | None,
    allow_clipboard: bool | None,
    mouse: bool | None,
    socket: str | None,
    target: str | None,
) -> None:
    """Show TARGET in this terminal and type into it, until you detach.

    TARGET defaults to the most recently used session. Your window's size
    becomes the terminal's size; agents reading it never change it, and what
    they type appears here live. Several people can attach to one terminal.

    A session of several panes (agents' `split` and `new-window`, or yours:
    C-b % and C-b c) is shown as tmux shows it: the current window's panes
    side by side and stacked, each sized to its place, with a status line:
    the windows (`*` the current one, `!` one where a command failed or the
    bell rang since you looked), and the active pane's program, state, last
    exit code and who typed into it last (you or an agent). Panes and windows
    agents create appear as they are made. The layout (with the sizes you
    give panes) is kept in the session, so whoever attaches next sees the
    same one. A session of one pane is shown as is, until you split it.
    Your keys go to the active pane; an agent's send-keys go to the pane it
    names and never move your active pane. When the panes print faster than
    attach can draw them, the pane you type into is served first and the
    others show their latest state.

    What reaches your terminal is filtered as tmux does by default: the
    program's queries (the server answers them), clipboard writes, tmux
    passthrough and DCS/APC/PM/SOS strings (kitty graphics, sixel) are
    dropped, titles lose their control characters, and of the OSC strings
    only titles, hyperlinks and colours pass (not notifications, iTerm2's
    OSC 1337, the pane's cwd or prompt marks). With several panes nothing a
    program prints reaches your terminal as is: each pane is drawn from its
    screen.
    """
    with reporting("attach", False):
        from phux.tui.attach import run_attach

        code = run_attach(
            target,
            socket=socket,
            detach_key=detach_key,
            allow_clipboard=allow_clipboard,
            mouse=mouse,
        )
    finish(code)

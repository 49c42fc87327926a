"""Help texts shared by the verbs: the target grammar, the ordering rule, exit codes.

Plain strings only (no imports), so building ``--help`` stays cheap. A line
holding only ``\\b`` tells click not to rewrap the paragraph that follows.
"""

from __future__ import annotations

TARGET_GRAMMAR = """\
\b
TARGET selects panes (resolved on the client from one server listing):
  .          the current pane: $PHUX_TERMINAL inside phux, else the active
             pane of the session last acted on
  =          the pane active before that one (tmux's last-pane)
  name       a session: its active pane (an exited one's name works while
             the server keeps it)
  name:N     window N of a session
  name:tag   the window of a session named `tag` (new-window -n)
  name:N.M   pane M of window N
  @N         terminal id N (printed by new, new-window, split): pins a pane
  #tag       the panes tagged `tag` (phux tag)
A TARGET naming several panes narrows to the active one, else the first
(kill takes them all). The active pane moves only when a pane is written to
(send-keys, paste, run), selected (attach, new-window/split --select) or
created by `new`; reads (snapshot, wait, watch, history, ls) never move it."""

PANE_ENV = """\
A pane's environment is the server's (that of whichever phux command started
the server, often an earlier one; not this command's: FOO=1 phux new ... need
not reach the pane), plus PHUX_TERMINAL, PHUX_SOCKET and TERM, plus each
-e VAR=VALUE, which wins. Pass what the pane needs with -e, e.g.
-e VIRTUAL_ENV="$VIRTUAL_ENV" -e PATH="$PATH"."""

ORDERING = """\
Options may come anywhere: `phux wait work --until x` is `phux wait --until
x work`."""

ORDERING_TRAILING = """\
Options go before TARGET: every word after TARGET is taken literally. A word
there that is one of this verb's options (`phux run work make --json`) is
refused rather than typed; put it before TARGET, or write `--` before TARGET
to pass it on as it is."""

SCROLLBACK = """\
--scrollback takes a row count only as the next word when that word is all
digits (or as --scrollback=N): `--scrollback 200 work` is the newest 200 rows of
work, `--scrollback work` all of work's history. So a session named with
digits goes first, `phux snapshot 7 --scrollback`, or after --scrollback=0."""

SOCKET = """\
The server socket is --socket, else $PHUX_SOCKET, else
$XDG_RUNTIME_DIR/phux/phux.sock, else /tmp/phux-$UID/phux.sock."""

JSON_ERRORS = """\
With --json, stdout carries only the document; an error leaves stdout empty
and writes one JSON line to stderr: {"error": {"code", "message"},
"exit_code", "remedy", "schema_version": 1}."""


RUN_RULES = """\
With shell integration (panes phux starts with bash, zsh, fish or sh/dash,
unless `phux new --no-shell-integration`), run types exactly the command and
Enter, reads the output and exit code from the shell's OSC 133 marks, and
returns once the next prompt is drawn (a command of several lines goes as one
bracketed paste and Enter when the shell takes pastes). The output is what the
command printed: keys another client types meanwhile (a person attached,
another agent's send-keys) are echoed on the screen but left out of it. A shell still starting
(its startup files run) or drawing its prompt (its prompt hooks run) is waited
for within --timeout (not with --force), and nothing is typed before its
prompt. It refuses at once (exit 3) when the pane is not at an idle prompt:
another program holds it (vim, less, python3, cat), the shell waits at a
continuation prompt, input is pending (typed before the cursor; a right prompt
or an autosuggestion is not input; keys ending inside a line that the shell
has not read yet, after a second), or echo is off (a password or `read -s`
prompt), or the command the pane runs is what called `run .`. An unbalanced
quote is interrupted with C-c and reported (exit 4). A line that runs no
command returns at once: a comment is exit 0 with no output; a line the shell
rejects (a syntax error) is exit 2 with the shell's message as output. A line
over 4095 bytes is refused (exit 1) in a shell that reads in the tty's
canonical mode (dash, sh), which would cut it. Without integration (a shell
phux did not start, ssh in the pane) it brackets the command with printed
markers, and types only when the foreground program is a shell (bash zsh fish
sh dash ksh mksh ash yash posh) or a remote one (ssh mosh-client et)."""


def exit_codes(*rows: tuple[str, str]) -> str:
    """A preformatted exit-code table; usage errors (exit 2) are always added."""
    lines = ["\b", "Exit codes:"]
    for code, meaning in rows:
        lines.append(f"  {code:<5} {meaning}")
    if not any(code == "2" for code, _ in rows):
        lines.append(f"  {'2':<5} usage error (bad option or argument)")
    return "\n".join(lines)


def epilog(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part)


DEFAULT_DEADLINE = 10.0
"""Overall deadline (seconds) of the verbs the seed gives no timeout."""

DEADLINE_HELP = (
    "Give up after SECS seconds overall (connect, handshake and the work), "
    "so a wedged server cannot hang the verb."
)

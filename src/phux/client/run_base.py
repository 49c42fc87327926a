"""What both of ``run``'s ways share: the outcome, the command line, the checks and
the helpers :mod:`phux.client.run_integrated` and :mod:`phux.client.run_markers` use."""

from __future__ import annotations

import re
import time

from phux.client.errors import (
    InvalidArgument,
    describe_exit,
)
from phux.client.typeahead import Typeahead, echo_mode
from phux.record import Record
from phux.wire.frames import Exited, ExitStatus, Foreground

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from phux.client.core import ClientCore
    from phux.client.errors import PaneDied
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane


class RunOutcome(Record):
    """What a completed ``run`` found: the fields of ``RunResult``, its JSON shape.

    A record rather than the msgspec Struct itself, so that ``phux run``
    without ``--json`` does not import msgspec.
    """

    command: str
    exit_code: int
    output: str
    duration_ms: int
    truncated: bool


def at_line_editor(pid: int, fg: Foreground | None) -> bool:
    """The pane's own program (its shell, ``pid``) holds the terminal with the tty out
    of canonical mode: its line editor reads a line (readline, zle, fish's reader; each
    restores the modes for the commands it runs)."""
    return fg is not None and fg.pgrp == pid and not fg.canonical


UNREAD_RECHECK_S = 0.05
"""How soon a pane's unread input (a filtered listing's, spec/L1.md §8.1) is asked for
again while it is in the way: no event tells when a program reads its input."""


def _status_code(status: ExitStatus | None) -> int:
    if status is None:
        return 255
    if isinstance(status, Exited):
        return min(max(status.code, 0), 255)
    return min(128 + status.signal, 255)


_SAFE_WORD = re.compile(r"[A-Za-z0-9@+=:,./_-]+")


def quote_word(word: str, *, fish: bool = False) -> str:
    """``word`` as one literal shell word (shlex.quote's rule; fish's own quoting for fish).

    A word starting with ``=`` is quoted too (zsh expands ``=cmd``), and ``%`` always
    (fish expands ``%self``).
    """
    if _SAFE_WORD.fullmatch(word) and not word.startswith("="):
        return word
    if fish:  # fish reads \\ and \' inside single quotes
        return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + word.replace("'", "'\"'\"'") + "'"


def command_line(command: str | Sequence[str], shell: str | None = None) -> str:
    """What ``run`` types: one word is a shell command line as given; several words
    are each quoted, so ``run t echo "it's"`` prints ``it's``."""
    if isinstance(command, str):
        return command
    words = list(command)
    if len(words) == 1:
        return words[0]
    fish = shell == "fish"
    return " ".join(quote_word(word, fish=fish) for word in words)


def _ms_since(t: float) -> int:
    return max(0, int((time.monotonic() - t) * 1000))


def _died(pane: Pane, mirror: Mirror) -> PaneDied:
    from phux.client.errors import PaneDied

    status = mirror.exit
    how = describe_exit(status) if status is not None else "ended"
    return PaneDied(
        f"the pane {pane.id} died while the command ran (its program {how}): "
        "no exit code of the command to report",
        status=None if status is None else _status_code(status),
    )


def _typeahead(client: ClientCore, pane: Pane, mirror: Mirror) -> Typeahead | None:
    """A sink telling this run's keys from other clients', when the mirror brings the
    input written to the pane (the caller removes it from ``client`` when done)."""
    if not mirror.input_events:
        return None
    typeahead = Typeahead(pane.terminal, lambda: echo_mode(mirror.foreground_of(pane), pane.pid))
    client.add_sink(typeahead)
    return typeahead


CANONICAL_LINE_MAX = 4095
"""Bytes a line may hold, its end included, in the tty's canonical mode (Linux's n_tty
keeps 4095 and drops the rest of a longer line but its end: another command runs)."""


def _check_canonical_lines(mirror: Mirror, pane: Pane, data: bytes, shell: str | None) -> None:
    """Refuse, before typing, a line the tty's canonical mode would cut: a shell with no
    line editor of its own (dash, sh, bash --noediting) lets the kernel collect it."""
    fg = mirror.foreground_of(pane)
    if fg is None or not fg.canonical:
        return  # the shell's editor reads keys one by one: any length
    longest = max(len(part) + 1 for part in data.replace(b"\n", b"\r").split(b"\r"))
    if longest <= CANONICAL_LINE_MAX:
        return

    raise InvalidArgument(
        f"not typing into {pane.id}: a line of the command is {longest} bytes and "
        f"{shell or 'the shell'} reads it in the tty's canonical mode, which keeps at "
        f"most {CANONICAL_LINE_MAX} (the rest would be cut and another command run)",
        remedy="put the command in a script file and run that, or split it into lines",
    )

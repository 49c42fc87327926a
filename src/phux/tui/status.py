"""The multiplexer's status line (pure): one row at the bottom of the person's window.

Left: the session name and its windows (``index:name``, ``*`` the active
one, ``!`` a window whose pane had a command fail or rang the bell since the
person last looked at it). Right: the active pane's program and state
(``prompt``, ``running 12s``, ``tui``, ``hidden_input``, ``exited 1``), the
exit code of its shell's last command, and who typed into it last (``you``,
the person at this attach, or ``agent``, any other client). A prompt or a
message (``kill pane @3? (y/n)``) takes the whole line while it is up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STYLE = "\x1b[0;30;42m"
"""Black on green, as tmux's default status line."""
ACTIVE_STYLE = "\x1b[0;30;42;1m"
ALERT_STYLE = "\x1b[0;30;43m"
MESSAGE_STYLE = "\x1b[0;30;43m"


@dataclass(frozen=True)
class WindowTab:
    index: int
    name: str
    active: bool = False
    alert: bool = False


@dataclass(frozen=True)
class PaneFacts:
    program: str | None = None
    state: str = ""
    running_s: int | None = None
    """Seconds the current command has run (state ``running``)."""
    exit_code: int | None = None
    """The pane's own exit code once it exited (state ``exited``)."""
    last_exit: int | None = None
    """The exit code of the shell's last finished command."""
    typed_by: str | None = None
    zoomed: bool = False


@dataclass
class StatusLine:
    session: str
    windows: list[WindowTab] = field(default_factory=list)
    pane: PaneFacts = field(default_factory=PaneFacts)
    message: str | None = None


def state_text(facts: PaneFacts) -> str:
    state = facts.state
    if state == "running" and facts.running_s is not None:
        return f"running {facts.running_s}s"
    if state == "exited":
        return "exited" if facts.exit_code is None else f"exited {facts.exit_code}"
    return state


def segments(line: StatusLine, width: int) -> list[tuple[str, str]]:
    """The line as (text, SGR) pieces that fill exactly ``width`` columns (the
    right part is dropped first when it does not fit)."""
    if line.message is not None:
        return [(_fit(line.message, width), MESSAGE_STYLE)]
    left: list[tuple[str, str]] = [(f"[{line.session}] ", STYLE)]
    for tab in line.windows:
        mark = "*" if tab.active else ("!" if tab.alert else " ")
        style = ACTIVE_STYLE if tab.active else (ALERT_STYLE if tab.alert else STYLE)
        left.append((f"{tab.index}:{tab.name}{mark}", style))
        left.append((" ", STYLE))
    facts = line.pane
    right_parts = []
    if facts.zoomed:
        right_parts.append("Z")
    what = " ".join(p for p in (facts.program or "", state_text(facts)) if p)
    if what:
        right_parts.append(what)
    if facts.last_exit is not None:
        right_parts.append(f"last exit {facts.last_exit}")
    if facts.typed_by:
        right_parts.append(f"typed: {facts.typed_by}")
    right = " " + " | ".join(right_parts) + " " if right_parts else ""
    used = sum(len(t) for t, _ in left)
    if used + len(right) > width:
        right = ""
    out: list[tuple[str, str]] = []
    room = width
    for text, style in left:
        if room <= 0:
            break
        text = text[:room]
        out.append((text, style))
        room -= len(text)
    pad = room - len(right)
    if pad > 0:
        out.append((" " * pad, STYLE))
    if right and pad >= 0:
        out.append((right, STYLE))
    return out


def _fit(text: str, width: int) -> str:
    return text[:width].ljust(width)

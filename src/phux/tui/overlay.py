"""The multiplexer's full-window lists (pure): the key list (``?``) and the tree (``w``).

An ``Overlay`` is lines and a selected one; the tree's lines each name what
Enter switches to (a session, a window, a pane) and the pane its live preview
shows. ``draw`` puts it on the canvas: the list, and under it the preview (the
selected pane's screen) when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phux.tui.compose import RESET, Canvas, pane_rows
from phux.tui.keys import HELP
from phux.tui.layout import Rect

if TYPE_CHECKING:
    from phux.client.selectors import Pane
    from phux.tui.paint import Painter

CHOSEN = "\x1b[0;7m"
RULE = "\x1b[0m"

Target = tuple[str, int | None, int | None]
"""(session, window or None, terminal or None): what a tree line switches to."""


@dataclass
class Overlay:
    kind: str  # "help" | "tree"
    lines: list[str]
    targets: list[Target] = field(default_factory=list)
    selected: int = 0

    def move(self, step: int) -> None:
        self.selected = max(0, min(len(self.lines) - 1, self.selected + step))

    def preview_target(self) -> int | None:
        """The terminal the selected line previews: its pane, else the first pane
        under the selected window or session line."""
        if self.kind != "tree":
            return None
        for _session, _window, terminal in self.targets[self.selected :]:
            if terminal is not None:
                return terminal
        return None


def help_overlay(prefix: str) -> Overlay:
    lines = [f"keys, after the prefix {prefix}:", ""]
    lines += [f"  {k:<14} {what}" for k, what in HELP]
    lines += ["", "(any key closes this list)"]
    return Overlay("help", lines)


def tree_overlay(
    panes: Iterable[Pane],
    state_of: Callable[[Pane], str],
    *,
    current: tuple[str, int, int | None],
) -> Overlay:
    """Every live pane by session and window; ``current``: (session, window, active
    pane) of the person, which is selected and marked ``*``."""
    session_now, window_now, active = current
    lines: list[str] = []
    targets: list[Target] = []
    selected = 0
    last: tuple[str, int] | None = None
    seen: set[str] = set()
    ordered = sorted(panes, key=lambda p: (p.session or "", *p.order_key()))
    for p in ordered:
        if p.session is None or not p.alive:
            continue
        if p.session not in seen:
            seen.add(p.session)
            lines.append(p.session)
            targets.append((p.session, None, None))
        w = p.window or 0
        if last != (p.session, w):
            last = (p.session, w)
            lines.append(f"  {w}:{p.window_name or ''}")
            targets.append((p.session, w, None))
        mine = p.session == session_now and w == window_now and p.terminal == active
        if mine:
            selected = len(lines)
        lines.append(f"    {p.id} {p.pane or 0}: {state_of(p)}{' *' if mine else ''}")
        targets.append((p.session, w, p.terminal))
    return Overlay("tree", lines, targets, selected)


def key_tokens(data: bytes) -> list[bytes]:
    """``data`` cut into keys: ``ESC [ x`` / ``ESC O x`` sequences, else single bytes."""
    out = []
    i = 0
    while i < len(data):
        if data[i] == 0x1B and i + 2 < len(data) and data[i + 1] in b"[O":
            out.append(data[i : i + 3])
            i += 3
        else:
            out.append(data[i : i + 1])
            i += 1
    return out


def draw(overlay: Overlay, canvas: Canvas, area: Rect, preview: Any, painter: Painter) -> None:
    """The list over ``area`` (scrolled to the selected line); ``preview``: the engine
    of the pane previewed under it (None: the list takes all of ``area``)."""
    canvas.fill(area)
    tree = overlay.kind == "tree"
    height = area.h if preview is None else max(1, min(len(overlay.lines), area.h // 2))
    top = max(0, overlay.selected - height + 1) if tree else 0
    for i, line in enumerate(overlay.lines[top : top + height]):
        chosen = tree and i + top == overlay.selected
        text = ("> " + line).ljust(area.w) if chosen else "  " + line
        canvas.text(area.x, area.y + i, text, CHOSEN if chosen else RESET, area.w)
    if preview is not None and area.h - height > 2:
        y = area.y + height
        canvas.text(area.x, y, "─" * area.w, RULE, area.w)
        pane_rows(preview, painter, Rect(area.x, y + 1, area.w, area.h - height - 1), canvas)

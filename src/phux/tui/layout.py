"""Window layouts: a tree of splits over pane indices, and its geometry (pure).

A layout is a pane index (``phux.pane``), or a split: ``h`` (children side
by side, left to right, tmux's ``%``) or ``v`` (stacked, top to bottom,
tmux's ``"``) of two or more layouts. Children share the split's size
equally, less one border cell between each two; a split of a pane replaces
it with a two-way split, so splitting halves the pane, as tmux does.

The text form is the value of the L3 convention ``phux.layout.SESSION.WINDOW``
(spec/L3.md §2): ``3``, ``h(0,1)``, ``v(0,h(1,2))``. A malformed value is
treated as absent (``parse`` gives None) and the client lays the panes out
by itself (``reconcile``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_TEXT = 4096
"""A layout text longer than this is malformed (no window holds that many panes)."""


@dataclass(frozen=True)
class Split:
    kind: str  # "h": side by side; "v": stacked
    children: tuple[Node, ...]


Node = int | Split


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    w: int
    h: int

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h


def format_layout(node: Node) -> str:
    if isinstance(node, int):
        return str(node)
    return node.kind + "(" + ",".join(format_layout(c) for c in node.children) + ")"


_TOKEN = re.compile(r"\d{1,9}|[hv]\(|,|\)")


def parse(text: str | None) -> Node | None:
    """The layout ``text`` holds, or None when it is absent or malformed (a pane
    named twice, a split of fewer than two, anything but the grammar above)."""
    if not text or len(text) > MAX_TEXT:
        return None
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        tokens.append(m.group())
        pos = m.end()
    at = 0

    def node() -> Node | None:
        nonlocal at
        if at >= len(tokens):
            return None
        tok = tokens[at]
        at += 1
        if tok.isdigit():
            return int(tok)
        if tok not in ("h(", "v("):
            return None
        children: list[Node] = []
        while True:
            child = node()
            if child is None or at >= len(tokens):
                return None
            children.append(child)
            sep = tokens[at]
            at += 1
            if sep == ")":
                break
            if sep != ",":
                return None
        if len(children) < 2:
            return None
        return Split(tok[0], tuple(children))

    result = node()
    if result is None or at != len(tokens):
        return None
    seen = panes(result)
    if len(seen) != len(set(seen)):
        return None
    return result


def panes(node: Node) -> list[int]:
    """The pane indices in ``node``, in reading order (left to right, top to bottom)."""
    if isinstance(node, int):
        return [node]
    out: list[int] = []
    for child in node.children:
        out += panes(child)
    return out


def _shares(total: int, n: int) -> list[int]:
    """``total`` cells less n-1 borders, shared among n as equally as possible
    (the first ones get the remainder); never below 0."""
    free = max(0, total - (n - 1))
    base, extra = divmod(free, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def geometry(node: Node, rect: Rect) -> dict[int, Rect]:
    """Each pane's rectangle inside ``rect``."""
    out: dict[int, Rect] = {}
    _place(node, rect, out, [])
    return out


def borders(node: Node, rect: Rect) -> list[tuple[str, Rect]]:
    """The border lines: ("|", a one-column rect) between side-by-side children,
    ("-", a one-row rect) between stacked ones."""
    lines: list[tuple[str, Rect]] = []
    _place(node, rect, {}, lines)
    return lines


def _place(node: Node, rect: Rect, out: dict[int, Rect], lines: list[tuple[str, Rect]]) -> None:
    if isinstance(node, int):
        out[node] = rect
        return
    n = len(node.children)
    if node.kind == "h":
        x = rect.x
        for i, (child, w) in enumerate(zip(node.children, _shares(rect.w, n), strict=True)):
            _place(child, Rect(x, rect.y, w, rect.h), out, lines)
            x += w
            if i < n - 1:
                if x < rect.x + rect.w:
                    lines.append(("|", Rect(x, rect.y, 1, rect.h)))
                x += 1
    else:
        y = rect.y
        for i, (child, h) in enumerate(zip(node.children, _shares(rect.h, n), strict=True)):
            _place(child, Rect(rect.x, y, rect.w, h), out, lines)
            y += h
            if i < n - 1:
                if y < rect.y + rect.h:
                    lines.append(("-", Rect(rect.x, y, rect.w, 1)))
                y += 1


def split(node: Node, pane: int, new: int, kind: str) -> Node:
    """``pane`` halved: ``new`` right of it (kind "h") or below it ("v")."""
    if isinstance(node, int):
        return Split(kind, (node, new)) if node == pane else node
    return Split(node.kind, tuple(split(c, pane, new, kind) for c in node.children))


def remove(node: Node, pane: int) -> Node | None:
    """``node`` without ``pane`` (its space goes to its siblings); None if nothing is left."""
    if isinstance(node, int):
        return None if node == pane else node
    kept = [c for c in (remove(c, pane) for c in node.children) if c is not None]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return Split(node.kind, tuple(kept))


def reconcile(node: Node | None, live: Sequence[int], rect: Rect) -> Node | None:
    """``node`` made to hold exactly the panes ``live``: the ones gone are removed,
    new ones are added (in order) by halving the largest pane along its longer
    side (a cell is about twice as tall as it is wide)."""
    keep = set(live)
    if node is not None:
        for p in panes(node):
            if p not in keep:
                node = remove(node, p) if node is not None else None
    have = set(panes(node)) if node is not None else set()
    for p in live:
        if p in have:
            continue
        if node is None:
            node = p
        else:
            geo = geometry(node, rect)
            big = max(geo, key=lambda q: (geo[q].w * geo[q].h, -panes(node).index(q)))  # type: ignore[arg-type]
            r = geo[big]
            node = split(node, big, p, "h" if r.w >= 2 * r.h else "v")
        have.add(p)
    return node


def neighbour(geo: dict[int, Rect], pane: int, direction: str) -> int | None:
    """The pane next to ``pane`` in ``direction`` (left/right/up/down): the nearest
    one beyond that edge overlapping it across, the most overlapping first."""
    r = geo.get(pane)
    if r is None:
        return None
    best: tuple[int, int, int] | None = None
    for q, s in geo.items():
        if q == pane:
            continue
        if direction in ("left", "right"):
            gap = r.x - (s.x + s.w) if direction == "left" else s.x - (r.x + r.w)
            overlap = min(r.y + r.h, s.y + s.h) - max(r.y, s.y)
        else:
            gap = r.y - (s.y + s.h) if direction == "up" else s.y - (r.y + r.h)
            overlap = min(r.x + r.w, s.x + s.w) - max(r.x, s.x)
        if gap < 0 or overlap <= 0:
            continue
        key = (gap, -overlap, q)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]


def pane_at(geo: dict[int, Rect], x: int, y: int) -> int | None:
    for q, r in geo.items():
        if r.contains(x, y):
            return q
    return None


def next_pane(order: Iterable[int], pane: int) -> int | None:
    """The pane after ``pane`` in reading order, wrapping (tmux's ``o``)."""
    seq = list(order)
    if not seq:
        return None
    if pane not in seq:
        return seq[0]
    return seq[(seq.index(pane) + 1) % len(seq)]

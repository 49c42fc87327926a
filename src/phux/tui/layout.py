"""Window layouts: a tree of splits over pane indices, and its geometry (pure).

A layout is a pane index (``phux.pane``), or a split: ``h`` (children side
by side, left to right, tmux's ``%``) or ``v`` (stacked, top to bottom,
tmux's ``"``) of two or more layouts. Children share the split's size
equally, less one border cell between each two; a split of a pane replaces
it with a two-way split, so splitting halves the pane, as tmux does.

A split may carry each child's size in cells (``h(0:36,1:43)``): a person
resized a pane (``resize``, tmux's ``resize-pane``) or picked a preset
(``preset``); the sizes scale with the window when it differs.

The text form is the value of the L3 convention ``phux.layout.SESSION.WINDOW``
(spec/L3.md §2): ``3``, ``h(0,1)``, ``v(0,h(1,2))``, ``h(0:30,v(1,2):49)``. A malformed value is
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
    sizes: tuple[int, ...] | None = None
    """Each child's cells along the split (a person resized a pane, or chose a preset
    layout); None: equal shares. Scaled to the space there is when it differs."""


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
    parts = [format_layout(c) for c in node.children]
    if node.sizes is not None:
        parts = [f"{p}:{size}" for p, size in zip(parts, node.sizes, strict=True)]
    return node.kind + "(" + ",".join(parts) + ")"


_TOKEN = re.compile(r"\d{1,9}|:\d{1,5}|[hv]\(|,|\)")


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
        sizes: list[int] = []
        while True:
            child = node()
            if child is None or at >= len(tokens):
                return None
            children.append(child)
            if tokens[at].startswith(":"):
                sizes.append(int(tokens[at][1:]))
                at += 1
                if at >= len(tokens):
                    return None
            sep = tokens[at]
            at += 1
            if sep == ")":
                break
            if sep != ",":
                return None
        if len(children) < 2 or (sizes and (len(sizes) != len(children) or 0 in sizes)):
            return None  # (sizes for every child or for none)
        return Split(tok[0], tuple(children), tuple(sizes) if sizes else None)

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


def _sized(total: int, sizes: Sequence[int]) -> list[int]:
    """``total`` cells less the borders, shared in proportion to ``sizes`` (exactly
    ``sizes`` when they fill it); each child keeps a cell while there are enough."""
    n = len(sizes)
    free = max(0, total - (n - 1))
    want = sum(sizes)
    if want == free:
        return list(sizes)
    if free < n or want <= 0:
        return _shares(total, n)
    out = [max(1, size * free // want) for size in sizes]
    extra = free - sum(out)
    i = n - 1
    while extra != 0:  # rounding: the last children take or give the rest
        step = 1 if extra > 0 else -1
        if out[i] + step >= 1:
            out[i] += step
            extra -= step
        else:
            i = (i - 1) % n
    return out


def _lengths(node: Split, total: int) -> list[int]:
    n = len(node.children)
    return _shares(total, n) if node.sizes is None else _sized(total, node.sizes)


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
        for i, (child, w) in enumerate(zip(node.children, _lengths(node, rect.w), strict=True)):
            _place(child, Rect(x, rect.y, w, rect.h), out, lines)
            x += w
            if i < n - 1:
                if x < rect.x + rect.w:
                    lines.append(("|", Rect(x, rect.y, 1, rect.h)))
                x += 1
    else:
        y = rect.y
        for i, (child, h) in enumerate(zip(node.children, _lengths(node, rect.h), strict=True)):
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
    children = tuple(split(c, pane, new, kind) for c in node.children)
    return Split(node.kind, children, node.sizes)


def remove(node: Node, pane: int) -> Node | None:
    """``node`` without ``pane`` (its space, border included, goes to the sibling before
    it, or after it when it was first); None if nothing is left."""
    if isinstance(node, int):
        return None if node == pane else node
    kids = [remove(c, pane) for c in node.children]
    kept = [c for c in kids if c is not None]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    sizes = None
    if node.sizes is not None:
        sizes = list(node.sizes)
        for i in reversed(range(len(kids))):
            if kids[i] is None:
                gone = sizes.pop(i) + 1
                sizes[max(0, i - 1)] += gone
    return Split(node.kind, tuple(kept), None if sizes is None else tuple(sizes))


def resize(node: Node, rect: Rect, pane: int, direction: str, cells: int) -> Node:
    """``pane``'s border moved ``cells`` toward ``direction`` (left/right/up/down), as
    tmux's ``resize-pane -L/-R/-U/-D``: the border between it and the next pane in
    its nearest split across that axis (the one before it when it is the last),
    every pane keeping a cell at least. ``node`` as it was when nothing can move."""
    kind = "h" if direction in ("left", "right") else "v"
    delta = -cells if direction in ("left", "up") else cells
    path = _path(node, pane)
    if path is None:
        return node
    # The nearest split of that kind on the way to the pane.
    for depth in reversed(range(len(path))):
        parent, index = path[depth]
        if parent.kind == kind:
            break
    else:
        return node
    parent_rect = _rect_of(node, rect, path[:depth])
    total = parent_rect.w if kind == "h" else parent_rect.h
    lengths = _lengths(parent, total)
    border = index if index < len(lengths) - 1 else index - 1
    move = max(1 - lengths[border], min(delta, lengths[border + 1] - 1))
    if move == 0:
        return node
    lengths[border] += move
    lengths[border + 1] -= move
    sized = Split(parent.kind, parent.children, tuple(lengths))
    return _replace(node, [i for _, i in path[:depth]], sized)


def _path(node: Node, pane: int) -> list[tuple[Split, int]] | None:
    """The splits from the root to ``pane``, each with the index of the child taken."""
    if isinstance(node, int):
        return [] if node == pane else None
    for i, child in enumerate(node.children):
        rest = _path(child, pane)
        if rest is not None:
            return [(node, i), *rest]
    return None


def _rect_of(node: Node, rect: Rect, path: list[tuple[Split, int]]) -> Rect:
    """The rect of the node ``path`` leads to from ``node`` (placed in ``rect``)."""
    for parent, index in path:
        lengths = _lengths(parent, rect.w if parent.kind == "h" else rect.h)
        offset = sum(lengths[:index]) + index
        if parent.kind == "h":
            rect = Rect(rect.x + offset, rect.y, lengths[index], rect.h)
        else:
            rect = Rect(rect.x, rect.y + offset, rect.w, lengths[index])
    return rect


def _replace(node: Node, indices: list[int], new: Node) -> Node:
    if not indices:
        return new
    assert isinstance(node, Split)
    i = indices[0]
    children = list(node.children)
    children[i] = _replace(children[i], indices[1:], new)
    return Split(node.kind, tuple(children), node.sizes)


PRESETS = ("even-horizontal", "even-vertical", "main-horizontal", "main-vertical", "tiled")
"""tmux's preset layouts (``C-b M-1`` .. ``M-5``)."""
MAIN_HEIGHT = 24
MAIN_WIDTH = 80
"""tmux's ``main-pane-height`` and ``main-pane-width``."""


def preset(name: str, order: Sequence[int], rect: Rect) -> Node | None:
    """The panes ``order`` (the first is the main one) in tmux's layout ``name``."""
    if not order:
        return None
    first, rest = order[0], list(order[1:])
    if not rest:
        return first
    if name == "even-horizontal":
        return Split("h", tuple(order))
    if name == "even-vertical":
        return Split("v", tuple(order))
    if name in ("main-horizontal", "main-vertical"):
        kind, across = ("v", "h") if name == "main-horizontal" else ("h", "v")
        total = rect.h if kind == "v" else rect.w
        main = min(MAIN_HEIGHT if kind == "v" else MAIN_WIDTH, max(1, total - 2))
        others: Node = rest[0] if len(rest) == 1 else Split(across, tuple(rest))
        return Split(kind, (first, others), (main, max(1, total - main - 1)))
    if name == "tiled":
        cols = 1
        while cols * cols < len(order):
            cols += 1
        rows: list[Node] = []
        for start in range(0, len(order), cols):
            row = order[start : start + cols]
            rows.append(row[0] if len(row) == 1 else Split("h", tuple(row)))
        return rows[0] if len(rows) == 1 else Split("v", tuple(rows))
    return None


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

"""The ScreenState projection as plain data, built without msgspec.

:func:`screen_data` returns exactly what ``msgspec.to_builtins`` makes of the
:class:`~phux.engine.screen_state.ScreenState` Struct it stands for: the same
keys in the Struct's field order, ``cells`` absent unless asked for, colours
tagged by ``kind``. So ``json.dumps(data, ensure_ascii=False,
separators=(",", ":"))`` writes the documented JSON byte for byte (a property
test holds both to it), and ``msgspec.convert`` turns it into the Struct.

Why a second form: the Struct is the one home of the JSON shape (its schema is
generated from it), but importing msgspec costs ~20 ms, a quarter of
``phux snapshot --json``'s budget. Building the data first and the Struct
from it keeps a single projection and lets that verb skip msgspec.

Style dicts are cached and shared between cells and between calls: callers
read the data, they never change it.
"""

from __future__ import annotations

from phux.engine._cells import (
    BLANK,
    SEM_INPUT,
    SEM_PROMPT,
    UL_CURLY,
    UL_DASHED,
    UL_DOTTED,
    UL_DOUBLE,
    UL_RGB,
    Cell,
)
from phux.engine._pyte import modes as mo
from phux.engine._screen import EngineScreen

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 4
"""The ScreenState schema version (seed 001, section 4.2, plus ``styles`` and ``alternate``)."""
V3 = 3
"""The previous version, kept for one version: per-cell ``cells`` instead of ``styles``."""
SCHEMA_VERSIONS = (V3, SCHEMA_VERSION)

Data = dict[str, "Any"]
StyleCache = dict[tuple[object, ...], tuple["Data | None", "str | None", "Data"]]

_DEFAULT_TAIL = BLANK[1:]
_DEFAULT_COLOR: Data = {"kind": "default"}
_DEFAULT_STYLE: Data = {
    "bold": False,
    "faint": False,
    "italic": False,
    "underline": False,
    "blink": False,
    "inverse": False,
    "invisible": False,
    "strikethrough": False,
    "overline": False,
    "fg": _DEFAULT_COLOR,
    "bg": _DEFAULT_COLOR,
}


# DECSCUSR's Ps -> the cursor's shape and blink; 0 (the terminal's default) adds no keys.
_CURSOR_STYLES: tuple[tuple[str, bool] | None, ...] = (
    None,
    ("block", True),
    ("block", False),
    ("underline", True),
    ("underline", False),
    ("bar", True),
    ("bar", False),
)


def _cursor(x: int, y: int, style: int) -> Data:
    data: Data = {"x": x, "y": y, "visible": True}
    shape = _CURSOR_STYLES[style]
    if shape is not None:
        data["shape"], data["blink"] = shape
    return data


_SEMANTIC = {SEM_PROMPT: "prompt", SEM_INPUT: "input"}
_STYLE_CACHE_LIMIT = 4096


def screen_data(
    screen: EngineScreen,
    *,
    pane: int,
    history: list[str],
    style_cache: StyleCache | None,
    version: int = SCHEMA_VERSION,
    frame_pending: bool = False,
) -> Data:
    """ScreenState as builtins; ``history``: the scrollback rows to include;
    ``style_cache``: the caller's cache of styles when styles are wanted, else None;
    ``version``: 4 gives them as ``styles`` runs, 3 as the per-cell ``cells``."""
    cols, rows = screen.columns, screen.lines
    buffer = screen.buffer
    cursor = screen.cursor
    data: Data = {
        "schema_version": version,
        "pane": pane,
        "cols": cols,
        "rows": rows,
        "cursor": (
            _cursor(min(cursor.x, cols - 1), cursor.y, screen.cursor_style)
            if mo.DECTCEM in screen.mode
            else None
        ),
        "lines": [screen.row_text(y).rstrip(" ") for y in range(rows)],
        "scrollback": history,
    }
    if style_cache is not None:
        if version == V3:
            data["cells"] = _cells(screen, style_cache)
        else:
            data["styles"] = _runs(screen, style_cache)
    data["title"] = str(screen.title)
    data["wrapped"] = [y for y in range(rows) if (ln := buffer.get(y)) is not None and ln.wrapped]
    data["alternate"] = bool(screen.alternate)
    if screen.links_seen:
        links = _links(screen)
        if links:
            data["links"] = links
    if frame_pending:
        data["frame_pending"] = True
    return data


def _runs(screen: EngineScreen, cache: StyleCache) -> list[Data]:
    """The viewport's styled text as runs: one per stretch of adjacent cells of one
    style and mark, default-styled unmarked text left out. A row of red text is one
    run, not eighty cells of eleven keys each."""
    cols = screen.columns
    buffer = screen.buffer
    out: list[Data] = []
    for y in range(screen.lines):
        line = buffer.get(y)
        if not line:
            continue
        run: Data | None = None
        run_tail: tuple[object, ...] | None = None
        next_x = -1
        for x in sorted(line):
            if x >= cols:
                break
            cell = line[x]
            tail = cell[1:]
            if run is not None and x == next_x and tail == run_tail:
                run["width"] += 1
                run["text"] += cell.data
                next_x = x + 1
                continue
            run = None
            next_x = x + 1
            if tail == _DEFAULT_TAIL:
                continue
            _, semantic, compact = _cached_style(cache, cell, tail)
            if not compact and semantic is None:
                continue  # a tail unlike the default that still projects to it
            run = {"row": y, "col": x, "width": 1, "text": cell.data}
            if semantic is not None:
                run["semantic"] = semantic
            run["style"] = compact
            run_tail = tail
            out.append(run)
    return out


def _cells(screen: EngineScreen, cache: StyleCache) -> list[Data]:
    cols = screen.columns
    buffer = screen.buffer
    out: list[Data] = []
    for y in range(screen.lines):
        line = buffer.get(y)
        if not line:
            continue
        for x in sorted(line):
            if x >= cols:
                break
            cell = line[x]
            if cell.data == "":
                continue  # right half of a wide glyph
            tail = cell[1:]
            if tail == _DEFAULT_TAIL:
                continue
            style, semantic, _ = _cached_style(cache, cell, tail)
            if semantic is not None:
                out.append(
                    {"col": x, "row": y, "semantic": semantic, "style": style or _DEFAULT_STYLE}
                )
            elif style is not None:
                out.append({"col": x, "row": y, "style": style})
    return out


def _cached_style(
    cache: StyleCache, cell: Cell, tail: tuple[object, ...]
) -> tuple[Data | None, str | None, Data]:
    """(full style or None when default, OSC 133 mark, only the non-default keys)."""
    hit = cache.get(tail)
    if hit is None:
        if len(cache) > _STYLE_CACHE_LIMIT:
            cache.clear()
        style, semantic = _style_of(cell)
        compact = {k: v for k, v in style.items() if _DEFAULT_STYLE[k] != v} if style else {}
        if cell.underscore:
            _underline(cell, compact)
        if cell.link:
            compact["link"] = cell.link.partition(";")[2]
        hit = cache[tail] = (style, semantic, compact)
    return hit


def _links(screen: EngineScreen) -> list[Data]:
    """The viewport's OSC 8 hyperlinks: one per stretch of adjacent cells of one link
    on a row, with its URI and, when the program named it, its ``id``."""
    cols = screen.columns
    buffer = screen.buffer
    out: list[Data] = []
    for y in range(screen.lines):
        line = buffer.get(y)
        if not line:
            continue
        run: Data | None = None
        last = ""
        next_x = -1
        for x in sorted(line):
            if x >= cols:
                break
            link = line[x].link
            if link and run is not None and x == next_x and link == last:
                run["width"] += 1
            elif link:
                params, _, uri = link.partition(";")
                run = {"row": y, "col": x, "width": 1, "uri": uri}
                for param in params.split(":"):
                    key, _, value = param.partition("=")
                    if key == "id" and value:
                        run["id"] = value
                out.append(run)
                last = link
            else:
                run = None
            next_x = x + 1
    return out


_UL_STYLES = {UL_DOUBLE: "double", UL_CURLY: "curly", UL_DOTTED: "dotted", UL_DASHED: "dashed"}


def _underline(cell: Cell, compact: Data) -> None:
    """A run's underline style (unless single) and colour (unless the text's): keys
    of the runs' styles only (``SpanStyle``), not of version 3's per-cell styles."""
    name = _UL_STYLES.get(cell.ul_style)
    if name is not None:
        compact["underline_style"] = name
    colour = cell.ul_color
    if colour >= UL_RGB:
        compact["underline_color"] = {
            "kind": "rgb",
            "r": colour >> 16 & 255,
            "g": colour >> 8 & 255,
            "b": colour & 255,
        }
    elif colour >= 0:
        compact["underline_color"] = {"kind": "palette", "index": colour}


def _color(name: str, index: int) -> Data:
    if index >= 0:
        return {"kind": "palette", "index": index}
    if name == "default" or len(name) != 6:
        return _DEFAULT_COLOR
    try:
        return {
            "kind": "rgb",
            "r": int(name[0:2], 16),
            "g": int(name[2:4], 16),
            "b": int(name[4:6], 16),
        }
    except ValueError:
        return _DEFAULT_COLOR


def _style_of(cell: Cell) -> tuple[Data | None, str | None]:
    """The cell's style (None when it is the default) and its OSC 133 mark."""
    style: Data = {
        "bold": cell.bold,
        "faint": cell.faint,
        "italic": cell.italics,
        "underline": cell.underscore,
        "blink": cell.blink,
        "inverse": cell.reverse,
        "invisible": cell.invisible,
        "strikethrough": cell.strikethrough,
        "overline": cell.overline,
        "fg": _color(cell.fg, cell.fg_index),
        "bg": _color(cell.bg, cell.bg_index),
    }
    return (None if style == _DEFAULT_STYLE else style), _SEMANTIC.get(cell.semantic)

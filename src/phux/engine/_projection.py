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

from phux.engine._pyte import modes as mo
from phux.engine._screen import BLANK, SEM_INPUT, SEM_PROMPT, Cell, EngineScreen

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 3
"""The ScreenState schema version (seed 001, section 4.2)."""

Data = dict[str, "Any"]
StyleCache = dict[tuple[object, ...], tuple["Data | None", "str | None"]]

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
_SEMANTIC = {SEM_PROMPT: "prompt", SEM_INPUT: "input"}
_STYLE_CACHE_LIMIT = 4096


def screen_data(
    screen: EngineScreen,
    *,
    pane: int,
    history: list[str],
    style_cache: StyleCache | None,
) -> Data:
    """ScreenState as builtins; ``history``: the scrollback rows to include;
    ``style_cache``: the caller's cache of cell styles when cells are wanted, else
    None (no ``cells`` key)."""
    cols, rows = screen.columns, screen.lines
    buffer = screen.buffer
    cursor = screen.cursor
    data: Data = {
        "schema_version": SCHEMA_VERSION,
        "pane": pane,
        "cols": cols,
        "rows": rows,
        "cursor": (
            {"x": min(cursor.x, cols - 1), "y": cursor.y, "visible": True}
            if mo.DECTCEM in screen.mode
            else None
        ),
        "lines": [screen.row_text(y).rstrip(" ") for y in range(rows)],
        "scrollback": history,
    }
    if style_cache is not None:
        data["cells"] = _cells(screen, style_cache)
    data["title"] = str(screen.title)
    data["wrapped"] = [y for y in range(rows) if (ln := buffer.get(y)) is not None and ln.wrapped]
    return data


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
            hit = cache.get(tail)
            if hit is None:
                if len(cache) > _STYLE_CACHE_LIMIT:
                    cache.clear()
                hit = cache[tail] = _style_of(cell)
            style, semantic = hit
            if semantic is not None:
                out.append(
                    {"col": x, "row": y, "semantic": semantic, "style": style or _DEFAULT_STYLE}
                )
            elif style is not None:
                out.append({"col": x, "row": y, "style": style})
    return out


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

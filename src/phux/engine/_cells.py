"""Cells and rows: the immutable styled ``Cell``, the sparse ``Line`` and its
text-keeping forms (``_TextLine``, ``_LazyLine``), shared glyph tables and row rendering.

The bottom of the screen: every other screen module, the projection, the
checkpoint and the reflow build on these shapes and import nothing above them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict, namedtuple
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

from phux.engine._pyte import Cursor as PyteCursor
from phux.engine._pyte import StaticDefaultDict

# Underline styles (SGR 4:n, and 21 for double), as kitty numbers them.
UL_SINGLE, UL_DOUBLE, UL_CURLY, UL_DOTTED, UL_DASHED = 1, 2, 3, 4, 5
UL_RGB = 1 << 24  # ul_color's flag for a direct colour (its low 24 bits)

# Semantic marks carried by every cell (OSC 133).
SEM_OUTPUT = 0
SEM_PROMPT = 1
SEM_INPUT = 2

# Private modes, shifted like pyte shifts them (``mode << 5``).
DECCKM = 1 << 5
MOUSE_MODES = frozenset(m << 5 for m in (9, 1000, 1001, 1002, 1003))
BRACKETED_PASTE = 2004 << 5
FOCUS_EVENTS = 1004 << 5
SGR_MOUSE = 1006 << 5
ALT_SCREEN_MODES = (1049, 1047, 47)
SYNCHRONIZED = 2026  # synchronized output (``_frame``), unshifted

MAX_COMBINING = 10
"""Zero-width characters one cell keeps after its base, counted decomposed (NFD).

Terminals cap them: xterm at its ``combiningChars`` resource (at most 10),
tmux at 21 bytes of UTF-8 a cell (ten two-byte marks). Further ones are
dropped: unbounded, each mark NFC-normalised the whole cell again, and
``a`` with 40,000 of them took minutes to draw."""

if TYPE_CHECKING:
    from typing import NamedTuple
else:

    class _NamedTupleMeta(type):
        """Makes ``class C(NamedTuple)`` the ``collections.namedtuple`` that
        ``typing.NamedTuple`` makes, without checking every annotation: under
        ``from __future__ import annotations`` typing compiles each annotation's
        string, which costs ~0.5 ms for ``Cell`` at every import (the type
        checker sees ``typing.NamedTuple`` and checks the fields instead)."""

        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
            if not bases:  # NamedTuple itself
                return super().__new__(mcs, name, bases, ns)
            fields = ns.get("__annotations__", {})
            defaults = [ns[field] for field in fields if field in ns]
            cls = namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
            for key, value in ns.items():
                if key not in fields and key not in ("__module__", "__annotations__"):
                    setattr(cls, key, value)
            cls.__annotations__ = fields
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        """A base of named tuples whose class statements cost little at import."""


class Cell(NamedTuple):
    """One styled cell. The first nine fields are exactly ``pyte.Char``'s.

    ``fg``/``bg`` hold what pyte holds (a colour name, ``"default"`` or
    ``rrggbb``); ``fg_index``/``bg_index`` keep the palette index the colour
    came from (-1 for default or direct RGB). ``ul_style`` is the underline's
    style while ``underscore`` is set (``UL_SINGLE`` otherwise), ``ul_color`` its
    colour (SGR 58): -1 the default (the text's), 0-255 a palette index,
    ``UL_RGB | 0xrrggbb`` a direct colour. ``link`` is the OSC 8 hyperlink the
    cell was drawn under, as the OSC carried it (``params;uri``), or ``""``.
    """

    data: str
    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italics: bool = False
    underscore: bool = False
    strikethrough: bool = False
    reverse: bool = False
    blink: bool = False
    faint: bool = False
    invisible: bool = False
    overline: bool = False
    fg_index: int = -1
    bg_index: int = -1
    ul_style: int = UL_SINGLE
    ul_color: int = -1
    link: str = ""
    semantic: int = SEM_OUTPUT  # (``cell[1:16]``: the pen without this mark)


_DATA = itemgetter(0)


_new_tuple = tuple.__new__


BLANK = Cell(" ")
BLANK_REVERSE = Cell(" ", reverse=True)
_DEFAULTS = {
    (rev, sem): Cell(" ", reverse=rev, semantic=sem)
    for rev in (False, True)
    for sem in (SEM_OUTPUT, SEM_PROMPT, SEM_INPUT)
}


Runs = tuple[int, tuple[int, ...], tuple[Cell, ...]]
"""A ``_TextLine``'s pens, when the path that built it knew them: the length of the
text they cover, the columns where the pen changes (0 first), and a cell of each
pen, so that a checkpoint writes the row a run at a time without reading its cells.
They cover the text only while it is that long (a row extended later by ``draw``
has none for its new part)."""


class Line(StaticDefaultDict[int, Cell]):
    """A row: sparse ``{column: Cell}``. ``wrapped`` marks a soft-wrap continuation.

    ``default`` (the cell of missing columns) is a class attribute while it is
    ``BLANK``, so most rows carry no instance ``__dict__`` (less memory, and
    less work for the garbage collector on floods of rows).
    """

    # Only a ``_TextLine`` sets ``text`` and ``runs``; the slots are here so that a
    # row can turn from one class into the other (same layout).
    __slots__ = ("runs", "text")
    text: str
    runs: Runs | None
    wrapped: bool = False
    default: Cell = BLANK

    def __init__(self, default: Cell) -> None:
        if default is not BLANK:
            self.default = default


def _forgetting_text(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (of ``dict``) run on a ``_TextLine`` made a plain ``Line`` first."""

    def forget_then(line: Line, *args: Any, **kwargs: Any) -> Any:
        line.__class__ = Line
        line.text = ""  # only a _TextLine's text is read; this drops the old string
        line.runs = None
        return method(line, *args, **kwargs)

    return forget_then


class _TextLine(Line):
    """A row the flood path built from a string of width-1 characters (cell ``x``
    holds ``text[x]``), keeping that string so that scrollback text never has to
    be read back cell by cell.

    ``text`` is right only while the cells are untouched, so every mutating dict
    method first turns the row into a plain ``Line`` (the text is dropped), which
    then changes at plain dict speed.
    """

    __slots__ = ()
    __setitem__ = _forgetting_text(dict.__setitem__)
    __delitem__ = _forgetting_text(dict.__delitem__)
    __ior__ = _forgetting_text(dict.__ior__)
    update = _forgetting_text(dict.update)
    setdefault = _forgetting_text(dict.setdefault)
    pop = _forgetting_text(dict.pop)
    popitem = _forgetting_text(dict.popitem)
    clear = _forgetting_text(dict.clear)


_new_row = Line.__new__
_FROM_0 = (0,)  # the runs of a row in one pen start at column 0
_dict_update = dict.update


def _filling(name: str) -> Callable[..., Any]:
    """``method`` of a ``_TextLine`` run on a ``_LazyLine`` given its cells first."""

    def fill_then(line: Line, *args: Any, **kwargs: Any) -> Any:
        _fill(line)
        return getattr(line, name)(*args, **kwargs)

    fill_then.__name__ = name
    return fill_then


def _filling_both(name: str) -> Callable[..., Any]:
    """:func:`_filling` for a binary operator: the other row is given its cells too
    (``dict``'s own comparison reads the other dict's storage directly)."""

    def fill_then(line: Line, other: Any) -> Any:
        _fill(line)
        if other.__class__ is _LazyLine:
            _fill(other)
        return getattr(line, name)(other)

    fill_then.__name__ = name
    return fill_then


class _LazyLine(_TextLine):
    """A history row of a flood built from its text and pens only (``runs``, which
    always cover all of ``text``): its dict is empty until anything iterates,
    compares, copies or changes the row, which fills in its cells (cell ``x`` is
    ``text[x]`` in the pen of its run) and makes it the ``_TextLine`` it stands for.

    Rows that scroll straight into a big history are almost never read cell by
    cell (their text renders history, their runs write checkpoints), and their
    cells were most of the cost of keeping a flood's last 10 000 rows. A row's
    length and truthiness, membership and single cells (``get``, ``[x]``) are
    answered from the text and pens without filling it: checkpoints ask for the
    cells at soft wraps. Only rows that go into ``scrollback`` are built so:
    rows on the screen are drawn on and stay ordinary.
    """

    __slots__ = ()

    def __len__(self) -> int:
        return len(self.text)

    def __contains__(self, x: object) -> bool:
        if x.__class__ is int:
            return 0 <= x < len(self.text)
        return _fill(self).__contains__(x)

    def get(self, x: int, default: Any = None) -> Any:
        if x.__class__ is int and 0 <= x < len(self.text):
            return _cell_at(self, x)
        if x.__class__ is int:
            return default
        return _fill(self).get(x, default)

    def __getitem__(self, x: int) -> Cell:
        if x.__class__ is int:
            if 0 <= x < len(self.text):
                return _cell_at(self, x)
            return self.default  # (pyte's StaticDefaultDict.__missing__)
        return _fill(self).__getitem__(x)

    __iter__ = _filling("__iter__")
    __reversed__ = _filling("__reversed__")
    __repr__ = _filling("__repr__")
    __reduce__ = _filling("__reduce__")
    __reduce_ex__ = _filling("__reduce_ex__")
    keys = _filling("keys")
    values = _filling("values")
    items = _filling("items")
    copy = _filling("copy")
    __eq__ = _filling_both("__eq__")
    __ne__ = _filling_both("__ne__")
    __or__ = _filling_both("__or__")
    __ror__ = _filling_both("__ror__")
    __setitem__ = _filling("__setitem__")
    __delitem__ = _filling("__delitem__")
    __ior__ = _filling_both("__ior__")
    update = _filling("update")
    setdefault = _filling("setdefault")
    pop = _filling("pop")
    popitem = _filling("popitem")
    clear = _filling("clear")


def _fill(line: Line) -> Line:
    """Give a ``_LazyLine`` its cells (it becomes a ``_TextLine``); ``line``."""
    if line.__class__ is not _LazyLine:
        return line
    text = line.text
    runs = line.runs
    assert runs is not None
    _, starts, pens = runs
    if len(starts) == 1:
        _dict_update(line, enumerate(map(_pen_glyphs(pens[0]).__getitem__, text)))
    else:
        ends = (*starts[1:], len(text))
        for start, end, pen in zip(starts, ends, pens, strict=True):
            glyph = _pen_glyphs(pen).__getitem__
            _dict_update(line, zip(range(start, end), map(glyph, text[start:end]), strict=True))
    line.__class__ = _TextLine  # type: ignore[assignment]
    return line


def _cell_at(line: Line, x: int) -> Cell:
    """Cell ``x`` (within its text) of a ``_LazyLine``, without filling the row."""
    runs = line.runs
    assert runs is not None
    starts = runs[1]
    pen = runs[2][0] if len(starts) == 1 else runs[2][bisect_right(starts, x) - 1]
    return _pen_glyphs(pen)[line.text[x]]


# {pen's attributes: its cells}, for the cells of _LazyLine rows (shared by all screens:
# cells are immutable).
_PEN_GLYPHS: dict[tuple[object, ...], _Glyphs] = {}


def _pen_glyphs(pen: Cell) -> _Glyphs:
    tail = pen[1:]
    glyphs = _PEN_GLYPHS.get(tail)
    if glyphs is None:
        if len(_PEN_GLYPHS) >= _GLYPH_CACHE_LIMIT:
            _PEN_GLYPHS.clear()
        glyphs = _PEN_GLYPHS[tail] = _Glyphs(pen)
    return glyphs


def _appends_text(line: Line, x: int) -> bool:
    """Whether a run of width-1 characters written at column ``x`` extends ``line``'s
    text: the row is then (or becomes) a ``_TextLine``, to be filled with
    ``_dict_update`` and its text extended by the run.

    A row written left to right from column 0 without gaps (a line of coloured
    output, say) so keeps its text as a flood row does, and renders as
    scrollback without its cells being read back.
    """
    kind = line.__class__
    if kind is _TextLine:
        return len(line.text) == x
    if x == 0 and kind is Line and not line:
        line.__class__ = _TextLine
        line.text = ""
        line.runs = None
        return True
    return False


class _Glyphs(dict[str, Cell]):
    """``{character: Cell}`` for one set of attributes: cells are shared, not rebuilt."""

    __slots__ = ("tail",)

    def __init__(self, attrs: Cell) -> None:
        super().__init__()
        self.tail = attrs[1:]

    def __missing__(self, char: str) -> Cell:
        cell: Cell = _new_tuple(Cell, (char, *self.tail))
        self[char] = cell
        return cell


_new_glyphs = _Glyphs.__new__


_GLYPH_CACHE_LIMIT = 2048


def _attrs(cursor: PyteCursor) -> Cell:
    return cast(Cell, cursor.attrs)


def _set_attrs(cursor: PyteCursor, attrs: Cell) -> None:
    cursor.attrs = attrs  # type: ignore[assignment]


def _shift_up(buffer: defaultdict[int, Line], lines: int) -> None:
    for y in range(lines - 1):
        line = buffer.get(y + 1)
        if line is None:
            buffer.pop(y, None)
        else:
            buffer[y] = line
    buffer.pop(lines - 1, None)


def _render_line(line: Line, cols: int, clip: bool = False) -> str:
    """A row's text, untrimmed (stubs contribute nothing): ``cols`` cells wide, or
    wider when the row holds cells past ``cols`` (written before a resize) and
    ``clip`` is false."""
    kind = line.__class__
    if kind is _TextLine or kind is _LazyLine:
        text = line.text
        n = len(text)
        if n < cols:
            return text + " " * (cols - n)
        return text[:cols] if clip else text
    n = len(line)
    if not n:
        return " " * cols
    keys = list(line)
    if keys[-1] == n - 1 and keys == list(range(n)) and (n <= cols or not clip):
        # Cells written left to right from column 0: no gaps to fill.
        text = "".join(map(_DATA, line.values()))
        return text + " " * (cols - n) if n < cols else text
    width = cols if clip else max(cols, max(keys) + 1)
    get = line.get
    return "".join([get(x, BLANK).data for x in range(width)])

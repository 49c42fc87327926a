"""EngineScreen: a pyte ``Screen`` subclass that is fast and fixes pyte's bugs.

Where stock pyte is right, this screen leaves exactly the state pyte leaves
(buffer, cursor, modes; ``scrollback`` equals ``HistoryScreen.history.top``),
compared on the first nine fields of every cell (the fields of ``pyte.Char``).
Where stock pyte is wrong it follows xterm/tmux; every such departure is a
method below with a comment saying what stock pyte does.

State lives in well-named attributes so that a later checkpoint serialiser can
read it: ``buffer`` (the active grid), ``main_buffer`` (the saved main grid
while the alternate screen is active), ``alternate``, ``scrollback``,
``cursor``, ``mode``, ``margins``, ``tabstops``, ``saved_cursors``,
``g0_charset``/``g1_charset``/``charset``, ``title``, ``icon_name``, ``cwd``,
``semantic``, ``app_keypad``, ``hyperlink``.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from bisect import bisect_right
from collections import defaultdict, deque, namedtuple
from collections.abc import Callable
from functools import cache
from itertools import islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

from phux.engine._pyte import Cursor as PyteCursor
from phux.engine._pyte import Margins, Savepoint, StaticDefaultDict, pyte
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import graphics as g
from phux.engine._pyte import modes as mo
from phux.engine._shell import ShellState
from phux.engine._widths import char_width, narrow_run, wide_run
from phux.engine.events import Bell, CwdChanged, EngineEvent, TitleChanged
from phux.signed_marks import unsigned

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
    came from (-1 for default or direct RGB).
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
    semantic: int = SEM_OUTPUT


_FG, _BG, _FG_INDEX, _BG_INDEX = 1, 2, 12, 13
_DATA = itemgetter(0)


def _clamp8(v: int) -> int:
    return 0 if v < 0 else 255 if v > 255 else v


_new_tuple = tuple.__new__


def _build_flags() -> dict[int, tuple[tuple[int, bool], ...]]:
    fields = Cell._fields
    flags: dict[int, tuple[tuple[int, bool], ...]] = {
        code: ((fields.index(name[1:]), name.startswith("+")),) for code, name in g.TEXT.items()
    }
    faint, invisible, overline = (fields.index(n) for n in ("faint", "invisible", "overline"))
    flags[22] = (*flags[22], (faint, False))
    flags[2] = ((faint, True),)
    flags[6] = flags[5]
    flags[8] = ((invisible, True),)
    flags[28] = ((invisible, False),)
    flags[21] = flags[4]
    flags[53] = ((overline, True),)
    flags[55] = ((overline, False),)
    return flags


_SGR_FLAGS = _build_flags()


def _set_color(v: _Recorder, fg: bool, value: str, index: int) -> None:
    if fg:
        v[_FG] = value
        v[_FG_INDEX] = index
    else:
        v[_BG] = value
        v[_BG_INDEX] = index


SgrPlan = tuple[bool, tuple[tuple[int, Any], ...]]


# "0".."255" written plainly (no leading zeros) -> "00".."ff"; other spellings
# take the general parse. Filled at the first truecolor SGR (~0.15 ms), not at
# import: much output has none. A plain dict, as lookups in a subclass are slower.
_BYTE_HEX: dict[str, str] = {}


def _byte_hex() -> dict[str, str]:
    _BYTE_HEX.update((str(i), f"{i:02x}") for i in range(256))
    return _BYTE_HEX


# The target fields of 38;2 and 48;2: (colour, palette index).
_RGB_TARGET = {"38": (_FG, _FG_INDEX), "48": (_BG, _BG_INDEX)}


def _sgr_plan(params: str) -> SgrPlan:
    """What an SGR parameter string does: reset first or not, then field assignments.

    Follows stock pyte where it is right (same colour names, ``rrggbb`` strings,
    out-of-range 256-colour indexes ignored) and adds faint, invisible, overline,
    the palette index and colon forms.
    """
    direct = _rgb_plan(params)
    if direct is not None:
        return direct
    items: list[int | tuple[int, ...]] = []
    for part in params.split(";"):
        if ":" in part:
            items.append(tuple(min(int(p), 9999) if p else -1 for p in part.split(":")))
        else:
            items.append(min(int(part), 9999) if part else 0)
    reset = False
    assigns: dict[int, Any] = {}
    v = _Recorder(assigns)
    i = 0
    n = len(items)
    while i < n:
        item = items[i]
        i += 1
        if isinstance(item, tuple):
            _colon_sgr(item, v)
            continue
        p = item
        flag = _SGR_FLAGS.get(p)
        if flag is not None:
            for index, value in flag:
                v[index] = value
        elif p == 0:
            reset = True
            assigns.clear()
        elif 30 <= p <= 39 and p != 38:
            v[_FG] = g.FG_ANSI[p]
            v[_FG_INDEX] = -1 if p == 39 else p - 30
        elif 40 <= p <= 49 and p != 48:
            v[_BG] = g.BG_ANSI[p]
            v[_BG_INDEX] = -1 if p == 49 else p - 40
        elif 90 <= p <= 97:
            v[_FG] = g.FG_AIXTERM[p]
            v[_FG_INDEX] = p - 90 + 8
        elif 100 <= p <= 107:
            v[_BG] = g.BG_AIXTERM[p]
            v[_BG_INDEX] = p - 100 + 8
        elif p in (38, 48, 58):
            if i >= n or not isinstance(items[i], int):
                continue
            how = items[i]
            i += 1
            if how == 5:
                if i < n:
                    m = items[i]
                    i += 1
                    if isinstance(m, int) and 0 <= m <= 255 and p != 58:
                        _set_color(v, p == 38, g.FG_BG_256[m], m)
            elif how == 2:
                rgb = [x for x in items[i : i + 3] if isinstance(x, int)]
                if len(rgb) == 3:
                    i += 3
                    if p != 58:
                        r, gg, b = (_clamp8(x) for x in rgb)
                        _set_color(v, p == 38, f"{r:02x}{gg:02x}{b:02x}", -1)
                else:
                    i = n
    return reset, tuple(assigns.items())


def _rgb_plan(params: str) -> SgrPlan | None:
    """The common truecolor forms ``38;2;r;g;b`` and ``38;2;r;g;b;48;2;r;g;b`` (either
    colour first), without the general parse; None for anything else."""
    parts = params.split(";")
    n = len(parts)
    if (n != 5 and n != 10) or parts[1] != "2" or (n == 10 and parts[6] != "2"):
        return None
    hex_of = _BYTE_HEX or _byte_hex()
    try:  # a KeyError: not this form after all
        first = _RGB_TARGET[parts[0]]
        rgb = hex_of[parts[2]] + hex_of[parts[3]] + hex_of[parts[4]]
        if n == 5:
            return False, ((first[0], rgb), (first[1], -1))
        second = _RGB_TARGET[parts[5]]
        rgb2 = hex_of[parts[7]] + hex_of[parts[8]] + hex_of[parts[9]]
    except KeyError:
        return None
    if second is first:  # the second colour replaces the first
        return False, ((first[0], rgb2), (first[1], -1))
    return False, ((first[0], rgb), (first[1], -1), (second[0], rgb2), (second[1], -1))


class _Recorder:
    """Collects ``v[index] = value`` assignments (the last one per field wins)."""

    __slots__ = ("assigns",)

    def __init__(self, assigns: dict[int, Any]) -> None:
        self.assigns = assigns

    def __setitem__(self, index: int, value: Any) -> None:
        self.assigns[index] = value


def _colon_sgr(item: tuple[int, ...], v: _Recorder) -> None:
    """``4:3`` underline styles, ``38:5:n``, ``38:2::r:g:b`` and ``38:2:r:g:b``."""
    head = item[0]
    if head == 4:
        v[5] = len(item) < 2 or item[1] != 0
    elif head in (38, 48) and len(item) >= 2:
        if item[1] == 5 and len(item) >= 3 and 0 <= item[2] <= 255:
            _set_color(v, head == 38, g.FG_BG_256[item[2]], item[2])
        elif item[1] == 2 and len(item) >= 5:
            rgb = item[-3:] if len(item) >= 6 else item[2:5]
            r, gg, b = (_clamp8(x) for x in rgb)
            _set_color(v, head == 38, f"{r:02x}{gg:02x}{b:02x}", -1)


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


_IRM = mo.IRM
_DECSCNM = mo.DECSCNM
# Text with no more non-ASCII characters than this is drawn without the
# regexes of width-1 and width-2 runs, which compile in ~2 and ~4 ms: its
# printable ASCII runs at once, the rest one character at a time. A one-shot
# reader replaying a prompt's ❯ or 🚀 so compiles neither.
_FEW_NON_ASCII = 8


@cache
def _printable_ascii_run() -> re.Pattern[str]:
    return re.compile("[\x20-\x7e]+")  # compiled on first use: ASCII text never needs it


_GLYPH_CACHE_LIMIT = 2048
_MAX_PENDING = 4096
_MARKS = frozenset("ABCDI")
_SGR_CACHE_LIMIT = 8192
_FILL_CACHE_LIMIT = 64  # at most ~64 rows of cells


class EngineScreen(pyte.Screen):
    """A pyte Screen with scrollback, an alternate screen, OSC and the fixes listed in the issue."""

    def __init__(self, columns: int, lines: int, history: int = 10_000) -> None:
        self.history_size = max(0, history)
        self.scrollback: deque[Line] = deque(maxlen=self.history_size)
        # Rendered (untrimmed, trimmed) text of scrollback rows; the newest
        # ``_unrendered`` rows are not in it yet (rendering is deferred to projection).
        self._scrollback_text: deque[tuple[str, str]] = deque(maxlen=self.history_size)
        self._unrendered = 0
        # Rows that have left the top of the main screen (full-screen scrolls and
        # shrinking resizes), whether kept in history, dropped past its limit, or
        # never drawn at all (the bulk path): the absolute number of the viewport's
        # first row. It goes back only when a taller screen takes history rows back
        # (``_pull_history``: each row keeps its number); a reflow never reuses a
        # number for another row (``_reflow``).
        self.scrolled_off = 0
        self.alternate = False
        self.main_buffer: defaultdict[int, Line] | None = None
        self.saved_cursors: dict[bool, Savepoint] = {}
        # Bounded, so a replica nobody drains cannot grow without limit.
        self.replies: deque[str] = deque(maxlen=_MAX_PENDING)
        self.events: deque[EngineEvent] = deque(maxlen=_MAX_PENDING)
        self.bell_count = 0
        self.cwd: str | None = None
        self.hyperlink: str | None = None
        self.app_keypad = False
        self.semantic = SEM_OUTPUT
        self.last_char = ""
        self._glyph_attrs: Cell | None = None
        self._glyphs: _Glyphs = _Glyphs(BLANK)
        self._glyph_cache: dict[Cell, _Glyphs] = {}
        self._sgr_cache: dict[tuple[Cell, str], Cell] = {}
        self._sgr_plans: dict[str, SgrPlan] = {}
        self._sgr_once: set[str] = set()
        self._one_off: Cell | None = None  # the attributes of the last new SGR string
        # {(start, end, cell): {x: cell for x in range(start, end)}}, for EL.
        self._fills: dict[tuple[int, int, Cell], dict[int, Cell]] = {}
        self.shell = ShellState(self)
        super().__init__(columns, lines)
        self.buffer: defaultdict[int, Line] = self._new_buffer()  # type: ignore[assignment]

    # -- construction helpers -------------------------------------------------

    def _new_line(self) -> Line:
        line = _new_row(Line)  # Line(self.default_char), without the calls
        if _DECSCNM in self.mode:
            line.default = BLANK_REVERSE
        return line

    def _new_buffer(self) -> defaultdict[int, Line]:
        return defaultdict(self._new_line)

    @property
    def default_char(self) -> Cell:  # type: ignore[override]
        return BLANK_REVERSE if mo.DECSCNM in self.mode else BLANK

    def _default_attrs(self) -> Cell:
        return _DEFAULTS[(mo.DECSCNM in self.mode, self.semantic)]

    def _erase_cell(self) -> Cell:
        """The cell erasures write: a blank with the current background only (BCE).

        Stock pyte writes the full cursor attributes (bold, underline, marks...)
        and only to cells that already exist; xterm and tmux fill the whole
        range with the background colour and nothing else.
        """
        attrs = _attrs(self.cursor)
        reverse = mo.DECSCNM in self.mode
        if attrs.bg == "default":
            return BLANK_REVERSE if reverse else BLANK
        return Cell(" ", bg=attrs.bg, bg_index=attrs.bg_index, reverse=reverse)

    def reset(self) -> None:
        """RIS. Leaves the alternate screen first; keeps scrollback (as tmux does)."""
        if getattr(self, "alternate", False) and self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
            self.alternate = False
        title, icon_name = getattr(self, "title", ""), getattr(self, "icon_name", "")
        if self.shell.commands:
            self.shell.erase(self.scrolled_off, 0)  # (RIS erases the screen)
        super().reset()
        # Like xterm, RIS keeps the window title (stock pyte clears it).
        self.title, self.icon_name = title, icon_name
        _set_attrs(self.cursor, BLANK)
        self.saved_cursors = {}
        self.app_keypad = False
        self.semantic = SEM_OUTPUT
        self.hyperlink = None

    @property
    def display(self) -> list[str]:
        """Viewport rows as text (stock ``display`` can raise IndexError on stubs)."""
        return [self.row_text(y) for y in range(self.lines)]

    def row_text(self, y: int) -> str:
        """Row ``y`` of the viewport, untrimmed (wide-character stubs contribute nothing)."""
        line = self.buffer.get(y)
        if not line:
            return " " * self.columns
        return _render_line(line, self.columns, clip=True)

    # -- drawing ----------------------------------------------------------------

    def draw(self, data: str) -> None:
        charset = self.g1_charset if self.charset else self.g0_charset
        if charset is not cs.LAT1_MAP:
            data = data.translate(charset)
        elif data.isascii() and data.isprintable() and data:
            # The common case: a run that ends before the last column, no
            # insert mode (``_draw_narrow``'s fast path, inline).
            cursor = self.cursor
            x = cursor.x
            end = x + len(data)
            attrs: Cell = cursor.attrs  # type: ignore[assignment]
            glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
            if end < self.columns and _IRM not in self.mode:
                line = self.buffer[cursor.y]
                left = line.get(x)
                right = line.get(end)
                if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                    self._split_wide(line, x, end)
                appending = _appends_text(line, x)
                fill = _dict_update if appending else line.__class__.update
                if glyphs:
                    fill(line, enumerate(map(glyphs.__getitem__, data), x))
                else:  # attributes seen for the first time: build cells without the cache
                    tail = glyphs.tail
                    # (c,) + tail: one tuple, where (c, *tail) builds a list first.
                    cells = [_new_tuple(Cell, (c,) + tail) for c in data]  # noqa: RUF005
                    fill(line, enumerate(cells, x))
                    if attrs is not self._one_off:  # (a throwaway cache: not filled)
                        glyphs.update(zip(data, cells, strict=True))
                if appending:
                    line.text += data
                cursor.x = end
            else:
                self._draw_narrow(data)
            self.last_char = data[-1]
            return
        self._draw(data)

    def _draw(self, data: str) -> None:
        if not data:
            return
        if data.isascii() and data.isprintable():
            self._draw_narrow(data)
        else:
            few = len(data) - len(data.encode("ascii", "ignore")) <= _FEW_NON_ASCII
            match = (_printable_ascii_run() if few else narrow_run()).match
            pos = 0
            n = len(data)
            while pos < n:
                m = match(data, pos)
                if m is not None:
                    end = m.end()
                    self._draw_narrow(data[pos:end])
                    pos = end
                    continue
                char = data[pos]
                width = char_width(char)
                # Asked only at a wide character: wide_run() compiles in ~4 ms.
                m = wide_run().match(data, pos) if width == 2 and not few else None
                if m is None:
                    self._draw_char(char, width)
                    pos += 1
                else:
                    end = m.end()
                    self._draw_wide(data[pos:end])
                    pos = end
        self.last_char = data[-1]

    def _draw_wide(self, run: str) -> None:
        """Draw a run of width-2 characters, as many per row segment as fit."""
        cursor = self.cursor
        if mo.IRM in self.mode:
            for char in run:
                self._draw_char(char, 2)
            return
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        glyph = glyphs.__getitem__
        stub = glyph("")
        cols = self.columns
        buffer = self.buffer
        pos = 0
        n = len(run)
        while pos < n:
            x = cursor.x
            room = (cols - x) // 2 if x < cols else 0
            if room == 0:
                self._draw_char(run[pos], 2)  # wraps (or not) like any wide character
                pos += 1
                continue
            k = min(room, n - pos)
            line = buffer[cursor.y]
            end = x + 2 * k
            left = line.get(x)
            right = line.get(end)
            if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                self._split_wide(line, x, end)
            cells = [cell for c in run[pos : pos + k] for cell in (glyph(c), stub)]
            line.update(zip(range(x, end), cells, strict=True))
            cursor.x = end
            pos += k
        self._no_pending_wrap()

    def _select_glyphs(self, attrs: Cell) -> _Glyphs:
        # Attributes from an SGR string never seen before (a random colour) are
        # neither looked up nor kept: their cells then die when overwritten
        # instead of piling up in the cache for the garbage collector to scan.
        glyphs = None if attrs is self._one_off else self._glyph_cache.get(attrs)
        if glyphs is None:
            glyphs = _new_glyphs(_Glyphs)  # _Glyphs(attrs), without the calls
            glyphs.tail = attrs[1:]
            if attrs is not self._one_off:
                if len(self._glyph_cache) >= _GLYPH_CACHE_LIMIT:
                    self._glyph_cache.clear()
                self._glyph_cache[attrs] = glyphs
        self._glyph_attrs = attrs
        self._glyphs = glyphs
        return glyphs

    def _wrap(self) -> None:
        """Auto-wrap: CR, index, and mark the new row as a continuation."""
        self.cursor.x = 0
        self.index()
        self.buffer[self.cursor.y].wrapped = True

    def _draw_narrow(self, run: str) -> None:
        """Draw a run of width-1 characters, one line segment at a time."""
        cursor = self.cursor
        mode = self.mode
        if mo.IRM in mode:
            for char in run:
                self._draw_char(char, 1)
            return
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        cols = self.columns
        buffer = self.buffer
        n = len(run)
        x = cursor.x
        if x + n <= cols:  # fast path: the run fits on the current row
            line = buffer[cursor.y]
            left = line.get(x)
            right = line.get(x + n)
            if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                self._split_wide(line, x, x + n)
            appending = _appends_text(line, x)
            fill = _dict_update if appending else line.__class__.update
            if glyphs:
                fill(line, zip(range(x, x + n), map(glyphs.__getitem__, run), strict=False))
            else:  # attributes seen for the first time: build cells without the cache
                tail = glyphs.tail
                cells = [_new_tuple(Cell, (c,) + tail) for c in run]  # noqa: RUF005
                fill(line, zip(range(x, x + n), cells, strict=True))
                glyphs.update(zip(run, cells, strict=True))
            if appending:
                line.text += run
            cursor.x = x + n
            if x + n == cols:
                self._no_pending_wrap()
            return
        glyph = glyphs.__getitem__
        pos = 0
        while pos < n:
            x = cursor.x
            if x >= cols:
                if mo.DECAWM in mode:
                    if n - pos > cols and cursor.y == self.lines - 1 and self._scrolls_whole():
                        self._wrap_rows(run[pos:], glyph)  # a line of many rows
                        return
                    self._wrap()
                    x = 0
                else:
                    # Without autowrap every further character overwrites the last column.
                    line = buffer[cursor.y]
                    self._split_wide(line, cols - 1, cols)
                    line[cols - 1] = glyph(run[-1])
                    cursor.x = cols - 1
                    return
            k = cols - x
            if k > n - pos:
                k = n - pos
            line = buffer[cursor.y]
            left = line.get(x)
            right = line.get(x + k)
            if (left is not None and left.data == "") or (right is not None and right.data == ""):
                self._split_wide(line, x, x + k)
            seg = run[pos : pos + k] if k != n else run
            if glyphs:
                line.update(zip(range(x, x + k), map(glyph, seg), strict=False))
            else:  # attributes seen for the first time: build cells without the cache
                tail = glyphs.tail
                cells = [_new_tuple(Cell, (c,) + tail) for c in seg]  # noqa: RUF005
                line.update(zip(range(x, x + k), cells, strict=True))
                glyphs.update(zip(seg, cells, strict=True))
            cursor.x = x + k
            pos += k
        self._no_pending_wrap()

    def _scrolls_whole(self) -> bool:
        """Whether an index at the bottom row scrolls the whole main screen."""
        margins = self.margins
        return not self.alternate and (
            margins is None or (margins.top == 0 and margins.bottom == self.lines - 1)
        )

    def _wrap_rows(self, text: str, glyph: Callable[[str], Cell]) -> None:
        """``text`` (width-1 characters, no insert mode) drawn by autowrap from a full
        bottom row of the whole main screen: one scroll and one new soft-wrapped row
        per screen width, built as rows directly (as ``_scroll_lines`` builds a
        flood's) rather than wrapped and shifted one at a time. Rows that would
        scroll out of the screen and the history within this call are not built."""
        cols = self.columns
        lines = self.lines
        buffer = self.buffer
        default = self.default_char
        m = (len(text) + cols - 1) // cols  # the scrolls
        history = self.history_size
        skip = max(0, m - history - lines)
        rows = [buffer[y] for y in range(lines)]
        append = rows.append
        new = _new_row
        pushed = m - skip  # (the rows built, as many as scroll the screen)
        lazy = pushed - lines  # the first ``lazy`` of them go into the history
        for i, start in enumerate(range(skip * cols, len(text), cols)):
            piece = text[start : start + cols]
            line = new(_LazyLine)
            if default is not BLANK:
                line.default = default
            line.text = piece
            line.runs = (len(piece), _FROM_0, (glyph(piece[0]),))  # (one pen)
            line.wrapped = True
            if i >= lazy:  # (on the screen)
                _fill(line)
            append(line)
        self.scrolled_off += m
        if history:
            self.scrollback.extend(rows[:pushed])
            self._unrendered += m
        buffer.update(zip(range(lines), rows[pushed:], strict=True))
        self.cursor.x = len(text) - (m - 1) * cols

    def _no_pending_wrap(self) -> None:
        """Without autowrap the cursor stays on the last column after writing it
        (xterm, tmux); stock pyte parks it past the edge, where EL, DCH and ICH
        then miss the last column."""
        cursor = self.cursor
        if cursor.x >= self.columns and mo.DECAWM not in self.mode:
            cursor.x = self.columns - 1

    def _split_wide(self, line: Line, start: int, end: int) -> None:
        """Blank the other half of any wide character cut by overwriting ``[start, end)``."""
        left = line.get(start)
        if left is not None and left.data == "" and start > 0:
            prev = line.get(start - 1)
            if prev is not None and prev.data and char_width(prev.data[0]) == 2:
                line[start - 1] = prev._replace(data=" ")
        right = line.get(end)
        if right is not None and right.data == "":
            last = line.get(end - 1)
            if last is not None and last.data and char_width(last.data[0]) == 2:
                line[end] = right._replace(data=" ")

    def _draw_char(self, char: str, width: int | None = None) -> None:
        """Draw one character of any width (the slow path)."""
        if width is None:
            width = char_width(char)
        cursor = self.cursor
        cols = self.columns
        mode = self.mode
        if width <= 0:
            if width == 0:
                self._combine(char)
            return  # Unprintable: skipped, the rest of the text is still drawn.
        x = cursor.x
        if x >= cols or (width == 2 and x == cols - 1):
            if mo.DECAWM in mode:
                # A wide character that does not fit in the last column wraps whole.
                if x == cols - 1:
                    # The skipped last cell becomes an empty pad (like a wide
                    # character's right half), so joined logical lines get no space.
                    line = self.buffer[cursor.y]
                    old = line.get(x)
                    if old is None or old.data == " ":
                        line[x] = (old or self.default_char)._replace(data="")
                self._wrap()
            else:
                cursor.x = max(0, cols - width)
        if mo.IRM in mode:
            self.insert_characters(width)
        attrs = _attrs(cursor)
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        x = cursor.x
        line = self.buffer[cursor.y]
        self._split_wide(line, x, x + width)
        line[x] = glyphs[char]
        if width == 2 and x + 1 < cols:
            line[x + 1] = glyphs[""]
        cursor.x = min(x + width, cols)
        if cursor.x == cols:
            self._no_pending_wrap()

    def _combine(self, char: str) -> None:
        """Attach a zero-width character to the cell before the cursor (never wraps,
        never drops text). At column 0 there is none and it is dropped, as tmux does:
        the row above may not have wrapped into this one, and its last cell may be a
        wide character's right half or the pad that a wide character skipped."""
        cursor = self.cursor
        if not cursor.x:
            return
        line = self.buffer[cursor.y]
        x = min(cursor.x, self.columns) - 1
        cell = line[x]
        if cell.data == "" and x > 0:
            x -= 1
            cell = line[x]
        data = cell.data
        # Full: the base and MAX_COMBINING more, decomposed (never shorter than data).
        if len(data) > MAX_COMBINING or len(unicodedata.normalize("NFD", data)) > MAX_COMBINING:
            return
        if unicodedata.combining(char):
            data = unicodedata.normalize("NFC", data + char)
        else:
            data += char
        line[x] = cell._replace(data=data)

    def repeat_last(self, count: int = 1) -> None:
        """REP (CSI b): repeat the last graphic character."""
        if self.last_char:
            self._draw(self.last_char * min(max(count, 1), self.columns * self.lines))

    # -- scrolling ----------------------------------------------------------------

    def _full_screen_region(self, top: int, bottom: int) -> bool:
        return top == 0 and bottom == self.lines - 1 and not self.alternate

    def _push_history(self, line: Line) -> None:
        self.scrolled_off += 1
        if self.history_size:
            self.scrollback.append(line)
            self._unrendered += 1

    def draw_lines(self, texts: list[str]) -> None:
        """Each of ``texts`` (width-1 characters only, possibly empty) drawn and followed by
        CR LF: the state ``draw(text); carriage_return(); index()`` leaves for each.

        The common flood (``seq``, logs, compiler output) scrolls the whole screen
        once per line; here, whenever the cursor sits at the start of an empty
        bottom row, the lines are built as rows directly (lines wider than the
        screen as the rows autowrap cuts them into) and the screen is shifted
        once for all of them.
        """
        cursor = self.cursor
        bottom = self.lines - 1
        margins = self.margins
        n = len(texts)
        i = 0
        if (
            (margins is None or (margins.top == 0 and margins.bottom == bottom))
            and mo.IRM not in self.mode
            and (self.g1_charset if self.charset else self.g0_charset) is cs.LAT1_MAP
        ):
            buffer = self.buffer
            cols = self.columns
            # Without autowrap a long line overwrites the last column: drawn.
            all_fit = mo.DECAWM in self.mode or (n > 0 and max(map(len, texts)) <= cols)
            while i < n:
                if cursor.x == 0 and cursor.y == bottom and not buffer.get(bottom):
                    j = n
                    if not all_fit:
                        j = i
                        while j < n and len(texts[j]) <= cols:
                            j += 1
                    if j > i:
                        self._scroll_lines(texts, i, j)
                        i = j
                        continue
                self._draw(texts[i])  # fills the bottom row, or wraps
                cursor.x = 0
                self.index()
                i += 1
        for text in texts[i:]:
            self.draw(text)
            cursor.x = 0
            self.index()
        self.last_char = ""

    def skip_scrolls(self, scrolls: int, x: int) -> None:
        """Account for ``scrolls`` full-screen scrolls of the main screen whose rows are
        never drawn, ending with the cursor at column ``x`` of a fresh bottom row.

        Only for the bulk path (``_bulk``), which calls it when at least a screen
        and a history's worth of further scrolls follow: those push every row
        above the bottom one out of the history whatever it holds, so the rows
        are left as they are instead of being moved. Counters move as if drawn.
        """
        if self.semantic == SEM_INPUT:  # (as linefeed() does at the first of them)
            self.set_semantic(SEM_OUTPUT)
            self.shell.input_ended()
        self.scrolled_off += scrolls
        if self.history_size:
            self._unrendered += scrolls
        bottom = self.lines - 1
        self.buffer[bottom] = self._new_line()
        self.cursor.x = x
        self.cursor.y = bottom
        self.last_char = ""

    def scroll_styled_rows(self, rows: list[tuple[str, Runs | None, bool]]) -> None:
        """``rows`` shifted in once from column 0 of an empty bottom row of the whole
        main screen, each the text from column 0 of a row no wider than the screen,
        its runs (``Runs``: all of the text, None for an empty row) and whether it
        continues the row before (autowrap): the rows ``draw``, ``sgr`` and CR LF
        leave (a row drawn left to right from column 0 keeps its text, an empty one
        is a plain row). Only for the bulk path (``_bulk._styled_rows``), which
        checks those conditions and computes the pens. Rows that go into the
        history are built without their cells (``_LazyLine``)."""
        if not rows:
            return
        buffer = self.buffer
        lines = self.lines
        kept = [buffer[y] for y in range(lines)]
        append = kept.append
        new_line = self._new_line
        k = len(rows)
        lazy = k - lines + 1  # rows[i] for i < lazy go into the history
        first = True
        for i, (text, runs, wrapped) in enumerate(rows):
            line = kept[lines - 1] if first else new_line()
            if first:
                kept.pop()
                first = False
            if wrapped:
                line.wrapped = True
            if text:
                line.__class__ = _LazyLine
                line.text = text
                line.runs = runs
                if i >= lazy:  # (on the screen)
                    _fill(line)
            append(line)
        append(new_line())
        self.scrolled_off += k
        if self.history_size:
            self.scrollback.extend(kept[:k])
            self._unrendered += k
        buffer.update(zip(range(lines), kept[k:], strict=True))
        self.cursor.x = 0
        self.last_char = ""

    def _scroll_lines(self, texts: list[str], start: int, stop: int) -> None:
        """``texts[start:stop]`` each drawn, then CR LF, from (0, bottom) on an empty
        row: one full-screen scroll per row (a line wider than the screen, with
        autowrap on, is the rows it wraps into, all but the first soft-wrapped)."""
        attrs: Cell = self.cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        glyph = glyphs.__getitem__
        default = self.default_char
        buffer = self.buffer
        lines = self.lines
        cols = self.columns
        wrapped: list[bool] | None = None
        if max(map(len, texts[start:stop])) > cols:
            pieces: list[str] = []
            wrapped = []
            for text in texts[start:stop]:
                pieces.append(text[:cols])
                wrapped.append(False)
                for x in range(cols, len(text), cols):
                    pieces.append(text[x : x + cols])
                    wrapped.append(True)
            texts, start, stop = pieces, 0, len(pieces)
        k = stop - start
        history = 0 if self.alternate else self.history_size
        # Rows that would scroll out of the screen and the history within this
        # very call are never seen: they are not built.
        skip = max(0, k - history - lines)
        rows = [buffer[y] for y in range(lines - 1)]
        first = buffer[lines - 1]  # drawn into in place, as draw() would
        first.update(enumerate(map(glyph, texts[start])))
        rows.append(first)
        append = rows.append
        new = _new_row
        fill = _dict_update  # a _TextLine's own update() would drop the text
        pushed = k - skip
        # texts[i] for i < lazy go into the history (rows[:pushed]): built without cells.
        lazy = start + 1 + skip + pushed - lines
        for i in range(start + 1 + skip, stop):
            text = texts[i]
            lazy_row = i < lazy and text != ""
            line = new(_LazyLine if lazy_row else _TextLine)  # (no Python-level __init__)
            if default is not BLANK:
                line.default = default
            if not lazy_row:
                fill(line, enumerate(map(glyph, text)))
            line.text = text
            if text:
                line.runs = (len(text), _FROM_0, (glyph(text[0]),))  # (one pen)
            if wrapped is not None and wrapped[i]:
                line.wrapped = True
            append(line)
        append(Line(default))
        if not self.alternate:
            self.scrolled_off += k
        if history:
            self.scrollback.extend(rows[:pushed])
            self._unrendered += k
        buffer.update(zip(range(lines), rows[pushed:], strict=True))

    def _scroll_up(self, top: int, bottom: int) -> None:
        buffer = self.buffer
        if top == 0 and bottom == self.lines - 1 and not self.alternate:
            self.scrolled_off += 1
            if self.history_size:
                self.scrollback.append(buffer[0])
                self._unrendered += 1
        if bottom > top:
            rows = range(top + 1, bottom + 1)
            buffer.update(zip(range(top, bottom), map(buffer.__getitem__, rows), strict=True))
        buffer[bottom] = self._new_line()

    def _scroll_down(self, top: int, bottom: int) -> None:
        buffer = self.buffer
        for y in range(bottom, top, -1):
            line = buffer.get(y - 1)
            if line is None:
                buffer.pop(y, None)
            else:
                buffer[y] = line
        buffer.pop(top, None)

    def _region(self) -> tuple[int, int]:
        margins = self.margins
        if margins is None:
            return 0, self.lines - 1
        return margins.top, margins.bottom

    def index(self) -> None:
        """IND. Scrollback only from full-screen scrolls of the main screen.

        Stock HistoryScreen also saves lines scrolled out of a partial scroll
        region; and stock pyte moves a cursor that is below the region up into it.
        """
        margins = self.margins
        y = self.cursor.y
        if margins is None:
            if y == self.lines - 1:
                self._scroll_up(0, y)
            else:
                self.cursor.y = y + 1
        elif y == margins.bottom:
            self._scroll_up(margins.top, margins.bottom)
        elif y < self.lines - 1:
            self.cursor.y = y + 1

    def linefeed(self) -> None:
        """LF, VT, FF. The input an OSC 133 B mark started ends at the line feed
        after it (not at an autowrap): a shell with no C mark (dash) prints its
        command's output next, and in the others the tty's echo of Enter comes
        before the C mark."""
        if self.semantic == SEM_INPUT:
            self.set_semantic(SEM_OUTPUT)
            self.shell.input_ended()  # (dash's command starts here)
        self.index()
        if mo.LNM in self.mode:
            self.carriage_return()

    def reverse_index(self) -> None:
        top, bottom = self._region()
        y = self.cursor.y
        if y == top:
            self._scroll_down(top, bottom)
        elif y > 0:
            self.cursor.y = y - 1

    def next_line(self) -> None:
        """NEL: CR then index (stock pyte maps NEL to a bare linefeed)."""
        self.carriage_return()
        self.index()

    def scroll_up(self, count: int | None = None) -> None:
        """SU (CSI S): scroll the region up; full-screen scrolls feed scrollback."""
        top, bottom = self._region()
        for _ in range(min(count or 1, bottom - top + 1)):
            self._scroll_up(top, bottom)

    def scroll_down(self, count: int | None = None) -> None:
        """SD (CSI T)."""
        top, bottom = self._region()
        for _ in range(min(count or 1, bottom - top + 1)):
            self._scroll_down(top, bottom)

    def cursor_up(self, count: int | None = None) -> None:
        """CUU: stops at the top margin only from inside the region (stock: always).

        Like xterm and tmux, a pending wrap is cancelled: the cursor stays in the
        last column instead of wrapping on the next character.
        """
        top, _bottom = self._region()
        cursor = self.cursor
        y = cursor.y
        cursor.y = max(y - (count or 1), top if y >= top else 0)
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1

    def cursor_down(self, count: int | None = None) -> None:
        """CUD: the mirror image of :meth:`cursor_up`."""
        _top, bottom = self._region()
        cursor = self.cursor
        y = cursor.y
        cursor.y = min(y + (count or 1), bottom if y <= bottom else self.lines - 1)
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1

    def insert_characters(self, count: int | None = None) -> None:
        """ICH. Stock pyte also stores the cell pushed past the right margin."""
        cols = self.columns
        x0 = self.cursor.x
        if x0 >= cols:
            return
        count = min(count or 1, cols - x0)
        line = self.buffer[self.cursor.y]
        self._split_wide(line, x0, x0)
        moved = {x + count: line[x] for x in range(x0, cols - count) if x in line}
        for x in [x for x in line if x >= x0]:
            del line[x]
        line.update(moved)
        last = line.get(cols - 1)
        if last is not None and last.data and char_width(last.data[0]) == 2:
            line[cols - 1] = last._replace(data=" ")  # its right half fell off the edge

    def delete_lines(self, count: int | None = None) -> None:
        """DL. Stock pyte leaves a stale line when the source row was never touched."""
        count = count or 1
        top, bottom = self._region()
        if top <= self.cursor.y <= bottom:
            buffer = self.buffer
            for y in range(self.cursor.y, bottom + 1):
                src = y + count
                if src <= bottom and src in buffer:
                    buffer[y] = buffer.pop(src)
                else:
                    buffer.pop(y, None)
            self.carriage_return()

    # -- erasing ------------------------------------------------------------------

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        cursor = self.cursor
        cols = self.columns
        if how == 0:
            start, end = cursor.x, cols
        elif how == 1:
            start, end = 0, min(cursor.x + 1, cols)
        elif how == 2:
            start, end = 0, cols
        else:
            return
        line = self.buffer[cursor.y]
        if how == 2:
            line.wrapped = False
        self._split_wide(line, start, end)
        key = (start, end, self._erase_cell())
        fill = self._fills.get(key)
        if fill is None:  # coloured output repeats the same EL (grep, gcc): built once
            if len(self._fills) >= _FILL_CACHE_LIMIT:
                self._fills.clear()
            fill = self._fills[key] = dict.fromkeys(range(start, end), key[2])
        line.update(fill)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        y = self.cursor.y
        if how == 3:
            # xterm's "erase saved lines": the scrollback only, never the screen
            # (stock pyte treats it as ED 2).
            self.clear_history()
            return
        if how == 0:
            rows = range(y + 1, self.lines)
        elif how == 1:
            rows = range(y)
        elif how == 2:
            rows = range(self.lines)
        else:
            return
        if how != 1 and not self.alternate and self.shell.commands:
            # Output erased from the main screen is no longer any command's.
            if how == 0:
                self.shell.erase(self.scrolled_off + y, self.cursor.x)
            else:
                self.shell.erase(self.scrolled_off, 0)
        blank = self._erase_cell()
        buffer = self.buffer
        if blank is self.default_char:
            for row in rows:
                buffer.pop(row, None)
        else:
            fill = dict.fromkeys(range(self.columns), blank)
            for row in rows:
                line = buffer[row]
                line.clear()
                line.update(fill)
                line.wrapped = False
        if how in (0, 1):
            self.erase_in_line(how)

    def erase_characters(self, count: int | None = None) -> None:
        cursor = self.cursor
        start = cursor.x
        end = min(start + (count or 1), self.columns)
        line = self.buffer[cursor.y]
        self._split_wide(line, start, end)
        line.update(dict.fromkeys(range(start, end), self._erase_cell()))

    # -- modes ---------------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for m in modes:
                if m in ALT_SCREEN_MODES:
                    self._enter_alternate(m)
            if 3 in modes:
                # DECCOLM: stock pyte resizes to 132 columns; we keep the PTY's
                # size (like tmux) and only clear and home.
                modes = tuple(m for m in modes if m != 3)
                self.erase_in_display(2)
                self.cursor_position()
        super().set_mode(*modes, **kwargs)
        self._forget_resets(modes, kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for m in modes:
                if m in ALT_SCREEN_MODES:
                    self._leave_alternate(m)
            if 3 in modes:
                modes = tuple(m for m in modes if m != 3)
                self.erase_in_display(2)
                self.cursor_position()
        super().reset_mode(*modes, **kwargs)
        self._forget_resets(modes, kwargs)

    def _forget_resets(self, modes: tuple[int, ...], kwargs: dict[str, Any]) -> None:
        """A reset SGR's attributes depend on DECSCNM (reverse video): the remembered
        results of SGR strings no longer hold once it changes."""
        if kwargs.get("private") and (mo.DECSCNM >> 5) in modes:
            self._sgr_cache.clear()

    def _enter_alternate(self, mode: int) -> None:
        """?1049 (save the cursor, then a fresh alternate screen), ?1047, ?47.

        The saved cursor is DECSC's slot, as in xterm. Entering while already
        on the alternate screen does nothing (as tmux does).
        """
        if self.alternate:
            return
        if mode == 1049:
            self.save_cursor()
        self.main_buffer = self.buffer
        self.buffer = self._new_buffer()
        self.alternate = True

    def _leave_alternate(self, mode: int) -> None:
        if not self.alternate or self.main_buffer is None:
            return
        self.buffer = self.main_buffer
        self.main_buffer = None
        self.alternate = False
        if mode == 1049 and self.saved_cursors.get(False) is not None:
            self.restore_cursor()

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        """DECSTBM. Resetting the region homes the cursor too (stock pyte does not)."""
        if (top is None or top == 0) and bottom is None:
            self.margins = None
            self.cursor_position()
            return
        super().set_margins(top, bottom)

    def soft_reset(self) -> None:
        """DECSTR (CSI ! p), as xterm does it; the screen is not cleared."""
        self.mode.discard(mo.IRM)
        self.mode.discard(mo.DECOM)
        self.mode.discard(DECCKM)
        self.mode.add(mo.DECAWM)
        self.mode.add(mo.DECTCEM)
        self.cursor.hidden = False
        self.app_keypad = False
        self.margins = None
        self.charset = 0
        self.g0_charset = cs.LAT1_MAP
        self.g1_charset = cs.VT100_MAP
        _set_attrs(self.cursor, self._default_attrs())
        self.saved_cursors.pop(self.alternate, None)

    # -- cursor save/restore ---------------------------------------------------------

    def save_cursor(self) -> None:
        """DECSC / SCOSC: one slot per screen (stock pyte keeps an unbounded stack)."""
        self.saved_cursors[self.alternate] = Savepoint(
            copy.copy(self.cursor),
            self.g0_charset,
            self.g1_charset,
            self.charset,
            mo.DECOM in self.mode,
            mo.DECAWM in self.mode,
        )

    def restore_cursor(self) -> None:
        """DECRC / SCORC: restore without popping, so it can be repeated."""
        savepoint = self.saved_cursors.get(self.alternate)
        if savepoint is None:
            self.mode.discard(mo.DECOM)
            self.cursor_position()
            return
        self.g0_charset = savepoint.g0_charset
        self.g1_charset = savepoint.g1_charset
        self.charset = savepoint.charset
        if savepoint.origin:
            self.mode.add(mo.DECOM)
        else:
            self.mode.discard(mo.DECOM)
        if savepoint.wrap:
            self.mode.add(mo.DECAWM)
        else:
            self.mode.discard(mo.DECAWM)
        cursor = copy.copy(savepoint.cursor)
        cursor.hidden = mo.DECTCEM not in self.mode
        attrs = _attrs(cursor)
        if attrs.semantic != self.semantic:
            _set_attrs(cursor, attrs._replace(semantic=self.semantic))
        self.cursor = cursor
        # Stock pyte clamps the restored row into the scroll region; xterm and
        # tmux restore it as saved (the region only binds in origin mode).
        self.ensure_hbounds()
        self.ensure_vbounds()

    def cursor_to_line(self, line: int | None = None) -> None:
        """VPA. In origin mode the row counts from the top margin (the screen's top
        when no region is set); stock pyte asserts a region exists and, when none
        does, leaves the cursor below the screen."""
        y = (line or 1) - 1
        if mo.DECOM in self.mode and self.margins is not None:
            y += self.margins.top
        self.cursor.y = y
        self.ensure_vbounds()

    # -- tabs ---------------------------------------------------------------------------

    def tab(self) -> None:
        """HT: to the next tab stop, or the last column (stops past it are ignored)."""
        x = self.cursor.x
        stops = [stop for stop in self.tabstops if stop > x]
        self.cursor.x = min(min(stops), self.columns - 1) if stops else self.columns - 1

    def tab_forward(self, count: int | None = None) -> None:
        """CHT (CSI I)."""
        for _ in range(min(count or 1, self.columns)):
            self.tab()

    def tab_backward(self, count: int | None = None) -> None:
        """CBT (CSI Z)."""
        x = min(self.cursor.x, self.columns - 1)
        for _ in range(min(count or 1, self.columns)):
            stops = [s for s in self.tabstops if s < x]
            x = max(stops) if stops else 0
        self.cursor.x = x

    # -- attributes --------------------------------------------------------------------

    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        self.sgr(";".join(map(str, attrs)))

    def sgr(self, params: str) -> None:
        """SGR from its raw parameter string (``;`` and ``:`` separated), memoised twice:
        the parsed plan per string, and the resulting attributes per (attributes, string)."""
        cursor = self.cursor
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        key = (attrs, params)
        cache = self._sgr_cache
        result = cache.get(key)
        if result is None:
            plans = self._sgr_plans
            plan = plans.get(params)
            seen = plan is not None
            if plan is None:
                plan = _sgr_plan(params)
                # A string is remembered (a set of strings, nothing for the garbage
                # collector to scan) the first time and its plan kept the second.
                once = self._sgr_once
                seen = params in once
                if seen:
                    if len(plans) >= _SGR_CACHE_LIMIT:
                        plans.clear()
                    plans[params] = plan
                else:
                    if len(once) >= _SGR_CACHE_LIMIT:
                        once.clear()
                    once.add(params)
            reset, assigns = plan
            if reset and not assigns:
                result = self._default_attrs()
            else:
                v: list[Any] = list(self._default_attrs() if reset else attrs)
                for index, value in assigns:
                    v[index] = value
                result = _new_tuple(Cell, v)
            if seen:  # a string seen once (say a random colour) is not worth a result
                if len(cache) >= _SGR_CACHE_LIMIT:
                    cache.clear()
                cache[key] = result
            elif not reset or assigns:  # built here (not the shared default attributes)
                self._one_off = result
        cursor.attrs = result  # type: ignore[assignment]

    def set_semantic(self, semantic: int) -> None:
        self.semantic = semantic
        attrs = _attrs(self.cursor)
        if attrs.semantic != semantic:
            _set_attrs(self.cursor, attrs._replace(semantic=semantic))

    # -- queries, OSC, bell ----------------------------------------------------------

    def write_process_input(self, data: str) -> None:
        self.replies.append(data)

    def report_device_attributes(self, mode: int = 0, **kwargs: Any) -> None:
        """DA1 (``CSI c``) and, with ``secondary=True``, DA2 (``CSI > c``)."""
        if mode != 0:
            return
        if kwargs.get("secondary"):
            self.write_process_input("\x1b[>1;10;0c")
        elif not kwargs.get("private"):
            self.write_process_input("\x1b[?1;2c")

    def report_device_status(self, mode: int = 0, **kwargs: Any) -> None:
        """DSR 5 and 6 (and DECXCPR, ``CSI ? 6 n``, with ``private=True``)."""
        if mode == 5 and not kwargs.get("private"):
            self.write_process_input("\x1b[0n")
        elif mode == 6:
            x = min(self.cursor.x, self.columns - 1) + 1
            y = self.cursor.y + 1
            if mo.DECOM in self.mode and self.margins is not None:
                y -= self.margins.top
            prefix = "?" if kwargs.get("private") else ""
            self.write_process_input(f"\x1b[{prefix}{y};{x}R")

    def bell(self, *args: Any) -> None:
        self.bell_count += 1
        self.events.append(Bell())

    def set_title(self, param: str) -> None:
        if param != self.title:
            self.title = param
            self.events.append(TitleChanged(title=param))

    def osc(self, payload: str) -> None:
        """Dispatch one OSC string (without introducer and terminator)."""
        code, _, rest = payload.partition(";")
        if code == "0":
            self.set_icon_name(rest)
            self.set_title(rest)
        elif code == "1":
            self.set_icon_name(rest)
        elif code == "2":
            self.set_title(rest)
        elif code == "7":
            cwd = _parse_cwd(rest)
            if cwd != self.cwd:
                self.cwd = cwd
                self.events.append(CwdChanged(cwd=cwd))
        elif code == "8":
            _params, _, uri = rest.partition(";")
            self.hyperlink = uri or None
        elif code == "133":
            self._osc133(rest)
        # 52 (clipboard) and everything else: deliberately ignored.

    def _osc133(self, rest: str) -> None:
        kind, _, args = rest.partition(";")
        if kind in _MARKS:
            shell = self.shell
            if not shell.checkpoint:
                # Output can print marks too: only the pane's signed ones count
                # (phux.signed_marks). A checkpoint is the server's, unsigned.
                signed = unsigned(args, shell.key)
                if signed is None:
                    return
                args = signed
            shell.mark(kind, args)

    # -- size ---------------------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Resize without losing text: rows dropped from the top go to scrollback, and
        a width change reflows the main screen and its history (``_reflow``).

        Stock pyte deletes rows from the top (they are lost), cuts rows at a
        narrower width and never adds tab stops for new columns. Blank rows below
        the cursor are dropped first, as tmux does. The alternate screen is not
        reflowed (tmux does not reflow it either): its rows are cut.
        """
        lines = lines or self.lines
        columns = columns or self.columns
        if lines == self.lines and columns == self.columns:
            return
        if lines < self.lines:
            excess = self.lines - lines
            y = self.lines - 1
            while excess and y > self.cursor.y and not self.buffer.get(y):
                self.buffer.pop(y, None)
                if self.main_buffer is not None:
                    self.main_buffer.pop(y, None)
                excess -= 1
                y -= 1
            for _ in range(excess):
                if self.alternate and self.main_buffer is not None:
                    self._push_history(self.main_buffer[0])
                    _shift_up(self.main_buffer, self.lines)
                    _shift_up(self.buffer, self.lines)
                else:
                    self._push_history(self.buffer[0])
                    _shift_up(self.buffer, self.lines)
            self.cursor.y = max(0, self.cursor.y - excess)
            for sp in self.saved_cursors.values():
                sp.cursor.y = max(0, min(sp.cursor.y - excess, lines - 1))
            self.lines = lines
        elif lines > self.lines and self.scrollback:
            self._pull_history(lines - self.lines)
            self.lines = lines
        if columns != self.columns:
            self._reflow(lines, columns)
            if self.alternate:
                for line in self.buffer.values():
                    for x in [x for x in line if x >= columns]:
                        del line[x]
            if columns < self.columns:
                self.tabstops = {x for x in self.tabstops if x < columns}
            else:
                self.tabstops.update(x for x in range(8, columns, 8) if x >= self.columns)
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns if self._pending else columns - 1)
        self._pending = False
        self.cursor.y = min(self.cursor.y, lines - 1)

    _pending = False  # (resize: the reflowed cursor waits to wrap at the new width)

    def _pull_history(self, needed: int) -> None:
        """A taller main screen takes back the newest history rows at its top (as tmux
        does): the rows and the cursor move down, every row keeps its absolute number
        (``scrolled_off`` goes back by as many). A position DECSC saved on the main
        screen stays put; on the alternate screen the main screen's rows move (the
        alternate screen's do not)."""
        pulled = min(needed, len(self.scrollback))
        buffer = self.main_buffer if self.alternate else self.buffer
        assert buffer is not None
        rows = {y + pulled: line for y, line in buffer.items() if y < self.lines}
        buffer.clear()
        for y in range(pulled - 1, -1, -1):
            buffer[y] = self.scrollback.pop()
        buffer.update(rows)
        # The rendered texts of the rows taken back (the newest; those not rendered
        # yet are the newest of all).
        unrendered = min(self._unrendered, pulled)
        self._unrendered -= unrendered
        for _ in range(min(pulled - unrendered, len(self._scrollback_text))):
            self._scrollback_text.pop()
        self.scrolled_off -= pulled
        if not self.alternate:
            self.cursor.y += pulled
        elif (saved := self.saved_cursors.get(False)) is not None:
            # (the main screen's cursor, which it gets back: tmux pulls the rows when
            # the alternate screen is left, with the cursor it gets back)
            saved.cursor.y += pulled

    def _reflow(self, lines: int, columns: int) -> None:
        """The main screen and its history reflowed from ``self.columns`` to ``columns``
        (``lines`` rows): soft-wrapped rows joined, cut again; the cursor and the
        shell's marks keep their place in the text."""
        from phux.engine._reflow import reflow  # (only a width change needs it)

        cols = self.columns
        main = self.main_buffer if self.alternate else self.buffer
        assert main is not None
        history = list(self.scrollback)
        h = len(history)
        rows: list[Line | None] = [*history, *(main.get(y) for y in range(lines))]
        first = self.scrolled_off - h  # the absolute number of rows[0]
        # The cursor of the main screen: the live one, or (on the alternate screen)
        # the saved one the main screen gets back when it returns (tmux reflows it
        # then). A position saved by DECSC on the main screen is a place on the
        # screen and stays put, as in tmux.
        cursor: PyteCursor | None = self.cursor
        if self.alternate:
            saved = self.saved_cursors.get(False)
            cursor = saved.cursor if saved is not None else None
        points: list[tuple[int, int]] = []
        if cursor is not None:
            points.append((h + cursor.y, cursor.x))
        marks = self.shell.positions()
        held = [(r - first, c) for r, c in marks if 0 <= r - first < len(rows)]
        points.extend(held)
        keep = points[0] if cursor is not None else None
        new_rows, moved = reflow(rows, cols, columns, points, keep)
        if len(new_rows) < lines:
            new_rows.extend([None] * (lines - len(new_rows)))
        new_h = len(new_rows) - lines
        # No absolute row number names another row later: when fewer rows are held,
        # the first ones count as gone (``shell.first_row`` moves down by as many).
        gone = max(0, h - new_h)
        new_first = first + gone
        self.scrolled_off = new_first + new_h
        self.scrollback.clear()
        self.scrollback.extend(
            line if line is not None else _new_row(Line) for line in new_rows[:new_h]
        )
        self._scrollback_text.clear()
        self._unrendered = len(self.scrollback)
        main.clear()
        for y, line in enumerate(new_rows[new_h:]):
            if line is not None:
                if line.__class__ is _LazyLine:
                    _fill(line)  # (rows on the screen are drawn on: ordinary rows)
                main[y] = line
        it = iter(moved)
        if cursor is not None:
            r, x = next(it)
            if r >= new_h:
                cursor.y, cursor.x = r - new_h, x
                self._pending = x >= columns and mo.DECAWM in self.mode and not self.alternate
            else:  # (its row went into the history: tmux homes it)
                cursor.y = cursor.x = 0
            if self.alternate:
                cursor.x = min(cursor.x, columns - 1)  # (DECRC puts it inside the screen)
        table = {old: (new_first + r, x) for old, (r, x) in zip(held, it, strict=True)}

        def place(row: int, col: int) -> tuple[int, int]:
            i = row - first
            if i < 0:
                return row + gone, col
            if i >= len(rows):
                return new_first + len(new_rows) + i - len(rows), col
            return table[(i, col)]

        self.shell.remap(place)

    # -- history text ----------------------------------------------------------------

    def clear_history(self) -> None:
        """Drop all scrollback rows (and their rendered text)."""
        self.scrollback.clear()
        self._scrollback_text.clear()
        self._unrendered = 0

    def _render_history(self) -> deque[tuple[str, str]]:
        """Render the rows pushed since the last call; ``maxlen`` drops the oldest
        texts exactly as it dropped the oldest rows."""
        texts = self._scrollback_text
        scrollback = self.scrollback
        pending = min(self._unrendered, len(scrollback))
        cols = self.columns
        rows = list(islice(reversed(scrollback), pending))
        rows.reverse()
        append = texts.append
        for line in rows:
            kind = line.__class__
            if kind is _LazyLine or kind is _TextLine:  # most rows of a flood: no cells read
                text = line.text
                n = len(text)
                append((text + " " * (cols - n) if n < cols else text, text.rstrip(" ")))
            else:
                text = _render_line(line, cols)
                append((text, text.rstrip(" ")))
        self._unrendered = 0
        if len(texts) != len(scrollback):
            # ``scrollback`` was changed behind our back: render it all again.
            texts.clear()
            for line in scrollback:
                text = _render_line(line, cols)
                texts.append((text, text.rstrip(" ")))
        return texts

    def history_rows(self, trimmed: bool = False) -> list[str]:
        """Scrollback rows, oldest first (untrimmed unless ``trimmed``); rendered once."""
        index = 1 if trimmed else 0
        return [t[index] for t in self._render_history()]

    def history_wrapped(self) -> list[bool]:
        return [line.wrapped for line in self.scrollback]


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


def _parse_cwd(value: str) -> str:
    """The path of an OSC 7 ``file:`` URL, percent-decoded: ``unquote(urlparse(value).path)``;
    any other value as it is.

    A URL of ASCII characters without brackets, tabs or line breaks (what shells
    send) is taken apart here, as urllib does it: importing urllib.parse (with
    ipaddress) costs ~4 ms, which a one-shot reader replaying a checkpoint with
    a working directory would pay. Any other URL is left to urllib, whose
    bracket (IPv6) checks, removals and non-ASCII rules are not worth repeating.
    """
    if not value.startswith("file:"):
        return value
    if not value.isascii() or any(c in value for c in "[]\t\r\n"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(value).path)
    url = value[5:]
    if url.startswith("//"):  # the host runs up to the first of / ? #
        ends = [i for i in (url.find(c, 2) for c in "/?#") if i >= 0]
        url = url[min(ends) :] if ends else ""
    path = url.partition("#")[0].partition("?")[0]  # ("file" has no ;params)
    if "%" not in path:
        return path
    head, *escaped = path.split("%")
    out = [head.encode()]
    for part in escaped:
        if len(part) >= 2 and part[0] in _HEX_DIGITS and part[1] in _HEX_DIGITS:
            out += (bytes.fromhex(part[:2]), part[2:].encode())
        else:  # not an escape: kept as it is
            out += (b"%", part.encode())
    return b"".join(out).decode("utf-8", "replace")


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


__all__ = ["BLANK", "Cell", "EngineScreen", "Line", "Margins"]

"""SGR both ways.

From parameters to a pen: what ``CSI ... m`` assigns to a ``Cell``'s fields
(planned once per parameter string, then replayed from the screen's cache), and
runs of SGR merged into one (the stream and the bulk path). From a pen to the
parameters that set it: ``sgr`` (checkpoints and DECRQSS)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phux.engine._cells import UL_DASHED, UL_DOUBLE, UL_RGB, UL_SINGLE, Cell
from phux.engine._pyte import graphics as g

_FG, _BG, _FG_INDEX, _BG_INDEX = 1, 2, 12, 13
_UNDERSCORE, _UL_STYLE, _UL_COLOR = 5, 14, 15


def _clamp8(v: int) -> int:
    return 0 if v < 0 else 255 if v > 255 else v


def _build_flags() -> dict[int, tuple[tuple[int, bool | int], ...]]:
    fields = Cell._fields
    flags: dict[int, tuple[tuple[int, bool | int], ...]] = {
        code: ((fields.index(name[1:]), name.startswith("+")),) for code, name in g.TEXT.items()
    }
    faint, invisible, overline = (fields.index(n) for n in ("faint", "invisible", "overline"))
    flags[22] = (*flags[22], (faint, False))
    flags[2] = ((faint, True),)
    flags[6] = flags[5]
    flags[8] = ((invisible, True),)
    flags[28] = ((invisible, False),)
    flags[4] = ((_UNDERSCORE, True), (_UL_STYLE, UL_SINGLE))
    flags[24] = ((_UNDERSCORE, False), (_UL_STYLE, UL_SINGLE))
    flags[21] = ((_UNDERSCORE, True), (_UL_STYLE, UL_DOUBLE))  # (ECMA-48, kitty, xterm)
    flags[59] = ((_UL_COLOR, -1),)
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
                    if isinstance(m, int) and 0 <= m <= 255:
                        if p == 58:
                            v[_UL_COLOR] = m
                        else:
                            _set_color(v, p == 38, g.FG_BG_256[m], m)
            elif how == 2:
                rgb = [x for x in items[i : i + 3] if isinstance(x, int)]
                if len(rgb) == 3:
                    i += 3
                    r, gg, b = (_clamp8(x) for x in rgb)
                    if p == 58:
                        v[_UL_COLOR] = UL_RGB | r << 16 | gg << 8 | b
                    else:
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
    """``4:n`` underline styles (0 none, 1 single, 2 double, 3 curly, 4 dotted, 5
    dashed, as kitty defines them; others single), ``38:5:n``, ``38:2::r:g:b`` and
    ``38:2:r:g:b`` (and the same for 48, and 58: the underline's colour)."""
    head = item[0]
    if head == 4:
        style = UL_SINGLE if len(item) < 2 else item[1]
        v[_UNDERSCORE] = style != 0
        v[_UL_STYLE] = style if UL_DOUBLE <= style <= UL_DASHED else UL_SINGLE
    elif head == 58 and len(item) >= 3:
        if item[1] == 5 and 0 <= item[2] <= 255:
            v[_UL_COLOR] = item[2]
        elif item[1] == 2 and len(item) >= 5:
            r, gg, b = (_clamp8(x) for x in (item[-3:] if len(item) >= 6 else item[2:5]))
            v[_UL_COLOR] = UL_RGB | r << 16 | gg << 8 | b
    elif head in (38, 48) and len(item) >= 2:
        if item[1] == 5 and len(item) >= 3 and 0 <= item[2] <= 255:
            _set_color(v, head == 38, g.FG_BG_256[item[2]], item[2])
        elif item[1] == 2 and len(item) >= 5:
            rgb = item[-3:] if len(item) >= 6 else item[2:5]
            r, gg, b = (_clamp8(x) for x in rgb)
            _set_color(v, head == 38, f"{r:02x}{gg:02x}{b:02x}", -1)


_EXTENDED_COLOURS = frozenset(("38", "48", "58"))


def _sgr_complete(params: str) -> bool:
    """Whether ``params`` leaves no extended colour (38/48/58) short of its arguments."""
    if "8" not in params:
        return True
    fields = params.split(";")
    n = len(fields)
    i = 0
    while i < n:
        if fields[i] in _EXTENDED_COLOURS:
            if i + 1 >= n:
                return False
            mode = fields[i + 1]
            last = i + (2 if mode == "5" else 4 if mode == "2" else 1)
            if last >= n:
                return False
            i = last + 1
        else:
            i += 1
    return True


def _sgr_run(sgr: Callable[[str], None], run: str) -> None:
    """``CSI a m CSI b m ...`` (``run`` without the first CSI and the last ``m``).

    Applied as one ``CSI a;b m`` when that is the same thing (an empty list
    means 0, as an empty parameter does), which is one parse and one attribute
    change instead of several. It is not when a sequence ends short of an
    extended colour's arguments: ``CSI 38;5 m CSI 1 m`` is a colour with no
    index (ignored) and then bold, but ``38;5;1`` would be colour 1.
    """
    merged = _merged_runs.get(run)
    if merged is None:
        parts = run.split("m\x1b[")
        whole = all(_sgr_complete(part) for part in parts[:-1])
        merged = ";".join(parts) if whole else ""  # a merged run is never empty
        if len(_merged_runs) >= _MERGED_RUNS_LIMIT:
            _merged_runs.clear()
        _merged_runs[run] = merged
    if merged:
        sgr(merged)
    else:
        for part in run.split("m\x1b["):
            sgr(part)


# TUIs repeat the same few SGR runs (a theme's colour pairs): decided once each.
_merged_runs: dict[str, str] = {}
_MERGED_RUNS_LIMIT = 4096


# The pen's flags in the order a checkpoint writes them: (Cell field, SGR code).
_FLAGS = (
    (3, "1"),  # bold
    (9, "2"),  # faint
    (4, "3"),  # italics
    (5, "4"),  # underscore
    (8, "5"),  # blink
    (7, "7"),  # reverse
    (10, "8"),  # invisible
    (6, "9"),  # strikethrough
    (11, "53"),  # overline
)
_sgr_cache: dict[tuple[object, ...], str] = {}


def _color(name: str, index: int, fg: bool) -> str:
    if index >= 0:
        if index < 8 and name == (g.FG_ANSI if fg else g.BG_ANSI)[(30 if fg else 40) + index]:
            return str((30 if fg else 40) + index)
        if (
            8 <= index < 16
            and name == (g.FG_AIXTERM if fg else g.BG_AIXTERM)[(90 if fg else 100) + index - 8]
        ):
            return str((90 if fg else 100) + index - 8)
        return f"{38 if fg else 48};5;{index}"
    if name == "default" or len(name) != 6:
        return ""
    try:
        r, gg, b = int(name[0:2], 16), int(name[2:4], 16), int(name[4:6], 16)
    except ValueError:
        return ""
    return f"{38 if fg else 48};2;{r};{gg};{b}"


def sgr(attrs: Cell) -> str:
    """The SGR sequence that sets exactly ``attrs`` (from a reset), OSC 133 mark aside."""
    key = attrs[1:16]
    hit = _sgr_cache.get(key)
    if hit is not None:
        return hit
    params = ["0"]
    params.extend(code for index, code in _FLAGS if attrs[index])
    if attrs.underscore and attrs.ul_style != UL_SINGLE:
        params[params.index("4")] = f"4:{attrs.ul_style}"  # (an older reader: single)
    ul_color = attrs.ul_color
    if ul_color >= UL_RGB:
        params.append(f"58;2;{ul_color >> 16 & 255};{ul_color >> 8 & 255};{ul_color & 255}")
    elif ul_color >= 0:
        params.append(f"58;5;{ul_color}")
    fg = _color(attrs.fg, attrs.fg_index, True)
    bg = _color(attrs.bg, attrs.bg_index, False)
    if fg:
        params.append(fg)
    if bg:
        params.append(bg)
    out = "\x1b[" + ";".join(params) + "m"
    if len(_sgr_cache) > 4096:
        _sgr_cache.clear()
    _sgr_cache[key] = out
    return out

"""Reflow on a width change: soft-wrapped rows joined into logical lines, cut again.

What tmux (``grid_reflow``), xterm's successors and kitty do when a pane
narrows or widens, on the main screen and its history (``EngineScreen.resize``
calls :func:`reflow`; the alternate screen is never reflowed, as in tmux):

* A logical line is a row and the rows that continue it (``Line.wrapped``:
  autowrap made them). Hard line ends (a line feed) are never joined.
* A logical line's cells run from column 0 of its first row to the end of its
  last row's content: trailing blanks (cells that are the row's default blank,
  what erasing leaves) of the last row are not carried, but on the cursor's row
  everything before the cursor is (a prompt's space after ``$``). A row that
  wraps into the next carries its whole width, less the pad a wide character
  left in its last column when it did not fit.
* The cells are cut at the new width; a wide character that would straddle the
  cut goes to the next row whole and leaves a pad in the last column, as
  drawing it there would (``EngineScreen._draw_char``).
* Positions (the cursor, the saved cursor, the shell's marks) keep their offset
  in their logical line, so the cursor stays on its character.

A logical line that already fits (one row no wider than the new width) keeps
its row object: widening a history of plain lines rebuilds nothing, and rows a
flood built from text (``_TextLine``, ``_LazyLine``) are cut as text, without
reading their cells.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, cast

from phux.engine._cells import (
    _FROM_0,
    BLANK,
    BLANK_REVERSE,
    Cell,
    Line,
    _LazyLine,
    _new_row,
    _TextLine,
)
from phux.engine._widths import char_width

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["reflow"]

Point = tuple[int, int]
"""A position: (index in the rows given to :func:`reflow`, column)."""

_PAD = BLANK._replace(data="")
_PAD_REVERSE = BLANK_REVERSE._replace(data="")


def _is_wide(cell: Cell | None) -> bool:
    return cell is not None and bool(cell[0]) and char_width(cell[0][0]) == 2


def _is_blank(cell: Cell | None, default: Cell) -> bool:
    return cell is None or cell in (BLANK, default)


def _used(line: Line | None, cols: int, keep: int) -> int:
    """The columns of ``line`` a hard line end carries: up to its last cell that is
    not a default blank, and at least ``keep`` (the cursor's column on its row)."""
    if not line:
        return min(keep, cols)
    kind = line.__class__
    if kind is _TextLine or kind is _LazyLine:
        text = line.text
        x = len(text)
        if x <= cols and keep <= x and text[-1:] != " ":  # (most rows: no blank at the end)
            return x
        x = min(x, cols)
    else:
        x = cols
    default = line.default
    get = line.get
    while x > keep and _is_blank(get(x - 1), default):
        x -= 1
    return max(x, min(keep, cols))


def _wrap_width(line: Line | None, cols: int) -> int:
    """The columns of a row that wraps into the next: all of them, less a pad (an
    empty cell a wide character that did not fit left in the last column)."""
    if line is None or cols < 2:
        return cols
    last = line.get(cols - 1)
    if last is not None and last[0] == "" and not _is_wide(line.get(cols - 2)):
        return cols - 1
    return cols


def reflow(
    rows: Sequence[Line | None],
    cols: int,
    new_cols: int,
    points: Sequence[Point],
    keep: Point | None = None,
) -> tuple[list[Line | None], list[Point]]:
    """``rows`` (oldest first, ``cols`` wide) reflowed to ``new_cols``, and ``points``
    mapped onto the new rows (in the same order). ``keep``: the cursor, whose row
    carries its cells up to the cursor's column. Rows the reflow leaves alone are
    returned as they are (``None`` for a row never written)."""
    out: list[Line | None] = []
    mapped: list[Point] = list(points)
    at_row: dict[int, list[int]] = {}
    for k, (r, _c) in enumerate(points):
        at_row.setdefault(r, []).append(k)
    keep_row, keep_x = keep if keep is not None else (-1, 0)
    new = _new_row
    n = len(rows)
    i = 0
    while i < n:
        j = i + 1
        while j < n and (nxt := rows[j]) is not None and nxt.wrapped:
            j += 1
        first = rows[i]
        if j == i + 1:
            # One row: kept as it is when its content fits.
            used = _used(first, cols, keep_x if keep_row == i else 0)
            if used <= new_cols:
                if first and new_cols < cols:
                    _cut(first, new_cols)
                for k in at_row.get(i, ()):
                    mapped[k] = (len(out), min(points[k][1], new_cols))
                out.append(first)
                i = j
                continue
            kind = first.__class__
            runs = first.runs if kind is _TextLine or kind is _LazyLine else None  # type: ignore[union-attr]
            if (
                runs is not None
                and len(runs[1]) == 1
                and used == runs[0] == len(first.text)  # type: ignore[union-attr]
                and i not in at_row
            ):
                # The commonest row that does not fit (plain output, a flood): text in
                # one pen, cut into rows built from text, inline (no cell read or made).
                text = first.text  # type: ignore[union-attr]
                default = first.default  # type: ignore[union-attr]
                pens = runs[2]
                wrapped = first.wrapped  # type: ignore[union-attr]
                for s in range(0, used, new_cols):
                    piece = text[s : s + new_cols]
                    line = new(_LazyLine)
                    if default is not BLANK:
                        line.default = default
                    line.text = piece
                    line.runs = (len(piece), _FROM_0, pens)
                    if s or wrapped:
                        line.wrapped = True
                    out.append(line)
                i = j
                continue
        _join_and_cut(rows, i, j, cols, new_cols, keep_row, keep_x, points, at_row, mapped, out)
        i = j
    return out, mapped


def _cut(line: Line, width: int) -> None:
    """Drop the cells of ``line`` at ``width`` and past it (default blanks)."""
    kind = line.__class__
    if kind is _TextLine or kind is _LazyLine:
        if len(line.text) <= width:
            return
    elif not line or max(line) < width:
        return
    for x in [x for x in line if x >= width]:
        del line[x]


def _join_and_cut(
    rows: Sequence[Line | None],
    i: int,
    j: int,
    cols: int,
    new_cols: int,
    keep_row: int,
    keep_x: int,
    points: Sequence[Point],
    at_row: dict[int, list[int]],
    mapped: list[Point],
    out: list[Line | None],
) -> None:
    """The logical line ``rows[i:j]`` joined, cut at ``new_cols`` and appended to
    ``out``; the points on its rows mapped."""
    first = rows[i]
    default = first.default if first is not None else BLANK
    wrapped_first = (
        first is not None and first.wrapped
    )  # (the oldest row held may continue a lost one)
    bases: list[int] = []
    texts = _texts(rows, i, j, cols, keep_row, keep_x)
    if texts is not None:
        _cut_text(rows, texts, new_cols, default, wrapped_first, i, j, points, at_row, mapped, out)
        return
    seq: list[Cell | None] = []
    for r in range(i, j):
        line = rows[r]
        bases.append(len(seq))
        width = (
            _used(line, cols, keep_x if keep_row == r else 0)
            if r == j - 1
            else _wrap_width(line, cols)
        )
        if not line:
            seq.extend([None] * width)
        else:
            seq.extend(map(line.get, range(width)))  # (C loops: no Python call per cell)
    length = len(seq)
    gaps = None in seq  # (cells never written: kept unwritten)
    starts = _starts(seq, length, new_cols)
    base = len(out)
    pad = _PAD_REVERSE if default is BLANK_REVERSE else _PAD
    for t, s in enumerate(starts):
        e = starts[t + 1] if t + 1 < len(starts) else length
        line = _new_row(Line)
        if default is not BLANK:
            line.default = default
        if gaps:
            line.update((x, cell) for x, cell in enumerate(seq[s:e]) if cell is not None)
        else:
            line.update(zip(range(e - s), cast("list[Cell]", seq[s:e]), strict=True))
        if e - s < new_cols and t + 1 < len(starts):
            line[new_cols - 1] = pad  # a wide character went on to the next row
        if t or wrapped_first:
            line.wrapped = True
        out.append(line)
    if at_row:
        _map_points(bases, i, j, starts, base, new_cols, points, at_row, mapped)


def _starts(seq: Sequence[Cell | None], length: int, new_cols: int) -> list[int]:
    """Where each new row of a logical line starts: every ``new_cols`` cells, one
    earlier where a wide character would straddle the cut."""
    starts = [0]
    s = 0
    while s + new_cols < length:
        e = s + new_cols
        cell = seq[e]
        if new_cols > 1 and cell is not None and cell[0] == "" and _is_wide(seq[e - 1]):
            e -= 1
        starts.append(e)
        s = e
    return starts


def _map_points(
    bases: list[int],
    i: int,
    j: int,
    starts: list[int],
    base: int,
    new_cols: int,
    points: Sequence[Point],
    at_row: dict[int, list[int]],
    mapped: list[Point],
) -> None:
    for r in range(i, j):
        for k in at_row.get(r, ()):
            offset = bases[r - i] + points[k][1]
            t = bisect_right(starts, offset) - 1
            mapped[k] = (base + t, min(offset - starts[t], new_cols))


def _texts(
    rows: Sequence[Line | None], i: int, j: int, cols: int, keep_row: int, keep_x: int
) -> list[str] | None:
    """The texts of ``rows[i:j]`` as they join (each cut to what it carries) when every
    row is a row built from text whose pens are known (``_TextLine``/``_LazyLine``
    with ``runs``) and every row but the last fills its width; else None."""
    texts: list[str] = []
    for r in range(i, j):
        line = rows[r]
        if line is None:
            return None
        kind = line.__class__
        if kind is not _TextLine and kind is not _LazyLine:
            return None
        runs = line.runs
        text = line.text
        if runs is None or runs[0] != len(text) or len(text) > cols:
            return None
        if r < j - 1:
            if len(text) != cols:
                return None
            texts.append(text)
        else:
            texts.append(text[: _used(line, cols, keep_x if keep_row == r else 0)])
    if keep_row >= i and keep_row < j and keep_x > len(texts[keep_row - i]):
        return None  # (the cursor is past its row's text: cells the text does not hold)
    return texts


def _cut_text(
    rows: Sequence[Line | None],
    texts: list[str],
    new_cols: int,
    default: Cell,
    wrapped_first: bool,
    i: int,
    j: int,
    points: Sequence[Point],
    at_row: dict[int, list[int]],
    mapped: list[Point],
    out: list[Line | None],
) -> None:
    """:func:`_join_and_cut` for rows built from text of width-1 characters
    (:func:`_texts`): the joined text and its pens cut into rows built from text
    (``_LazyLine``: no cell is read or made)."""
    run_starts: list[int] = []
    pens: list[Cell] = []
    bases: list[int] = []
    offset = 0
    for r, piece in zip(range(i, j), texts, strict=True):
        bases.append(offset)
        runs = rows[r].runs  # type: ignore[union-attr]
        assert runs is not None
        for start, pen in zip(runs[1], runs[2], strict=True):
            if start >= len(piece):
                break
            if not pens or pen[1:] != pens[-1][1:]:
                run_starts.append(offset + start)
                pens.append(pen)
        offset += len(piece)
    text = "".join(texts)
    starts = list(range(0, len(text), new_cols)) or [0]
    base = len(out)
    new = _new_row
    one = (pens[0],) if len(pens) == 1 else None  # (one pen: every row's runs alike)
    for t, s in enumerate(starts):
        piece = text[s : s + new_cols]
        line = new(_LazyLine)
        if default is not BLANK:
            line.default = default
        if not piece:
            line.__class__ = Line  # type: ignore[assignment]  # (an empty row is a plain one)
        elif one is not None:
            line.text = piece
            line.runs = (len(piece), _FROM_0, one)
        else:
            first = bisect_right(run_starts, s) - 1
            last = bisect_right(run_starts, s + len(piece) - 1)
            line.text = piece
            line.runs = (
                len(piece),
                (0, *(x - s for x in run_starts[first + 1 : last])),
                tuple(pens[first:last]),
            )
        if t or wrapped_first:
            line.wrapped = True
        out.append(line)
    if at_row:
        _map_points(bases, i, j, starts, base, new_cols, points, at_row, mapped)

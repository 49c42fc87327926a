"""Reflow on resize (``phux.engine._reflow``): the rules each have a test here; the
agreement with tmux is in test_reflow_vs_tmux.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.engine import Terminal, _resize
from phux.engine._cells import BLANK, Cell, Line, _LazyLine, _TextLine
from phux.engine._reflow import reflow
from phux.engine.checkpoint import write_checkpoint
from replica.state import diff, engine_state


def _rows(t: Terminal) -> list[tuple[dict[int, Any], bool]]:
    """Every row of the main screen and its history: cells and soft-wrap flag."""
    s = t.screen
    main = s.main_buffer if s.alternate and s.main_buffer is not None else s.buffer
    lines = [*s.scrollback, *(main.get(y) for y in range(s.lines))]
    return [(dict(line) if line else {}, bool(line is not None and line.wrapped)) for line in lines]


_WORD = st.sampled_from(
    ["ab", "hello", "x" * 9, "中文", "字", "\x1b[31mred\x1b[0m", "\x1b[1;44mbold\x1b[0m", "é"]
)
_LINE = st.lists(_WORD, min_size=0, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, min_size=4, max_size=12), st.integers(3, 23), st.integers(3, 23))
def test_reflowed_is_what_drawing_at_the_new_width_leaves(
    lines: list[str], old: int, new: int
) -> None:
    # Lines written at one width and reflowed to another are the rows the same lines
    # written at the other width make: cut at the width, wide characters whole (a pad
    # where one did not fit), soft-wrap flags, styles.
    data = "".join(line + "\r\n" for line in lines).encode()
    reflowed = Terminal(old, 3, history=500)
    reflowed.feed(data)
    reflowed.resize(new, 3)
    drawn = Terminal(new, 3, history=500)
    drawn.feed(data)
    assert _rows(reflowed) == _rows(drawn)
    assert reflowed.project(scrollback=0) == drawn.project(scrollback=0)


_SESSION = (
    b"\x1b]133;A\x07$ \x1b]133;B\x07printf a long line\r\n\x1b]133;C\x07"
    + "wide 中文字符 and more words to wrap around the edge\r\n".encode() * 3
    + b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07typed but not run yet"
)


def test_narrowing_then_widening_back_restores_every_row() -> None:
    t = Terminal(30, 5, history=100)
    t.feed(_SESSION)
    before = (_rows(t), t.project(scrollback=0), t.commands)
    before_top = t.scrolled_off
    output = t.command_output(t.commands[0])
    for cols in (11, 7, 17, 30):
        t.resize(cols, 5)
        # The shell's marks move with the text: the output and the typed input stay.
        assert t.command_output(t.commands[0]) == output
        assert t.pending_input == "typed but not run yet"
    assert _rows(t) == before[0]
    assert t.project(scrollback=0) == before[1]
    # (absolute rows only grow: compared from the viewport's first row)
    top, was = t.scrolled_off, before_top
    assert [(c.start_row - top, c.start_col, (c.end_row or 0) - top) for c in t.commands] == [
        (c.start_row - was, c.start_col, (c.end_row or 0) - was) for c in before[2]
    ]


def test_absolute_rows_never_go_back() -> None:
    # Widening joins rows (fewer are held): the first ones count as gone, so that an
    # absolute row number (``scrolled_off`` + y) never names another row later.
    t = Terminal(10, 3, history=100)
    t.feed(b"x" * 95 + b"\r\n")
    scrolled, first = t.scrolled_off, t.screen.shell.first_row()
    t.resize(50, 3)
    assert t.scrolled_off == scrolled
    assert t.screen.shell.first_row() > first
    t.resize(5, 3)
    assert t.scrolled_off > scrolled


@pytest.mark.parametrize("flood", [False, True])
def test_the_oldest_row_held_keeps_its_soft_wrap(flood: bool) -> None:
    # The row it continued left the history: it still continues it (a caller that
    # drains the history, as run does, joins across the drains with the flag).
    # (A flood's rows are built from text: they are cut as text.)
    t = Terminal(10, 1, history=2)
    t.feed(b"".join(b"%02d%s\r\n" % (i, b"b" * 23) for i in range(60 if flood else 1)))
    assert t.screen.history_wrapped() == [True, True]
    assert all(type(line) is _LazyLine for line in t.screen.scrollback) is flood
    if not flood:  # (rows of cells: the cell by cell path)
        for line in t.screen.scrollback:
            dict(line)
            line.__class__ = Line
            line.text, line.runs = "", None
    t.resize(20, 1)
    assert t.screen.history_wrapped() == [True]
    assert t.screen.history_rows() == ["b" * 15 + " " * 5]


def test_a_drained_screen_keeps_the_soft_wrap_of_its_first_row() -> None:
    # run drains the history as it goes: the screen's first row may continue a row
    # drained already, and keeps saying so when a narrowing cuts it.
    t = Terminal(10, 2, history=100)
    t.feed(b"x\r\n" * 5 + b"a" * 10 + b"b" * 8 + b"\r\n")
    t.drain_history()
    assert t.screen.buffer[0].wrapped
    t.resize(5, 2)
    assert t.screen.history_wrapped() == [True]
    assert t.screen.history_rows() == ["bbbbb"]


def test_no_cell_is_left_past_the_new_width() -> None:
    # Erased rows hold blank cells to the edge (EL): they are not carried, and a row
    # kept as it is loses them past the new width.
    t = Terminal(40, 4, history=10)
    t.feed(b"\x1b[31mred\x1b[0m\x1b[K\r\nplain\x1b[K\r\n" * 4)
    t.resize(12, 4)
    rows = _rows(t)
    assert all(x < 12 for cells, _ in rows for x in cells)
    assert not any(wrapped for _, wrapped in rows)


def test_a_pad_is_not_carried_into_the_joined_line() -> None:
    # A wide character that did not fit in the last column left a pad there: joined
    # again, the line has no gap where the pad was.
    t = Terminal(10, 3, history=10)
    t.feed(("x" * 9 + "中文\r\n").encode())
    assert t.screen.buffer[0][9].data == ""
    t.resize(20, 3)
    row = t.screen.buffer[0]
    assert (row[9].data, row[10].data, row[11].data) == ("中", "", "文")


def test_a_flood_history_is_cut_as_text_without_reading_cells() -> None:
    # The rows a flood built from text (no cells) reflow into such rows again, with
    # the cells the cell by cell path makes from the same rows.
    data = b"".join(
        b"%05d \x1b[3%dm%s\x1b[0m tail\r\n" % (i, i % 8, b"w" * (i % 90))
        if i % 3
        else b"\x1b[32m%05d one pen %s\x1b[0m\r\n" % (i, b"p" * (i % 120))
        for i in range(1500)
    )
    fast = Terminal(100, 10, history=300)
    fast.feed(data)
    slow = Terminal(100, 10, history=300)
    slow.feed(data)
    for line in slow.screen.scrollback:  # (rows the cell path reads)
        if line.__class__ is _LazyLine:
            dict(line)  # (fills it: a _TextLine)
        line.__class__ = Line
        line.text, line.runs = "", None  # (as a _TextLine changed in place forgets them)
    assert any(line.__class__ is _LazyLine for line in fast.screen.scrollback)
    for cols in (37, 100, 150):
        fast.resize(cols, 10)
        slow.resize(cols, 10)
        if cols == 37:  # (before anything reads the cells below)
            history = list(fast.screen.scrollback)
            assert all(line.__class__ is _LazyLine for line in history)
        assert all(line.__class__ is not _LazyLine for line in fast.screen.buffer.values())
        assert _rows(fast) == _rows(slow)
        assert fast.project(scrollback=0) == slow.project(scrollback=0)
    assert all(line.__class__ in (_LazyLine, _TextLine) for line in fast.screen.scrollback)


def test_a_checkpoint_after_a_reflow_keeps_the_soft_wraps() -> None:
    # The replica's checkpoint of a reflowed pane gives a client the same rows and
    # flags, and both reflow alike at the next resize.
    t = Terminal(30, 5, history=100)
    t.feed(_SESSION)
    t.resize(13, 5)
    assert any(wrapped for _, wrapped in _rows(t))
    replayed = Terminal(13, 5, history=100)
    replayed.feed_checkpoint(write_checkpoint(t))
    assert diff(engine_state(replayed), engine_state(t)) == []
    assert _rows(replayed)[1:] == _rows(t)[1:]
    for size in ((41, 5), (9, 4)):
        t.resize(*size)
        replayed.resize(*size)
        assert diff(engine_state(replayed), engine_state(t)) == []


def test_the_bulk_path_and_drawing_every_byte_reflow_alike() -> None:
    data = b"".join(b"%d %s\r\n" % (i, b"v" * (i * 13 % 70)) for i in range(600))
    fast = Terminal(50, 6, history=300)
    fast.feed(data)
    slow = Terminal(50, 6, history=300)
    slow.stream.bulk = False
    slow.feed(data)
    assert _rows(fast) == _rows(slow)
    for cols in (21, 64):
        fast.resize(cols, 6)
        slow.resize(cols, 6)
        assert _rows(fast) == _rows(slow)
        assert fast.screen.history_rows() == slow.screen.history_rows()
        assert fast.scrolled_off == slow.scrolled_off


def _text_row(text: str, wrapped: bool = False, runs: int | None = None) -> Line:
    """A row as a flood builds it: text in one pen (red), its runs known (for its
    first ``runs`` characters, the rest blue: drawn on after it was built)."""
    pen = Cell("x", fg="red")
    line = Line.__new__(_TextLine)
    known = len(text) if runs is None else runs
    cells = [
        (pen if x < known else Cell("x", fg="blue"))._replace(data=c) for x, c in enumerate(text)
    ]
    dict.update(line, enumerate(cells))  # (the text kept)
    line.text = text
    line.runs = (known, (0,), (pen,))
    line.wrapped = wrapped
    return line


def _cells_row(line: Line) -> Line:
    """The same row as a plain row of cells."""
    plain = Line(BLANK)
    plain.update(dict(line))
    plain.wrapped = line.wrapped
    return plain


@pytest.mark.parametrize(
    ("rows", "keep"),
    [
        # A row that wraps into the next without filling its width (its last
        # cells never written): the gap is carried, not closed up.
        ([_text_row("abcdef"), _text_row("ghij", wrapped=True)], None),
        # The cursor past the end of its row's text: the blanks before it carried.
        ([_text_row("abcdefghij"), _text_row("kl", wrapped=True)], (1, 6)),
        # Runs that no longer cover the text (a row extended after it was built).
        ([_text_row("abcdefghij", runs=5), _text_row("klmno", wrapped=True)], None),
    ],
)
def test_rows_of_text_reflow_as_their_cells_do(rows: list[Line], keep: tuple[int, int]) -> None:
    assert all(type(line) is _TextLine for line in rows)
    cells = [_cells_row(line) for line in rows]
    points = [keep] if keep else []
    fast, fast_points = reflow(rows, 10, 4, points, keep)
    slow, slow_points = reflow(cells, 10, 4, points, keep)
    assert [(dict(r or {}), bool(r and r.wrapped)) for r in fast] == [
        (dict(r or {}), bool(r and r.wrapped)) for r in slow
    ]
    assert fast_points == slow_points


@pytest.mark.parametrize("rendered", [0, 3, 30])
def test_a_taller_screen_takes_rows_back_from_the_history(
    rendered: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The history's text is rendered lazily: whether its newest rows were rendered
    # before (all, some, none), what the history says after is its rows.
    t = Terminal(20, 4, history=100)
    t.feed(b"".join(b"row %d\r\n" % i for i in range(30)))
    t.feed(b"".join(b"new %d\r\n" % i for i in range(rendered)))
    if rendered:
        t.project(scrollback=0)  # (renders the history so far)
    t.feed(b"".join(b"late %d\r\n" % i for i in range(2)))  # (not rendered yet)
    scrolled, top = t.scrolled_off, t.screen.buffer[0]
    t.resize(20, 9)
    # The texts of the rows left in the history stay rendered: they are not all
    # rendered again (cell by cell), only what never was (a row or two of cells).
    renders: list[int] = []
    render_line = _resize._render_line

    def counted(*args: Any) -> str:
        renders.append(1)
        return render_line(*args)

    monkeypatch.setattr(_resize, "_render_line", counted)
    history = t.screen.history_rows()
    monkeypatch.undo()
    assert len(renders) <= 2
    assert t.scrolled_off == scrolled - 5  # (rows keep their absolute numbers)
    assert t.screen.buffer[5] is top
    assert t.screen.cursor.y == 8
    fresh = Terminal(20, 4, history=100)
    fresh.feed(b"".join(b"row %d\r\n" % i for i in range(30)))
    fresh.feed(b"".join(b"new %d\r\n" % i for i in range(rendered)))
    fresh.feed(b"".join(b"late %d\r\n" % i for i in range(2)))
    fresh.resize(20, 9)
    assert history == fresh.screen.history_rows()
    assert t.project(scrollback=0) == fresh.project(scrollback=0)

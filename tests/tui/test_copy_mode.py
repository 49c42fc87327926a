"""Copy mode's state machine over a real engine fed real bytes (no terminal, no server)."""

from __future__ import annotations

import base64
import re

from phux.engine import Terminal
from phux.tui.copy_mode import CLIPBOARD_OFF, WHEEL_LINES, CopyMode, Result, osc52
from phux.tui.copy_reflow import _line_start, reanchor, remember

PAGE_UP, PAGE_DOWN = b"\x1b[5~", b"\x1b[6~"
UP, DOWN = b"\x1b[A", b"\x1b[B"


def numbered(count: int, cols: int = 40, rows: int = 10, history: int = 1000) -> Terminal:
    """A terminal that printed ``line 0`` .. ``line count-1`` and a prompt."""
    term = Terminal(cols, rows, history=history)
    term.feed(b"".join(b"line %d\r\n" % i for i in range(count)) + b"$ ")
    return term


def shown(cm: CopyMode) -> list[str]:
    """The viewport's rows as text (right-trimmed)."""
    out = []
    for line in cm.view().rows:
        if line is None:
            out.append("")
        else:
            out.append(
                "".join(
                    line.get(x, cm.term.screen.default_char).data for x in range(cm.term.cols)
                ).rstrip()
            )
    return out


def visible(painted: str) -> str:
    """Painted VT text without its escape sequences (the characters drawn)."""
    return re.sub(r"\x1b(\[[0-9;?<>]*[ -/]*[@-~]|\(B|[78=>])|\x0f", "", painted)


# ---------------------------------------------------------------- scrolling


def test_starts_at_the_bottom_on_the_live_cursor() -> None:
    term = numbered(300)
    cm = CopyMode(term, 40, 10)
    assert cm.position == (0, 291)
    assert shown(cm)[-1] == "$"
    assert (cm.cy - term.scrolled_off, cm.cx) == (term.screen.cursor.y, 2)
    assert "[0/291]" in cm.view().indicator


def test_page_keys_g_and_G() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(PAGE_UP)
    assert cm.position == (10, 291)
    assert shown(cm)[0] == "line 281"
    cm.feed(b"\x02\x02")  # C-b twice: two more pages
    assert cm.position == (30, 291)
    cm.feed(PAGE_DOWN)
    assert cm.position == (20, 291)
    cm.feed(b"g")
    assert cm.position == (291, 291)
    assert shown(cm)[0] == "line 0"
    cm.feed(b"G")
    assert cm.position == (0, 291)
    assert shown(cm)[-1] == "$"


def test_half_pages_and_single_rows() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"\x15")  # C-u
    assert cm.position[0] == 5
    cm.feed(b"\x19\x19")  # C-y
    assert cm.position[0] == 7
    cm.feed(b"\x05\x04")  # C-e, C-d
    assert cm.position[0] == 1


def test_the_cursor_scrolls_the_view_at_its_edges() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"H")
    assert cm.position == (0, 291)
    cm.feed(UP + b"k")  # two rows above the view's top
    assert cm.position == (2, 291)
    assert shown(cm)[0] == "line 289"
    cm.feed(b"L" + DOWN)
    assert cm.position == (1, 291)


def test_the_view_stays_put_while_output_scrolls() -> None:
    """Live output keeps feeding the engine; the rows shown do not move."""
    term = numbered(300)
    cm = CopyMode(term, 40, 10)
    cm.feed(PAGE_UP * 3)
    before = shown(cm)
    term.feed(b"".join(b"more %d\r\n" % i for i in range(50)))
    assert shown(cm) == before
    assert cm.position == (80, 341)
    cm.feed(b"G")
    assert shown(cm)[-2] == "more 49"


def test_rows_that_leave_the_history_clamp_the_view() -> None:
    term = numbered(300, history=100)
    cm = CopyMode(term, 40, 10)
    cm.feed(b"g")
    assert shown(cm)[0] == "line 191"
    term.feed(b"".join(b"more %d\r\n" % i for i in range(30)))
    assert cm.position == (100, 100)  # still the oldest row held
    assert shown(cm)[0] == "line 221"


def test_a_selection_whose_start_left_the_history_starts_at_the_oldest_row() -> None:
    term = numbered(300, history=100)
    cm = CopyMode(term, 40, 10, clipboard=True)
    cm.feed(b"g ")  # from the oldest row held (line 191) ...
    cm.feed(b"j" * 5 + b"$")  # ... to line 196
    term.feed(b"more\r\n" * 3)  # lines 191 to 193 leave the history
    assert cm.feed(b"\r").copied == "line 194\nline 195\nline 196"


def test_alternate_screen_has_no_history() -> None:
    term = numbered(300)
    term.feed(b"\x1b[?1049h\x1b[Hfull screen")
    cm = CopyMode(term, 40, 10)
    assert cm.position == (0, 0)
    cm.feed(PAGE_UP + b"g")
    assert shown(cm)[0] == "full screen"


def test_a_short_history_fits_with_blank_rows_below() -> None:
    term = Terminal(40, 10, history=1000)
    term.feed(b"one\r\ntwo")
    cm = CopyMode(term, 40, 20)
    assert shown(cm)[:2] == ["one", "two"]
    assert cm.view().rows[10] is None
    cm.feed(PAGE_UP + b"k" * 5)
    assert cm.position == (0, 0)


def test_resize_keeps_the_cursor_in_view() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.resize(40, 3)
    assert cm.top <= cm.cy < cm.top + 3
    cm.resize(20, 30)
    assert cm.position == (0, 291)
    assert len(shown(cm)) == 30


# ---------------------------------------------------------------- search


def test_search_up_finds_an_older_line_and_n_N_repeat() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"?line 10\r")
    assert cm.found is not None
    assert shown(cm)[cm.cy - cm.top] == "line 109"  # the nearest above: 109
    view = cm.view()
    assert view.match[cm.cy - cm.top] == (0, 7)
    assert "[" in view.indicator
    cm.feed(b"n")
    assert shown(cm)[cm.cy - cm.top] == "line 108"
    cm.feed(b"N")
    assert shown(cm)[cm.cy - cm.top] == "line 109"


def test_search_down_wraps_around() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"/line 250\r")  # nothing below the cursor: wraps to the top
    assert shown(cm)[cm.cy - cm.top] == "line 250"
    assert cm.position[0] > 0


def test_search_wraps_back_to_the_cursor_row() -> None:
    term = Terminal(40, 5, history=100)
    term.feed(b"one abc two abc\r\n$ ")
    cm = CopyMode(term, 40, 5)
    cm.feed(b"?abc\r")  # up from the prompt: the second abc, the nearest
    assert (cm.cx, cm.found) == (12, (cm.cy, 12, 15))
    row = cm.cy
    cm.feed(b"n")
    assert (cm.cy, cm.cx) == (row, 4)
    cm.feed(b"n")  # nothing above: wraps around to the same row's other match
    assert (cm.cy, cm.cx) == (row, 12)
    cm.feed(b"N")
    assert (cm.cy, cm.cx) == (row, 4)


def test_search_prompt_edits_and_cancels() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"/lime")
    assert cm.view().message == "Search Down: lime"
    cm.feed(b"\x7f\x7fne 5\r")
    assert shown(cm)[cm.cy - cm.top].startswith("line 5")
    row = cm.cy
    cm.feed(b"?zzz\x1b")  # Escape cancels: nothing moves
    assert cm.prompt is None and cm.cy == row


def test_search_not_found_says_so_and_stays() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    row = cm.cy
    cm.feed(b"?no such text\r")
    assert cm.cy == row
    assert cm.view().message == "not found: no such text"
    assert "not found" in visible(cm.paint())


def test_search_is_smart_case() -> None:
    term = Terminal(40, 10, history=100)
    term.feed(b"Hello there\r\nhello again\r\n" + b"x\r\n" * 20)
    cm = CopyMode(term, 40, 10)
    cm.feed(b"?hello\r")
    assert shown(cm)[cm.cy - cm.top] == "hello again"
    cm.feed(b"n")
    assert shown(cm)[cm.cy - cm.top] == "Hello there"
    cm.feed(b"?Hello\r")  # an uppercase letter: exact case
    cm.feed(b"n")
    assert shown(cm)[cm.cy - cm.top] == "Hello there"


def test_search_finds_text_cut_by_a_soft_wrap() -> None:
    term = Terminal(10, 5, history=100)
    term.feed(b"0123456needle here\r\n" + b"x\r\n" * 6)
    cm = CopyMode(term, 10, 5)
    cm.feed(b"?needle\r")
    assert (cm.cx, cm.found) == (7, (cm.cy, 7, 10))  # highlighted to the row's end
    assert shown(cm)[cm.cy - cm.top] == "0123456nee"
    cm.feed(b"?dle\r")  # on the next row: found there, not twice
    assert (cm.cx, shown(cm)[cm.cy - cm.top]) == (0, "dle here")


def test_search_columns_after_wide_characters() -> None:
    term = Terminal(40, 5, history=100)
    term.feed("日本 needle\r\n".encode() + b"x\r\n" * 3)
    cm = CopyMode(term, 40, 5)
    cm.feed(b"?needle\r")
    assert cm.cx == 5  # two wide glyphs (4 columns) and a space
    assert cm.found == (cm.cy, 5, 11)


# ---------------------------------------------------------------- selection and copy


def test_copy_with_clipboard_gives_osc52_and_leaves() -> None:
    cm = CopyMode(numbered(300), 40, 10, clipboard=True)
    cm.feed(b"?line 120\r")
    result = cm.feed(b" jj$\r")
    assert result.done
    assert result.copied == "line 120\nline 121\nline 122"
    assert result.clipboard == osc52(result.copied)
    payload = result.clipboard[len(b"\x1b]52;c;") : -1]
    assert base64.b64decode(payload).decode() == result.copied


def test_copy_without_clipboard_stays_and_says_so() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    assert "clipboard off" in cm.view().indicator
    cm.feed(b"?line 7\r")
    result = cm.feed(b" l\r")
    assert not result.done
    assert result.clipboard == b""
    assert result.copied == "li"
    assert cm.anchor is None
    assert cm.view().message == CLIPBOARD_OFF


def test_selection_is_highlighted_and_escape_clears_it() -> None:
    cm = CopyMode(numbered(300), 40, 10, clipboard=True)
    cm.feed(b"k0 ll")
    y = cm.cy - cm.top
    assert cm.view().selected[y] == (0, 3)
    assert "\x1b[0;30;43m" in cm.paint()
    cm.feed(b"\x1b")
    assert cm.view().selected[y] is None
    assert cm.feed(b"\r") == Result()  # Enter without a selection: nothing


def test_selection_backwards_and_soft_wraps_join() -> None:
    term = Terminal(10, 5, history=100)
    term.feed(b"abcdefghijKLMNO\r\nnext\r\n$ ")
    cm = CopyMode(term, 10, 5, clipboard=True)
    cm.feed(b"?next\r$ ")  # anchor at the end of "next"
    cm.feed(b"?abc\r")  # the cursor back to "abc": the selection runs backwards
    result = cm.feed(b"\r")
    assert result.copied == "abcdefghijKLMNO\nnext"


def test_selection_keeps_wide_characters_whole() -> None:
    term = Terminal(20, 3, history=10)
    term.feed("a日本b\r\n".encode())
    cm = CopyMode(term, 20, 3, clipboard=True)
    cm.feed(b"gg0 $")
    assert cm.feed(b"y").copied == "a日本b"


def test_osc52_is_capped() -> None:
    big = "é" * 100_000
    data = osc52(big)
    decoded = base64.b64decode(data[7:-1]).decode()
    assert set(decoded) == {"é"} and len(decoded.encode()) <= 74_994


# ---------------------------------------------------------------- leaving, mouse


def test_q_and_ctrl_c_leave() -> None:
    assert CopyMode(numbered(30), 40, 10).feed(b"q").done
    assert CopyMode(numbered(30), 40, 10).feed(b"\x03").done
    cm = CopyMode(numbered(30), 40, 10)
    assert not cm.feed(b"/q").done  # typed into the prompt
    assert cm.feed(b"\x1bq").done


def test_word_motions_cross_rows() -> None:
    term = Terminal(20, 4, history=10)
    term.feed(b"foo.bar  baz\r\nqux_1 end\r\n$ ")
    cm = CopyMode(term, 20, 4)
    cm.feed(b"gg0")
    spots = []
    for _ in range(6):
        cm.feed(b"w")
        spots.append((cm.cy - cm.top, cm.cx))
    assert spots == [(0, 3), (0, 4), (0, 9), (1, 0), (1, 6), (2, 0)]
    cm.feed(b"b")
    assert (cm.cy - cm.top, cm.cx) == (1, 6)
    cm.feed(b"bb")
    assert (cm.cy - cm.top, cm.cx) == (0, 9)
    cm.feed(b"e")
    assert (cm.cy - cm.top, cm.cx) == (0, 11)
    cm.feed(b"e")
    assert (cm.cy - cm.top, cm.cx) == (1, 4)


def test_a_paste_is_not_keys_but_may_fill_the_search() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    row = cm.cy
    assert not cm.feed(b"\x1b[200~gq\x1b[201~").done  # neither g nor q acted on
    assert cm.cy == row
    cm.feed(b"?\x1b[200~line 12\x1b[201~")
    assert cm.view().message == "Search Up: line 12"
    cm.feed(b"3\r")
    assert shown(cm)[cm.cy - cm.top] == "line 123"


def test_wheel_reports_scroll_and_clicks_are_ignored() -> None:
    cm = CopyMode(numbered(300), 40, 10)
    cm.feed(b"\x1b[<64;5;5M")  # SGR wheel up
    assert cm.position[0] == WHEEL_LINES
    cm.feed(b"\x1b[M`%%")  # X10 wheel up
    assert cm.position[0] == 2 * WHEEL_LINES
    cm.feed(b"\x1b[<65;5;5M")
    assert cm.position[0] == WHEEL_LINES
    before = (cm.top, cm.cy, cm.cx)
    assert not cm.feed(b"\x1b[<0;5;5M\x1b[<0;5;5m").done
    assert (cm.top, cm.cy, cm.cx) == before


def test_exit_at_bottom_leaves_when_the_wheel_comes_back_down() -> None:
    cm = CopyMode(numbered(300), 40, 10, exit_at_bottom=True)
    assert not cm.wheel(up=True).done
    assert not cm.feed(b"\x1b[<64;1;1M").done
    assert not cm.feed(b"\x1b[<65;1;1M").done
    assert cm.feed(b"\x1b[<65;1;1M").done


# ---------------------------------------------------------------- painting


def test_paint_draws_the_region_with_the_indicator() -> None:
    cm = CopyMode(numbered(300), 20, 4, clipboard=True)
    cm.feed(PAGE_UP)
    painted = cm.paint(left=5, top=2)
    assert "\x1b[3;6H" in painted and "\x1b[6;6H" in painted  # rows 3..6 at column 6
    assert "\x1b[7;" not in painted
    text = visible(painted)
    assert "[4/" in text
    assert "line 2" in text
    assert "\x1b[2K" not in painted and "\x1b[K" not in painted  # nothing outside the region


def test_paint_leaves_the_message_to_the_caller_when_asked() -> None:
    cm = CopyMode(numbered(300), 20, 4)
    cm.feed(b"/needle")
    assert "Search Down: needle" in visible(cm.paint())
    painted = cm.paint(left=2, top=1, message=False)
    assert "Search Down" not in visible(painted)
    assert "line 299" in visible(painted)
    assert painted.endswith(
        f"\x1b[{1 + cm.cy - cm.top + 1};{2 + cm.cx + 1}H\x1b[?7h\x1b[?25h\x1b[?2026l"
    )


def test_paint_cuts_a_wide_glyph_at_the_edge() -> None:
    term = Terminal(10, 3, history=10)
    term.feed("\r\nabc日本".encode())  # on the second row: the first has the indicator
    cm = CopyMode(term, 4, 3, clipboard=True)
    row = cm.paint().split("\x1b[3;1H")[0].split("\x1b[2;1H")[1]
    assert visible(row) == "abc "


# ---------------------------------------------------------------- reflow


def wrapped_text(count: int = 60) -> Terminal:
    """Lines of 50 characters in a 40-column terminal (each wraps onto two rows)."""
    term = Terminal(40, 10, history=1000)
    term.feed(b"".join(b"L%02d-" % i + b"x" * 45 + b"|\r\n" for i in range(count)) + b"$ ")
    return term


def test_a_reflow_keeps_the_view_the_cursor_and_the_selection_on_their_text() -> None:
    term = wrapped_text()
    cm = CopyMode(term, 40, 10)
    cm.feed(b"?L20-\r")  # the cursor on the start of line 20, the view on it
    assert shown(cm)[cm.cy - cm.top].startswith("L20-")
    cm.feed(b" ")  # a selection from here ...
    cm.feed(b"jj")  # ... down a line (two rows) to the start of L21
    top_label = shown_row(cm, _line_start(cm, cm.top))[:4]  # the line the view starts in
    before = remember(cm)
    term.resize(60, 10)  # wider: every line fits a row; the rows are renumbered
    reanchor(cm, before)
    rows = shown(cm)
    assert rows[0].startswith(top_label) and rows[0].endswith("|")
    assert rows[cm.cy - cm.top].startswith("L21-") and cm.cx == 0
    assert cm.anchor is not None
    assert shown_row(cm, cm.anchor[0]).startswith("L20-") and cm.anchor[1] == 0
    # And back: narrower again, each line on two rows, still the same text.
    before = remember(cm)
    term.resize(40, 10)
    reanchor(cm, before)
    assert shown(cm)[cm.cy - cm.top].startswith("L21-")
    assert shown_row(cm, cm.anchor[0]).startswith("L20-")


def test_a_reflow_keeps_a_column_inside_a_wrapped_line() -> None:
    term = wrapped_text()
    cm = CopyMode(term, 40, 10)
    cm.feed(b"?L30-\rj")  # the second row of line 30: cells 40.. of it
    cm.feed(b"llll")  # cell 44
    before = remember(cm)
    term.resize(60, 10)
    reanchor(cm, before)
    assert shown_row(cm, cm.cy).startswith("L30-") and cm.cx == 44


def shown_row(cm: CopyMode, row: int) -> str:
    line = cm._line(row)
    cols = cm.term.cols
    default = cm.term.screen.default_char
    return "" if line is None else "".join(line.get(x, default).data for x in range(cols))

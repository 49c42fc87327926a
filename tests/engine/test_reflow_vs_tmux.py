"""Reflow on resize held to tmux: the same bytes and resizes, the same screen.

Each case is a list of steps, bytes shown and ``(cols, rows)`` resizes, played
in a private tmux server (``TmuxScreen.play``) and into an engine; the history,
the viewport, the cursor and the alternate-screen state must agree.

Allow-listed departures (``ALLOWED``, ``xfail(strict=True)``): trailing blanks
a program wrote itself at the end of a hard line are dropped when the line is
cut again (tmux counts every cell written, so ``abc`` and three spaces narrowed
to four columns take two rows there; erasing leaves the same blanks and tmux
drops those too); entering the alternate screen clears tmux's wrap flag of the
last history row, so tmux never joins a line across the history's edge after
it (we do, as before entering).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pytest

from phux.engine import Terminal

from .tmux import TMUX, TmuxScreen

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

COLS, ROWS = 40, 8

Steps = list[bytes | tuple[int, int]]


@pytest.fixture(scope="module")
def tmux() -> Iterator[TmuxScreen]:
    with TmuxScreen(COLS, ROWS) as screen:
        yield screen


def _nfc(lines: list[str]) -> list[str]:
    return [unicodedata.normalize("NFC", line) for line in lines]


def _play(steps: Steps) -> Terminal:
    t = Terminal(COLS, ROWS, history=1000)
    for step in steps:
        if isinstance(step, tuple):
            t.resize(*step)
        else:
            t.feed(step)
    return t


def _compare(tmux: TmuxScreen, steps: Steps) -> Terminal:
    state = tmux.play(steps)
    t = _play(steps)
    mine = t.project(scrollback=0)
    assert t.alternate == state.alternate
    assert _nfc([line.rstrip(" ") for line in mine.scrollback]) == _nfc(
        [line.rstrip(" ") for line in state.history]
    )
    assert _nfc([line.rstrip(" ") for line in mine.lines]) == _nfc(
        [line.rstrip(" ") for line in state.lines]
    )
    assert mine.cursor is not None
    assert (mine.cursor.x, mine.cursor.y) == (min(state.cursor_x, t.cols - 1), state.cursor_y)
    return t


_LONG = b"The quick brown fox jumps over the lazy dog; " * 2  # 90 columns: three rows at 40
_WORDS = b"".join(b"line %d %s\r\n" % (i, b"x" * (i * 7 % 50)) for i in range(20))
_WIDE = "漢字かなカナ한국어中文字符".encode()  # 13 wide characters, 26 columns
_PROMPT = b"user@host:~/src/phux$ " + b"echo hello world and more words"

CASES: dict[str, Steps] = {
    "narrow": [_LONG + b"\r\n" + b"short\r\n", (25, ROWS)],
    "widen": [_LONG + b"\r\nshort\r\n", (70, ROWS)],
    "widen_past_the_line": [_LONG + b"\r\nshort\r\n", (120, ROWS)],
    "narrow_then_widen_back": [_LONG + b"\r\nshort\r\n" + _LONG, (17, ROWS), (COLS, ROWS)],
    "widen_then_narrow_back": [_LONG + b"\r\nshort\r\n" + _LONG, (97, ROWS), (COLS, ROWS)],
    "history_narrow": [_WORDS, (23, ROWS)],
    "history_widen": [_WORDS, (61, ROWS)],
    "history_narrow_and_back": [_WORDS, (23, ROWS), (13, ROWS), (COLS, ROWS)],
    # Hard line ends are never joined, even between lines that fill the width.
    "full_hard_lines": [b"a" * COLS + b"\r\n" + b"b" * COLS + b"\r\n", (80, ROWS)],
    "cursor_mid_wrapped_line": [_LONG + b"\x1b[50D", (30, ROWS)],
    "cursor_mid_wrapped_line_widen": [_LONG + b"\x1b[50D", (55, ROWS)],
    "cursor_at_pending_wrap": [b"z" * COLS, (20, ROWS), b"Q"],
    "cursor_at_pending_wrap_widen": [b"z" * (2 * COLS), (60, ROWS)],
    "wide_at_the_cut": [_WIDE + b"\r\n", (15, ROWS)],
    "wide_at_the_cut_odd": [b"x" + _WIDE + _WIDE + b"\r\n", (9, ROWS), (COLS, ROWS)],
    "wide_wrapped_then_widen": [b"y" * 39 + _WIDE + b"\r\nq", (60, ROWS)],
    "shell_prompt": [_PROMPT, (30, ROWS)],
    "shell_prompt_widen": [b"out\r\n" + _PROMPT, (30, ROWS), (75, ROWS)],
    "bare_prompt": [b"done\r\n$ ", (20, ROWS), (50, ROWS)],
    # The blank after the prompt is carried (the cursor is past it): a row of its own.
    "prompt_space_at_the_cut": [b"y" * 59 + b"$ ", (20, ROWS)],
    # Erased rows (EL, as grep and gcc print after colours) carry no trailing blanks.
    "erased_rows": [b"\x1b[31mred\x1b[0m\x1b[K\r\nplain\x1b[K\r\n" * 3, (10, ROWS)],
    "styled_wrapped": [b"\x1b[1;32m" + _LONG + b"\x1b[0m\r\n", (33, ROWS)],
    "below_blank_rows": [b"top\r\n" + _LONG + b"\x1b[3;1H", (20, ROWS)],
    # The cursor's row goes into the history: tmux homes the cursor.
    "cursor_row_pushed_into_history": [_LONG * 3 + b"\x1b[1;5H", (15, ROWS)],
    "height_and_width": [_WORDS, (23, ROWS - 3)],
    # A taller screen takes history rows back (its top), the cursor moving with them.
    "taller": [_WORDS, (COLS, ROWS + 4)],
    "taller_and_narrower": [_WORDS, (27, ROWS + 5)],
    "shorter_then_taller": [_WORDS + b"$ ", (COLS, 4), (COLS, ROWS + 2)],
    "taller_on_the_alternate_screen": [
        _WORDS + b"$ \x1b[?1049h" + b"alt",
        (COLS, ROWS + 3),
        b"\x1b[?1049l!",
    ],
    # DECSC on the main screen: the saved position is a place on the screen, not in
    # the text (tmux does not move it).
    "decsc_then_reflow": [_LONG + b"\r\nabc\x1b[2;5H\x1b7\x1b[6;1H", (25, ROWS), b"\x1b8X"],
    "alternate_untouched": [
        _LONG + b"\r\nmain\x1b[?1049h\x1b[H" + b"alt " * 9,
        (25, ROWS),
    ],
    "alternate_then_main_reflowed": [
        _LONG + b"\r\nmain\x1b[?1049h\x1b[H" + b"alt " * 9,
        (25, ROWS),
        b"\x1b[?1049l",
    ],
    "alternate_1049_with_history": [
        _WORDS + b"tail\r\n\x1b[?1049h" + b"alt",
        (55, ROWS),
        b"\x1b[?1049l!",
    ],
    "alternate_resized_twice": [
        _LONG + b"\r\n$ \x1b[?1049h" + b"alt",
        (20, ROWS),
        (70, ROWS),
        b"\x1b[?1049l!",
    ],
}


@pytest.mark.parametrize("steps", [pytest.param(v, id=k) for k, v in CASES.items()])
def test_reflow_matches_tmux(tmux: TmuxScreen, steps: Steps) -> None:
    _compare(tmux, steps)


ALLOWED: dict[str, tuple[Steps, str]] = {
    "written_trailing_blanks": (
        [b"abc   \r\n", (4, ROWS)],
        "tmux carries the blanks a program wrote at the end of a hard line",
    ),
    "alternate_47_breaks_a_wrap": (
        [_WORDS + b"\x1b[?47h" + b"alt", (55, ROWS), b"\x1b[?47l!"],
        "entering the alternate screen clears tmux's wrap flag of the last history row "
        "(the line across the history's edge is not joined), and leaving ?47 reflows "
        "the alternate screen's cursor with the main screen",
    ),
}


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param(steps, id=name, marks=pytest.mark.xfail(strict=True, reason=why))
        for name, (steps, why) in ALLOWED.items()
    ],
)
def test_allow_listed_departures(tmux: TmuxScreen, steps: Steps) -> None:
    _compare(tmux, steps)

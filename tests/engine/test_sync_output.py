"""Synchronized output (DEC mode 2026), DECRQM and the cursor's shape (DECSCUSR).

What the engine must do is what the terminals that implement 2026 document
(kitty, foot, WezTerm; the "terminal-wg" synchronized-updates proposal): while
``CSI ? 2026 h`` is in force the display keeps the screen from before it, the
frame shows whole at ``CSI ? 2026 l``, and after a bound (150 ms) the live
screen shows anyway. DECRQM (``CSI ? 2026 $ p``) answers ``CSI ? 2026 ; Pm $ y``
with 1 (set) or 2 (reset), as xterm answers DECRQM. DECSCUSR's ``Ps`` is
xterm's: 1/2 block, 3/4 underline, 5/6 bar (odd: blinking), 0 the default.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint

BSU = b"\x1b[?2026h"
ESU = b"\x1b[?2026l"


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def term(data: bytes = b"", cols: int = 20, rows: int = 5) -> tuple[Terminal, Clock]:
    t = Terminal(cols, rows, history=100)
    clock = Clock()
    t.screen.frame_clock = clock
    t.feed(data)
    return t, clock


def view(t: Terminal, **kw: Any) -> dict[str, Any]:
    data = dict(t.project_data(**kw))
    data.pop("frame_pending", None)
    return data


def test_a_frame_shows_the_screen_from_before_it_until_it_ends() -> None:
    t, _ = term(b"old top\r\nold bottom\x1b[?25h")
    before = view(t, cells=True)
    t.feed(BSU + b"\x1b[H\x1b[2Jnew\x1b[31m red\x1b[3;4H")
    assert view(t, cells=True) == before
    assert t.project_data()["frame_pending"] is True
    assert t.project().frame_pending is True
    assert t.logical_lines()[:2] == ["old top", "old bottom"]
    t.feed(ESU)
    assert t.project().lines[0] == "new red"
    assert "frame_pending" not in t.project_data()
    assert t.project().frame_pending is False


def test_the_live_screen_shows_once_a_frame_is_older_than_150_ms() -> None:
    t, clock = term(b"before")
    t.feed(BSU + b"\rduring")
    clock.now += 0.149
    assert t.project().lines[0] == "before"
    clock.now += 0.002
    assert t.project().lines[0] == "during"
    assert t.project().frame_pending is True  # (still open: it says so)


def test_history_a_frame_scrolls_in_is_not_shown_before_the_frame_ends() -> None:
    t, _ = term(b"".join(b"line %d\r\n" % i for i in range(8)))
    before = view(t, scrollback=0)
    t.feed(BSU + b"".join(b"more %d\r\n" % i for i in range(3)))
    assert view(t, scrollback=0) == before
    assert view(t, scrollback=2) == view(
        term(b"".join(b"line %d\r\n" % i for i in range(8)))[0], scrollback=2
    )
    t.feed(ESU)
    assert "more 2" in t.project(scrollback=0).lines


def test_a_resize_or_a_reset_ends_the_frozen_view() -> None:
    t, _ = term(b"a")
    t.feed(BSU + b"b")
    t.resize(30, 6)
    assert t.project().lines[0] == "ab"
    t.feed(BSU + b"c\x1bc")  # RIS
    assert not t.frame_pending


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(
        st.sampled_from([b"ab", b"\r\n", b"\x1b[31m", b"\x1b[2J", b"x" * 25, b"\x1b[?1049h"]),
        max_size=6,
    ),
    body=st.lists(
        st.sampled_from(
            [
                b"cd",
                b"\r\n",
                b"\x1b[H",
                b"\x1b[1m",
                b"\x1b[K",
                b"y" * 30,
                b"\x1b[?1049l",
                b"\x1b]0;t\x07",
            ]
        ),
        max_size=8,
    ),
    cuts=st.lists(st.integers(0, 400), max_size=4),
)
def test_a_snapshot_inside_a_frame_is_the_screen_before_it_or_after_it(
    before: list[bytes], body: list[bytes], cuts: list[int]
) -> None:
    head = b"".join(before)
    frame = BSU + b"".join(body) + ESU
    t, _ = term(head)
    want_before = view(t, cells=True, scrollback=0)
    after, _ = term(head + frame)
    want_after = view(after, cells=True, scrollback=0)
    last = 0
    for cut in sorted({min(c, len(frame)) for c in cuts}):
        t.feed(frame[last:cut])
        last = cut
        assert view(t, cells=True, scrollback=0) in (want_before, want_after)
    t.feed(frame[last:])
    assert view(t, cells=True, scrollback=0) == want_after


def test_decrqm_reports_2026_as_supported_reset_then_set() -> None:
    t, _ = term(b"\x1b[?2026$p")
    assert t.take_replies() == b"\x1b[?2026;2$y"
    t.feed(BSU + b"\x1b[?2026$p")
    assert t.take_replies() == b"\x1b[?2026;1$y"
    t.feed(b"\x1b[?12345$p\x1b[4$p\x1b[4h\x1b[4$p\x1b[?25$p")
    assert t.take_replies() == b"\x1b[?12345;0$y\x1b[4;2$y\x1b[4;1$y\x1b[?25;1$y"


def test_an_open_frame_travels_in_a_checkpoint() -> None:
    t, _ = term(b"before")
    t.feed(BSU + b"\rduring")
    fresh, _ = term()
    fresh.feed(write_checkpoint(t))
    assert fresh.frame_pending
    fresh.feed(b" end" + ESU)
    assert fresh.project().lines[0] == "during end"


def test_decscusr_sets_the_cursor_shape_and_blink() -> None:
    t, _ = term(b"\x1b[?25h")
    assert t.project_data()["cursor"] == {"x": 0, "y": 0, "visible": True}
    for ps, shape, blink in [
        (1, "block", True),
        (2, "block", False),
        (3, "underline", True),
        (4, "underline", False),
        (5, "bar", True),
        (6, "bar", False),
    ]:
        t.feed(b"\x1b[%d q" % ps)
        cursor = t.project().cursor
        assert cursor is not None
        assert (cursor.shape, cursor.blink) == (shape, blink)
        t.feed(b"\x1bP$q q\x1b\\")
        assert t.take_replies() == b"\x1bP1$r%d q\x1b\\" % ps
    t.feed(b"\x1b[7 q")  # out of range: ignored, as xterm does
    assert t.project_data()["cursor"]["shape"] == "bar"
    t.feed(b"\x1b[0 q")
    assert t.project_data()["cursor"] == {"x": 0, "y": 0, "visible": True}


def test_the_cursor_shape_survives_a_checkpoint() -> None:
    t, _ = term(b"\x1b[5 q")
    fresh, _ = term()
    fresh.feed(write_checkpoint(t))
    assert fresh.screen.cursor_style == 5

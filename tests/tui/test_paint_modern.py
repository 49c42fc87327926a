"""attach's paint of a modern screen (issue 29): what a full paint and a view paint
write, read back by an engine as the person's terminal would read them."""

from __future__ import annotations

from phux.engine import Terminal
from phux.tui.paint import Painter

BSU, ESU = b"\x1b[?2026h", b"\x1b[?2026l"
SCREEN = (
    b"\x1b[4:3;58:5:196mcurly\x1b[0m \x1b]8;id=x;https://example.com/\x1b\\link"
    b"\x1b]8;;\x1b\\ \x1b]8;;javascript:alert(1)\x1b\\js\x1b]8;;\x1b\\ after\r\n"
    b"\x1b]8;;https://b.example/\x1b\\ends a row\x1b]8;;\x1b\\\r\nplain\x1b[6 q"
)


def _person(paint: str, cols: int = 30, rows: int = 4) -> Terminal:
    person = Terminal(cols, rows, history=0)
    person.feed(paint.encode())
    return person


def test_a_full_paint_keeps_underline_styles_links_and_the_cursor_shape() -> None:
    pane = Terminal(30, 4, history=0)
    pane.feed(SCREEN)
    seen = _person(Painter().full(pane, user_alt=False)).project_data(cells=True)
    assert seen["lines"][0] == "curly link js after"
    assert seen["styles"][0]["style"] == {
        "underline": True,
        "underline_style": "curly",
        "underline_color": {"kind": "palette", "index": 196},
    }
    # The link ends where it ended; a javascript: one is not passed on.
    links = [(link["row"], link["col"], link["width"], link["uri"]) for link in seen["links"]]
    assert links == [(0, 6, 4, "https://example.com/"), (1, 0, 10, "https://b.example/")]
    assert seen["cursor"]["shape"] == "bar" and seen["cursor"]["blink"] is False


def test_a_full_paint_inside_a_frame_leaves_the_frame_to_the_program() -> None:
    """The paint is the live state the program's next bytes build on: the person's
    terminal holds it in a frame, which the program's own end of frame closes."""
    pane = Terminal(30, 4, history=0)
    pane.feed(b"before" + BSU + b"\r\x1b[Kduring")
    paint = Painter().full(pane, user_alt=False)
    assert not paint.endswith(ESU.decode())
    person = _person(paint)
    assert person.frame_pending
    person.feed(b" end" + ESU)  # the rest of the program's frame, passed through
    assert person.project().lines[0] == "during end"
    # With no frame open, a paint ends its own.
    done = Terminal(30, 4, history=0)
    done.feed(b"x")
    assert Painter().full(done, user_alt=False).endswith(ESU.decode())


def test_a_view_paint_inside_a_frame_shows_the_screen_before_it() -> None:
    pane = Terminal(30, 4, history=0)
    pane.feed(b"before" + BSU + b"\r\x1b[Kduring")
    assert _person(Painter().view(pane, 20, 4), 20, 4).project().lines[0] == "before"

"""Underline styles and colours (SGR 4:0-4:5, 21, 24, 58, 59).

As kitty's "styled underlines" extension specifies them (and xterm, VTE,
WezTerm and tmux 3.x parse them): ``4:0`` none, ``4:1`` single, ``4:2``
double, ``4:3`` curly, ``4:4`` dotted, ``4:5`` dashed; ``21`` double (ECMA-48);
``24`` none; ``58;5;n``, ``58;2;r;g;b`` and the colon forms ``58:5:n``,
``58:2::r:g:b``, ``58:2:r:g:b`` set the underline's colour; ``59`` resets it.
"""

from __future__ import annotations

from typing import Any

import pytest

from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint


def style(data: bytes) -> dict[str, Any]:
    t = Terminal(20, 2, history=0)
    t.feed(data + b"X")
    runs = t.project_data(cells=True)["styles"]
    assert len(runs) == 1
    result: dict[str, Any] = runs[0]["style"]
    return result


@pytest.mark.parametrize(
    ("sgr", "want"),
    [
        (b"4", {"underline": True}),
        (b"4:1", {"underline": True}),
        (b"4:2", {"underline": True, "underline_style": "double"}),
        (b"21", {"underline": True, "underline_style": "double"}),
        (b"4:3", {"underline": True, "underline_style": "curly"}),
        (b"4:4", {"underline": True, "underline_style": "dotted"}),
        (b"4:5", {"underline": True, "underline_style": "dashed"}),
        (b"4:3;4", {"underline": True}),
        (
            b"1;4:3;31",
            {
                "bold": True,
                "underline": True,
                "underline_style": "curly",
                "fg": {"kind": "palette", "index": 1},
            },
        ),
        (
            b"4:3;58;5;196",
            {
                "underline": True,
                "underline_style": "curly",
                "underline_color": {"kind": "palette", "index": 196},
            },
        ),
        (b"4;58:5:9", {"underline": True, "underline_color": {"kind": "palette", "index": 9}}),
        (
            b"4;58;2;255;0;128",
            {"underline": True, "underline_color": {"kind": "rgb", "r": 255, "g": 0, "b": 128}},
        ),
        (
            b"4;58:2::1:2:3",
            {"underline": True, "underline_color": {"kind": "rgb", "r": 1, "g": 2, "b": 3}},
        ),
        (
            b"4;58:2:1:2:3",
            {"underline": True, "underline_color": {"kind": "rgb", "r": 1, "g": 2, "b": 3}},
        ),
        (b"4;58;5;9;59", {"underline": True}),
        (
            b"4:3;58;5;9m\x1b[1;58;5;9;38;5;2",
            {
                "bold": True,
                "underline": True,
                "underline_style": "curly",
                "underline_color": {"kind": "palette", "index": 9},
                "fg": {"kind": "palette", "index": 2},
            },
        ),
    ],
)
def test_underline_styles_and_colours(sgr: bytes, want: dict[str, Any]) -> None:
    assert style(b"\x1b[" + sgr + b"m") == want


@pytest.mark.parametrize("off", [b"24", b"4:0", b"0", b""])
def test_underline_off(off: bytes) -> None:
    t = Terminal(20, 2, history=0)
    t.feed(b"\x1b[4:3;58;5;9m\x1b[" + off + b"mX")
    assert t.project_data(cells=True)["styles"] == []


def test_a_colour_without_an_underline_shows_nothing_and_the_next_underline_has_it() -> None:
    t = Terminal(20, 2, history=0)
    t.feed(b"\x1b[58;5;9mA\x1b[4mB")
    runs = t.project_data(cells=True)["styles"]
    assert [(r["text"], r["style"]) for r in runs] == [
        ("B", {"underline": True, "underline_color": {"kind": "palette", "index": 9}})
    ]


def test_underline_styles_survive_a_checkpoint() -> None:
    t = Terminal(30, 3, history=10)
    t.feed(b"\x1b[4:3;58;2;1;2;3mcurly\x1b[0m \x1b[21mdouble\x1b[24;4:4;58;5;7m dots\x1b[4:5")
    fresh = Terminal(30, 3, history=10)
    fresh.feed(write_checkpoint(t))
    assert fresh.project_data(cells=True) == t.project_data(cells=True)
    assert fresh.screen.cursor.attrs == t.screen.cursor.attrs  # (the pen: dashed, colour 7)


def test_an_older_checkpoint_still_loads() -> None:
    # What a writer before underline styles wrote: plain SGR 4, no 58.
    old = b"\x1b[H\x1b[2J\x1b[0;4mold\x1b[0m"
    t = Terminal(20, 2, history=0)
    t.feed(old)
    assert t.project_data(cells=True)["styles"] == [
        {"row": 0, "col": 0, "width": 3, "text": "old", "style": {"underline": True}}
    ]


def test_decrqss_reports_the_underline_style_and_colour() -> None:
    t = Terminal(20, 2, history=0)
    t.feed(b"\x1b[4:3;58;5;9m\x1bP$qm\x1b\\")
    assert t.take_replies() == b"\x1bP1$r0;4:3;58;5;9m\x1b\\"

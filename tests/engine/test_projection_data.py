"""The projection's plain data is the ScreenState Struct, key for key and byte for byte.

``phux snapshot`` prints ``Terminal.project_data`` with the stdlib's JSON
encoder so that it need not import msgspec; the Struct stays the one home of
the shape. These tests hold the data to the Struct: the Struct built from it
encodes to exactly what the stdlib writes for the data.
"""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.cli.render import screen_json
from phux.engine import Terminal
from phux.engine.screen_state import (
    CellInfo,
    CellStyle,
    Cursor,
    PaletteColor,
    RgbColor,
    ScreenState,
)

_TEXT = st.text(alphabet=st.sampled_from('ab Z9é日本"\\\u2028'), min_size=1, max_size=12)
_SGR = (
    st.sampled_from(
        ["0", "1", "2", "3", "4", "5", "7", "8", "9", "53", "31", "42", "95", "104", "39", "49"]
    )
    | st.builds(
        lambda k, r, g, b: f"{k};2;{r};{g};{b}",
        st.sampled_from([38, 48]),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
    )
    | st.builds(lambda k, n: f"{k};5;{n}", st.sampled_from([38, 48]), st.integers(0, 255))
)
_TOKEN = st.one_of(
    _TEXT,
    st.sampled_from(["\r\n", "\n", "\r", "\x08", "\t", "\x07", "\x1b[?25l", "\x1b[?25h"]),
    _SGR.map(lambda p: f"\x1b[{p}m"),
    st.builds(lambda y, x: f"\x1b[{y};{x}H", st.integers(1, 8), st.integers(1, 14)),
    st.sampled_from(["\x1b]133;A\x07", "\x1b]133;B\x07", "\x1b]133;C\x07", "\x1b]133;D;0\x07"]),
    _TEXT.map(lambda t: f"\x1b]2;{t}\x07"),
    st.sampled_from(["\x1b[2J", "\x1b[K", "\x1b[3L", "\x1b[2M"]),
)


def _stdlib(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_TOKEN, max_size=50),
    st.sampled_from([None, 0, 1, 5]),
    st.booleans(),
    st.integers(0, 9),
)
def test_data_encodes_as_the_struct(
    tokens: list[str], scrollback: int | None, cells: bool, pane: int
) -> None:
    t = Terminal(cols=14, rows=8, history=20)
    t.feed("".join(tokens).encode())
    data = t.project_data(pane=pane, scrollback=scrollback, cells=cells)
    struct = t.project(pane=pane, scrollback=scrollback, cells=cells)
    # Converting would drop a key the Struct lacks and reorder keys; neither may happen.
    assert _stdlib(data) == msgspec.json.encode(struct)
    assert msgspec.to_builtins(struct) == data
    assert screen_json(data).encode() == msgspec.json.encode(struct)


def test_a_known_screen() -> None:
    t = Terminal(cols=10, rows=3, history=5)
    t.feed(
        b"\x1b]0;title\x07\x1b]133;A\x07$ \x1b]133;B\x07\x1b[1;38;2;1;2;3mhi\x1b[0m\r\n"
        b"\x1b]133;C\x07next\x1b[95mX"
    )
    state = t.project(pane=4, cells=True)
    style = CellStyle(bold=True, fg=RgbColor(r=1, g=2, b=3))
    assert state == ScreenState(
        schema_version=3,
        pane=4,
        cols=10,
        rows=3,
        cursor=Cursor(x=5, y=1, visible=True),
        lines=["$ hi", "nextX", ""],
        scrollback=[],
        cells=[
            CellInfo(col=0, row=0, semantic="prompt", style=CellStyle()),
            CellInfo(col=1, row=0, semantic="prompt", style=CellStyle()),
            CellInfo(col=2, row=0, semantic="input", style=style),
            CellInfo(col=3, row=0, semantic="input", style=style),
            CellInfo(col=4, row=1, style=CellStyle(fg=PaletteColor(index=13))),
        ],
        title="title",
        wrapped=[],
    )
    # Key order is the Struct's (test_data_encodes_as_the_struct); cells only when asked.
    assert "cells" not in t.project_data(pane=4)


def test_data_leaves_msgspec_unimported() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from phux.engine import Terminal; t = Terminal();"
        "t.feed(b'\\x1b[31mx'); t.project_data(cells=True); t.take_events();"
        "print('msgspec' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "False"

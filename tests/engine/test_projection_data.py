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
    SpanStyle,
    StyleRun,
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
    st.sampled_from([None, 3, 4]),
)
def test_data_encodes_as_the_struct(
    tokens: list[str], scrollback: int | None, cells: bool, pane: int, version: int | None
) -> None:
    t = Terminal(cols=14, rows=8, history=20)
    t.feed("".join(tokens).encode())
    data = t.project_data(pane=pane, scrollback=scrollback, cells=cells, version=version)
    struct = t.project(pane=pane, scrollback=scrollback, cells=cells, version=version)
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
    state = t.project(pane=4, cells=True, version=3)
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
        alternate=False,
    )
    # Key order is the Struct's (test_data_encodes_as_the_struct); cells only when asked.
    assert "cells" not in t.project_data(pane=4)
    current = t.project(pane=4, cells=True)
    assert current.schema_version == 4 and current.cells is None
    bold_rgb = SpanStyle(bold=True, fg=RgbColor(r=1, g=2, b=3))
    assert current.styles == [
        StyleRun(row=0, col=0, width=2, text="$ ", semantic="prompt", style=SpanStyle()),
        StyleRun(row=0, col=2, width=2, text="hi", semantic="input", style=bold_rgb),
        StyleRun(row=1, col=4, width=1, text="X", style=SpanStyle(fg=PaletteColor(index=13))),
    ]


def test_a_screen_of_red_text_is_small() -> None:
    t = Terminal(cols=80, rows=24)
    t.feed(b"\x1b[31m" + b"\r\n".join([b"r" * 80] * 24))
    data = t.project_data(cells=True)
    assert len(data["styles"]) == 24
    assert len(screen_json(data)) < 10_000
    assert len(screen_json(t.project_data(cells=True, version=3))) > 300_000


DEFAULT_STYLE = msgspec.to_builtins(CellStyle())


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKEN, max_size=40))
def test_runs_cover_exactly_the_styled_cells(tokens: list[str]) -> None:
    t = Terminal(cols=14, rows=8, history=20)
    t.feed("".join(tokens).encode())
    cells = t.project_data(cells=True, version=3)["cells"]
    expanded = []
    for run in t.project_data(cells=True)["styles"]:
        full = {**DEFAULT_STYLE, **run["style"]}
        for i in range(run["width"]):
            expanded.append((run["row"], run["col"] + i, run.get("semantic"), full))
    wanted = [(c["row"], c["col"], c.get("semantic"), c["style"]) for c in cells]
    # Runs also hold the right halves of wide glyphs, which cells skip.
    assert [e for e in expanded if (e[0], e[1]) in {(w[0], w[1]) for w in wanted}] == wanted
    assert len(expanded) >= len(wanted)


def test_the_alternate_screen_has_no_history() -> None:
    t = Terminal(cols=10, rows=2, history=10)
    t.feed(b"one\r\ntwo\r\nthree\r\n\x1b[?1049h\x1b[Hless view")
    data = t.project_data(scrollback=0)
    assert data["alternate"] is True and data["scrollback"] == []
    assert data["lines"][0] == "less view"
    t.feed(b"\x1b[?1049l")
    data = t.project_data(scrollback=0)
    assert data["alternate"] is False and data["scrollback"] == ["one", "two"]


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

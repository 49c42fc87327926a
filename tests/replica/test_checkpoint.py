"""A checkpoint replayed into a fresh engine gives the state it was written from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.engine.floods import coloured_session

from phux.engine import Terminal
from phux.engine.checkpoint import Checkpointer, write_checkpoint

from .state import diff, engine_state


def _terminal(cols: int, rows: int, **kwargs: Any) -> Terminal:
    """A terminal whose synchronized-output frames never time out: a frame holds the
    screen for 150 ms of real time, and a loaded machine passed that between feeding a
    terminal and comparing it with its checkpoint's replay (the comparison flaked)."""
    term = Terminal(cols, rows, **kwargs)
    term.screen.frame_clock = lambda: 0.0
    return term


CORPUS = Path(__file__).parent.parent / "engine" / "corpus"

_FRAGMENTS = st.sampled_from(
    [
        b"abc",
        b"hello world ",
        b"x" * 13,
        "\u00e9t\u00e9 ".encode(),
        "\u4e2d\u6587".encode(),
        "\u4e2d".encode(),
        "e\u0301".encode(),
        "a\u200d".encode(),
        ("\u0301" * 12).encode(),  # past the per-cell cap
        "".join(map(chr, range(0x300, 0x30C))).encode(),
        b"\xc2\x9b\xc2\x9c\xc2\x9d",  # C1 code points: not controls
        b"\r",
        b"\n",
        b"\r\n",
        b"\x08",
        b"\t",
        b"\x0e",
        b"\x0f",
        b"\x1b(0lqk\x1b(B",
        b"\x1b)0",
        b"\x1b(U",
        b"\x1b[A",
        b"\x1b[2B",
        b"\x1b[3C",
        b"\x1b[D",
        b"\x1b[H",
        b"\x1b[3;4H",
        b"\x1b[99;99H",
        b"\x1b[5G",
        # VPA then DECOM off: a VPA under DECOM without a region leaves the cursor
        # off the screen (an engine bug reported separately).
        b"\x1b[2d\x1b[?6l",
        b"\x1b[J",
        b"\x1b[1J",
        b"\x1b[2J",
        b"\x1b[K",
        b"\x1b[1K",
        b"\x1b[2K",
        b"\x1b[2L",
        b"\x1b[M",
        b"\x1b[2@",
        b"\x1b[P",
        b"\x1b[3X",
        b"\x1b[S",
        b"\x1b[2T",
        b"\x1b[3b",
        b"\x1b[m",
        b"\x1b[1;4;7m",
        b"\x1b[2;3;5;8;9;53m",
        b"\x1b[22;24;27m",
        b"\x1b[31;42m",
        b"\x1b[93;104m",
        b"\x1b[38;5;200m",
        # Issue 29: underline styles and colours, links, cursor styles, kitty keys, 2026.
        b"\x1b[4:3;58;5;196m",
        b"\x1b[21;58:2::1:2:3m",
        b"\x1b[4:0;59m",
        b"\x1b]8;id=a;https://x.test/\x1b\\",
        b"\x1b]8;;\x07",
        b"\x1b[5 q",
        b"\x1b[>1u",
        b"\x1b[<u",
        b"\x1b[=9;2u",
        b"\x1b[?2026h",
        b"\x1b[?2026l",
        b"\x1b[48;5;3m",
        b"\x1b[38;5;9m",
        b"\x1b[38;2;10;20;30m",
        b"\x1b[48;2;1;2;3m",
        b"\x1b[39;49m",
        b"\x1b[2;4r",
        b"\x1b[r",
        b"\x1b[?6h",
        b"\x1b[?6l",
        b"\x1b[?7l",
        b"\x1b[?7h",
        b"\x1b[?25l",
        b"\x1b[?25h",
        b"\x1b[?1h",
        b"\x1b[?1l",
        b"\x1b[?1000h",
        b"\x1b[?1006h",
        b"\x1b[?2004h",
        b"\x1b[?1004h",
        b"\x1b[4h",
        b"\x1b[4l",
        b"\x1b[20h",
        b"\x1b[?1049h",
        b"\x1b[?1049l",
        b"\x1b[?47h",
        b"\x1b[?47l",
        b"\x1b[?1047h",
        b"\x1b[?1047l",
        b"\x1b7",
        b"\x1b8",
        b"\x1b[s",
        b"\x1b[u",
        b"\x1bD",
        b"\x1bM",
        b"\x1bE",
        b"\x1bH",
        b"\x1b[g",
        b"\x1b[3g",
        b"\x1b=",
        b"\x1b>",
        b"\x1bc",
        b"\x1b[!p",
        b"\x1b]0;t\x07",
        "\x1b]0;a\u009b?1hb\x07".encode(),
        b"\x1b]2;title two\x1b\\",
        b"\x1b]1;icon\x07",
        b"\x1b]7;file:///tmp/a%20b\x07",
        b"\x1b]7;relative\x07",
        b"\x1b]8;;http://x\x07",
        b"\x1b]8;;\x07",
        b"\x1b]133;A\x07",
        b"\x1b]133;B\x07",
        b"\x1b]133;C\x07",
        b"\x1b]133;D;0\x07",
        b"\x1b]133;A;k=s\x07",
        b"\x1b]133;D\x07",
        b"\x1b]133;D;2;phux_t=77\x07",
        b"\x1b]133;C;cmdline_url=ls%20-l%C3%A9;x=y\x07",
        b"\x1b]133;C;phux_t=5\x07",
        b"\x1b]133;A\x07$ \x1b]133;B\x07echo hi\r\n",
        b"\x1b]133;A;k=s\x07> \x1b]133;B\x07\xe4\xbd\xa0x",
        b"\x1b[6n",
        b"\x1b[c",
        b"\x1b#8",
    ]
)


@st.composite
def _session(draw: st.DrawFn) -> tuple[int, int, list[bytes | tuple[int, int]]]:
    cols = draw(st.integers(2, 14))
    rows = draw(st.integers(1, 6))
    steps: list[bytes | tuple[int, int]] = []
    for _ in range(draw(st.integers(1, 6))):
        steps.append(b"".join(draw(st.lists(_FRAGMENTS, max_size=40))))
        if draw(st.integers(0, 4)) == 0:
            steps.append((draw(st.integers(2, 14)), draw(st.integers(1, 6))))
    return cols, rows, steps


def _assert_replays(t: Terminal, history: int, ck: bytes | None = None) -> None:
    data = write_checkpoint(t) if ck is None else ck
    u = _terminal(t.cols, t.rows, history=history)
    u.feed(data)
    problems = diff(engine_state(t), engine_state(u))
    assert not problems, "\n".join(problems) + f"\ncheckpoint: {data!r}"
    # Checkpoints of checkpoints do not drift (compaction repeats them forever).
    v = _terminal(t.cols, t.rows, history=history)
    v.feed(write_checkpoint(u))
    problems = diff(engine_state(t), engine_state(v))
    assert not problems, "second generation:\n" + "\n".join(problems)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_session(), st.sampled_from([0, 3, 50]))
# Marks after CR on a wrapped row once landed on the wide character's right half above.
@example((3, 2, ["中文".encode(), ("\r" + "\u0301" * 12).encode()]), 0)
# A pending wrap (kept by RI) over the cell a wide character did not fit came back blank.
@example((4, 2, ["abc中文".encode(), b"\x1bM"]), 0)
def test_checkpoint_replays_to_equal_state(
    session: tuple[int, int, list[bytes | tuple[int, int]]], history: int
) -> None:
    cols, rows, steps = session
    clock = iter(range(1000, 10**9, 7))
    t = _terminal(cols, rows, history=history, clock=lambda: next(clock))
    _checkpoint_each_step(t, steps)
    _assert_replays(t, history)


def _checkpoint_each_step(t: Terminal, steps: list[bytes | tuple[int, int]]) -> None:
    """Feed or resize ``t`` step by step; after each, the incremental writer (cached
    history rows) agrees with a fresh one."""
    writer = Checkpointer()
    for step in steps:
        if isinstance(step, tuple):
            t.resize(*step)
        else:
            t.feed(step)
        assert writer.write(t) == write_checkpoint(t)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400), st.integers(2, 14), st.integers(1, 6))
def test_checkpoint_of_arbitrary_bytes(data: bytes, cols: int, rows: int) -> None:
    t = _terminal(cols, rows, history=20)
    t.feed(data)
    _assert_replays(t, 20)


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.bin")), ids=lambda p: p.stem)
def test_corpus_checkpoints(path: Path) -> None:
    """Real programs (vim, top, less, bash, ...), checkpointed at many points."""
    data = path.read_bytes()
    t = _terminal(120, 40, history=1000)
    step = max(1, len(data) // 25)
    for start in range(0, len(data), step):
        t.feed(data[start : start + step])
        _assert_replays(t, 1000)


@pytest.mark.parametrize(
    "data",
    [
        "a\u0301\u0301 中é".encode(),
        b"ab\x1b[31;42mcd\x1b]2;a title\x07\x1bP1$r0m\x1b\\\x1b]133;A\x07$ ",
        b"x\x1b]0;ti\x1b\\y\x1b_Gabc\x1b\\z",
    ],
)
def test_a_checkpoint_cut_anywhere_continues_exactly(data: bytes) -> None:
    """Compaction cuts output wherever a read ended: in a UTF-8 character, an
    escape sequence or a string. The checkpoint plus the rest is the whole."""
    whole = _terminal(20, 4, history=20)
    whole.feed(data)
    for cut in range(len(data) + 1):
        t = _terminal(20, 4, history=20)
        t.feed(data[:cut])
        u = _terminal(20, 4, history=20)
        u.feed(write_checkpoint(t))
        u.feed(data[cut:])
        problems = diff(engine_state(whole), engine_state(u))
        assert not problems, f"cut at {cut}: " + "\n".join(problems)


@pytest.mark.parametrize("marks", [False, True])
@pytest.mark.parametrize("cols", [60, 13])
def test_a_coloured_flood_checkpoints_to_equal_state(marks: bool, cols: int) -> None:
    """The rows a coloured flood leaves (built from its pieces by the bulk path,
    several pens a row, some rows in one; at 13 columns most lines wrap, and rows
    start in the middle of a run) are encoded a run of one pen at a time."""
    import random

    rng = random.Random(7)
    colours = ["01;34", "01;32", "00", "40;33;01", "38;5;200", "7"]
    lines = []
    for i in range(3000):
        if i % 7 == 0:
            lines.append(f"\x1b[0mplain line {i}")
            continue
        lines.append(
            "".join(
                f"\x1b[0m\x1b[{rng.choice(colours)}m{rng.choice(['a', 'bb.py', 'c d'])}\x1b[0m "
                for _ in range(rng.randint(1, 6))
            )
        )
    data = ("\r\n".join(lines) + "\r\n").encode()
    if marks:  # a prompt's mark after it: cells of another OSC 133 mark on the last row
        data += b"\x1b]133;A\x07$ \x1b]133;B\x07ls"
    t = _terminal(cols, 10, history=500)
    t.feed(data)
    assert sum(line.wrapped for line in t.screen.scrollback) > (100 if cols == 13 else -1)
    writer = Checkpointer()
    assert writer.write(t) == write_checkpoint(t)
    _assert_replays(t, 500)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(coloured_session(), st.sampled_from([0, 1, 3, 20]), st.binary(max_size=30))
def test_rows_a_flood_built_checkpoint_to_equal_state(
    session: list[bytes | tuple[int, int]], history: int, after: bytes
) -> None:
    """Rows the bulk path built (their pens known: ``Line.runs``), through resizes
    and whatever comes after (a row drawn on further, overwritten, cut), written by
    an incremental and a fresh writer alike and replayed to the same state."""
    t = _terminal(12, 5, history=history)
    _checkpoint_each_step(t, [*session, b"\x1b[3A", after, (9, 5)])
    _assert_replays(t, history)

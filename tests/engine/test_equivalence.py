"""The speed layer leaves exactly stock pyte's state wherever stock pyte is right.

The vocabulary below is what stock pyte handles correctly: text of width-1
characters, C0 controls, cursor movement, erasure (after SGR 0, since stock
pyte erases with the full cursor attributes and we use background only),
insert/delete characters, insert lines, SGR, tab stops, IRM/LNM, cursor
visibility, IND/RI, DECALN. Left out on purpose, because the engine
fixes them: DL (stale line), DECSTBM (scrollback from partial regions, cursor
below the region), CUU/CUD/VPR (they cancel a pending wrap, as xterm and
tmux do), autowrap off (stock pyte parks the cursor past the last column),
DECSC/DECRC (stack vs slot), NEL, RIS, DECOM (stock asserts),
DECCOLM, DECSCNM, alternate screens, wide and zero-width characters, charsets,
ED 3 (erases the scrollback only, as xterm does; stock pyte clears the screen).
C1 code points (U+0080-U+009F) are in the vocabulary, but stock pyte takes
them for controls: the oracle (stock.py) ignores them, as xterm and tmux do.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from phux.engine import Terminal

from .stock import assert_same_as_stock, stock_screen

COLS, ROWS, HISTORY = 12, 5, 20

_TEXT = st.text(
    alphabet=st.sampled_from("abcXYZ 019.-_~éßΩЖ─│┌"),
    min_size=1,
    max_size=30,
)
_N = st.integers(min_value=0, max_value=14)
_C1 = st.integers(0x80, 0x9F).map(chr)
_SGR_PARAM = (
    st.sampled_from(
        [
            "0",
            "1",
            "2",
            "3",
            "4",
            "5",
            "7",
            "8",
            "9",
            "22",
            "23",
            "24",
            "25",
            "27",
            "29",
            "30",
            "31",
            "33",
            "37",
            "39",
            "40",
            "42",
            "47",
            "49",
            "53",
            "90",
            "93",
            "97",
            "100",
            "105",
            "107",
        ]
    )
    | st.builds(lambda k, n: f"{k};5;{n}", st.sampled_from([38, 48]), st.integers(0, 260))
    | st.builds(
        lambda k, r, g, b: f"{k};2;{r};{g};{b}",
        st.sampled_from([38, 48]),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
    )
)


def _csi1(final: str) -> st.SearchStrategy[str]:
    return _N.map(lambda n: f"\x1b[{n or ''}{final}")


_TOKEN = st.one_of(
    _TEXT,
    _TEXT,
    st.sampled_from(["\r", "\n", "\x08", "\t", "\x0b", "\x0c", "\x07", "\r\n"]),
    *[_csi1(f) for f in "CDEFGdaL@P"],
    st.builds(lambda a, b: f"\x1b[{a};{b}H", _N, _N),
    st.builds(lambda a, b: f"\x1b[{a};{b}f", _N, _N),
    st.sampled_from(["0", "1", "2", ""]).map(lambda n: f"\x1b[0m\x1b[{n}J"),
    st.sampled_from(["0", "1", "2", ""]).map(lambda n: f"\x1b[0m\x1b[{n}K"),
    _N.map(lambda n: f"\x1b[0m\x1b[{n}X"),
    st.lists(_SGR_PARAM, min_size=0, max_size=4).map(lambda ps: f"\x1b[{';'.join(ps)}m"),
    st.sampled_from(["\x1bD", "\x1bM", "\x1bH", "\x1b[g", "\x1b[3g", "\x1b#8"]),
    st.sampled_from(["4", "20", "?25"]).flatmap(
        lambda m: st.sampled_from([f"\x1b[{m}h", f"\x1b[{m}l"])
    ),
    # C1 code points: not controls in UTF-8 (stock.py ignores them too), alone
    # and inside a sequence.
    _C1,
    st.builds(lambda c, n: f"\x1b[{n}{c}C", _C1, _N),
    st.builds(lambda c: f"\x1b{c}D", _C1),
)


@st.composite
def _chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = "".join(draw(st.lists(_TOKEN, max_size=60))).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return data, chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chunked())
@example(sample=(b"00000\r\x1b[8@\x1b[P", [b"00000\r\x1b[8@\x1b[P"]))  # ICH past the margin
def test_same_state_as_stock_pyte_in_any_chunking(sample: tuple[bytes, list[bytes]]) -> None:
    data, chunks = sample
    stock = stock_screen(data, COLS, ROWS, HISTORY)
    t = Terminal(COLS, ROWS, history=HISTORY)
    for chunk in chunks:
        t.feed(chunk)
    assert_same_as_stock(t, stock)


def test_long_plain_text_same_as_stock() -> None:
    data = b"".join(b"line %d: " % i + b"lorem ipsum " * (i % 9) + b"\r\n" for i in range(300))
    t = Terminal(80, 24, history=1000)
    t.feed(data)
    assert_same_as_stock(t, stock_screen(data, 80, 24, 1000))


def _stock_safe_captures() -> list[tuple[str, bytes]]:
    """Recorded captures (or their prefixes) that stay inside what stock pyte gets right.

    bash is cut before its first non-ASCII byte (emoji with VS16 and combining
    marks are where stock pyte drops text); vim, less, git's pager and curses
    use the alternate screen and DEC graphics, which stock pyte lacks.
    """
    corpus = Path(__file__).parent / "corpus"
    out = [(name, (corpus / f"{name}.bin").read_bytes()) for name in ("python", "rich", "top")]
    bash = (corpus / "bash.bin").read_bytes()
    first_non_ascii = next(i for i, b in enumerate(bash) if b >= 0x80)
    out.append(("bash-ascii", bash[: bash.rfind(b"\n", 0, first_non_ascii) + 1]))
    return out


@pytest.mark.parametrize(
    "data", [pytest.param(data, id=name) for name, data in _stock_safe_captures()]
)
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_recorded_output_same_as_stock(data: bytes, chunk: int) -> None:
    t = Terminal(120, 40, history=1000)
    for i in range(0, len(data), chunk):
        t.feed(data[i : i + chunk])
    assert_same_as_stock(t, stock_screen(data, 120, 40, 1000))


def _truecolor_stream(seed: int) -> bytes:
    """Coloured runs as truecolor TUIs write them: random colours (every SGR string
    new), colours from a small theme (strings seen again), one colour or both, in
    one sequence or two, and spellings the direct truecolor parse leaves to the
    general one (leading zeros, other attributes mixed in, empty parameters)."""
    rng = random.Random(seed)
    theme = [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(6)]
    forms = [
        "\x1b[38;2;{0};{1};{2}m\x1b[48;2;{2};{0};{1}m",
        "\x1b[38;2;{0};{1};{2};48;2;{2};{0};{1}m",
        "\x1b[48;2;{0};{1};{2}m",
        "\x1b[38;2;{0};{1};{2};38;2;{1};{2};{0}m",
        "\x1b[48;2;{0};{1};{2};38;2;{1};{2};{0}m",
        "\x1b[38;2;0{0};{1};{2}m",
        "\x1b[1;38;2;{0};{1};{2}m",
        "\x1b[m\x1b[4m\x1b[38;2;{0};{1};{2}m",
        "\x1b[0m",
    ]
    out = []
    for _ in range(600):
        if rng.random() < 0.5:
            rgb = rng.choice(theme)
        else:
            rgb = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        out.append(rng.choice(forms).format(*rgb))
        out.append("".join(rng.choice("|#=.-%0123456789 ab") for _ in range(rng.randint(1, 14))))
        roll = rng.random()
        if roll < 0.1:
            out.append("\r\n")
        elif roll < 0.2:
            out.append(f"\x1b[{rng.randint(1, ROWS)};{rng.randint(1, COLS)}H")
    return "".join(out).encode()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("chunk", [5, 4096])
def test_truecolor_runs_same_as_stock(seed: int, chunk: int) -> None:
    data = _truecolor_stream(seed)
    t = Terminal(COLS, ROWS, history=HISTORY)
    for i in range(0, len(data), chunk):
        t.feed(data[i : i + chunk])
    assert_same_as_stock(t, stock_screen(data, COLS, ROWS, HISTORY))

"""The engine's width table is wcwidth's."""

from __future__ import annotations

import re

import pytest
import wcwidth
from tools import gen_widths

from phux.engine._widths import char_width, narrow_run, wide_run

# Every code point, surrogates included: a regex scan over it yields a class's ranges.
_EVERY_CHAR = "".join(map(chr, range(gen_widths.LAST_CODE_POINT + 1)))


@pytest.fixture(scope="module")
def widths() -> list[int]:
    assert wcwidth.__version__ == gen_widths.WCWIDTH_VERSION, (
        f"wcwidth {wcwidth.__version__} is installed; the table comes from "
        f"{gen_widths.WCWIDTH_VERSION} (pip install -e '.[test]')"
    )
    return gen_widths.all_widths()


def test_table_is_current(widths: list[int]) -> None:
    assert gen_widths.TABLE.read_text() == gen_widths.render(widths), (
        "src/phux/engine/_width_table.py is stale: run python -m tools.gen_widths"
    )


def test_char_width_is_wcwidth_on_every_code_point(widths: list[int]) -> None:
    mine = [char_width(chr(cp)) for cp in range(gen_widths.LAST_CODE_POINT + 1)]
    assert mine == widths
    # Asked again, from the cache, the answers are the same.
    assert [char_width(c) for c in "a\u0301中\x1b\x00"] == [1, 0, 2, -1, 0]
    assert char_width("") == wcwidth.wcwidth("") == 0


def _spans(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end() - 1) for m in pattern.finditer(_EVERY_CHAR)]


def test_narrow_run_is_every_width_1_code_point_below_u3000(widths: list[int]) -> None:
    expected = [
        (max(lo, 0x20), min(hi, 0x2FFF))
        for lo, hi in gen_widths.ranges(widths, 1)
        if lo <= 0x2FFF and hi >= 0x20
    ]
    assert _spans(narrow_run()) == expected


def test_wide_run_is_every_width_2_code_point(widths: list[int]) -> None:
    assert _spans(wide_run()) == gen_widths.ranges(widths, 2)

"""The engine's width table is wcwidth's, and the engine never imports wcwidth."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import wcwidth
from tools import gen_widths

from phux.engine._widths import char_width, narrow_run, wide_run

SRC = Path(__file__).resolve().parents[2] / "src" / "phux"

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


def _python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_importing_the_engine_leaves_wcwidth_unimported() -> None:
    out = _python(
        "import sys\n"
        "import phux.engine, phux.engine.checkpoint, phux.tui.paint\n"
        "from phux.engine._widths import char_width\n"
        "import pyte.screens\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'wcwidth'))\n"
        "print(pyte.screens._wcwidth is char_width)\n"
        "import wcwidth\n"
        "print(wcwidth.__version__, wcwidth.wcswidth('中a'))\n"
    )
    assert out.splitlines() == ["[]", "True", f"{wcwidth.__version__} 3"]


def test_an_imported_wcwidth_is_left_alone() -> None:
    out = _python(
        "import wcwidth\n"
        "real = wcwidth\n"
        "import phux.engine, sys, pyte.screens\n"
        "print(sys.modules['wcwidth'] is real, pyte.screens._wcwidth is real.wcwidth)\n"
    )
    assert out.split() == ["True", "True"]


def test_only_the_gateway_imports_pyte_or_wcwidth() -> None:
    # phux.engine._pyte imports pyte without wcwidth; an import of pyte anywhere
    # else could run first and load wcwidth after all.
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("pyte", "wcwidth"):
                    offenders.append(f"{path.relative_to(SRC)}: {name}")
    assert offenders == [
        "engine/_pyte.py: pyte",
        "engine/_pyte.py: pyte",
        "engine/_pyte.py: pyte.screens",
    ]

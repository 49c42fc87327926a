"""The real bash-preexec (tools/bash_preexec.py) and phux's bash integration, in one
shell: each keeps its hooks. `run` is exact and leaves nothing else in the history,
and bash-preexec's preexec and precmd still run for every command (its DEBUG trap
and PROMPT_COMMAND entry coexist with phux's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .corpus import CONFIGS, need
from .serving import serving

pytestmark = pytest.mark.timeout(120)

STEP = "30"


def test_real_bash_preexec_keeps_its_hooks_and_run_stays_exact() -> None:
    config = CONFIGS["bash-preexec"]
    need(config)
    with serving(config) as phux:
        assert phux("new", "-s", "w", "--", "bash").code == 0
        res = phux("run", "--json", "--timeout", STEP, "w", "echo hi; false")
        assert (res.code, res.json()["output"]) == (1, "hi"), res.err
        res = phux("run", "--timeout", STEP, "w", "printf 'a\\nb\\n'")
        assert (res.code, res.out) == (0, "a\nb\n"), res.err
        history = phux("history", "--json", "w").json()["commands"]
        assert isinstance(history, list)
        assert [e["command"] for e in history] == ["echo hi; false", "printf 'a\\nb\\n'"]
        log = (Path(phux.home) / "fw.log").read_text().splitlines()
        assert [line for line in log if line.startswith("preexec")] == [
            "preexec[echo hi; false]",
            "preexec[printf 'a\\nb\\n']",
        ]
        assert log.count("precmd") >= 3  # the first prompt and one after each command

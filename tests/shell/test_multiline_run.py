"""A command of several lines, given to `run`: exact output, and `history` lists it
whole with that output (issue 23 item 9: dash cut multi-line commands).

bash, zsh and fish take it as one bracketed paste. dash reads in the tty's
canonical mode, which echoes every line typed ahead at once, before dash has
printed the continuation prompts: `run` types a line only once the shell asked
for it, as a person would, so the screen and the history read as typed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .serving import Server, need_shell, serving_files

pytestmark = pytest.mark.timeout(120)

STEP = "30"
COMMAND = "if true\nthen echo multi\nfi"


@pytest.fixture(scope="module")
def phux() -> Iterator[Server]:
    with serving_files({".config/fish/config.fish": "set -g fish_greeting\n"}, "phux-ml-") as s:
        yield s


@pytest.mark.parametrize("shell", ["bash", "zsh", "dash"])
def test_a_command_of_several_lines(phux: Server, shell: str) -> None:
    need_shell(shell)
    name = f"ml-{shell}"
    assert phux("new", "-s", name, "--", shell).code == 0
    res = phux("run", "--json", "--timeout", STEP, name, COMMAND)
    assert (res.code, res.json()["output"]) == (0, "multi"), res.err
    res = phux("run", "--json", "--timeout", STEP, name, "echo one\necho two")
    assert (res.code, res.json()["output"]) == (0, "one\ntwo"), res.err
    history = phux("history", "--json", name).json()["commands"]
    assert isinstance(history, list)
    got = [(e["command"], e["output"], e["exit_code"]) for e in history]
    # As the shell records it: bash's history joins the lines with "; " (cmdhist).
    assert got[0] in [(COMMAND, "multi", 0), ("if true; then echo multi; fi", "multi", 0)]
    if shell == "dash":  # typed line by line: one entry per command
        assert got[1:] == [("echo one", "one", 0), ("echo two", "two", 0)], got

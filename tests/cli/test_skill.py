"""``phux skill``: the guide's text, every command in it run on a real server,
and the MCP ``initialize`` instructions taken from it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from tests.shell.cli_fork import CliForker

from phux import skill

from .test_e2e import Phux

FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`(phux [^`]+)`")
EXPECT = re.compile(r"#\s*exit (\d+)")


def commands(markdown: str) -> list[tuple[str, int]]:
    """Every ``phux ...`` command of a guide file, in order, with the exit code it
    should give: fenced lines (``# exit N`` says a non-zero one) and inline spans
    (always 0)."""
    found: list[tuple[int, str, int]] = []
    for block in FENCE.finditer(markdown):
        offset = block.start(1)
        for line in block.group(1).splitlines(keepends=True):
            if line.startswith("phux "):
                expect = EXPECT.search(line)
                found.append((offset, line.strip(), int(expect.group(1)) if expect else 0))
            offset += len(line)
    prose = FENCE.sub(lambda m: " " * len(m.group(0)), markdown)
    for span in INLINE.finditer(prose):
        found.append((span.start(), span.group(1), 0))
    return [(line, code) for _, line, code in sorted(found)]


def test_levels_grow() -> None:
    quick, agent, full = (skill.text(level) for level in skill.LEVELS)
    assert agent.startswith(quick) and full.startswith(agent)
    assert len(quick) < len(agent) < len(full)
    assert skill.text() == agent
    with pytest.raises(ValueError):
        skill.text("everything")


def test_the_guide_covers_what_an_agent_needs() -> None:
    text = skill.text("agent")
    for needed in (
        "read -> act -> wait",
        "## run, or send-keys and wait",
        "## Selectors",
        "## Exit codes",
        "124",
        "125",
        "The echo matches",
        "Options and TARGET",
        "Busy panes",
    ):
        assert needed in text


def test_extraction_finds_fenced_and_inline_commands() -> None:
    md = "Use `phux ls` or\n```sh\nphux wait x  # exit 124\nnot a command\n```\n`phux kill a`\n"
    assert commands(md) == [("phux ls", 0), ("phux wait x  # exit 124", 124), ("phux kill a", 0)]


@pytest.fixture
def server(cli_forker: CliForker) -> Iterator[Phux]:
    root = Path(tempfile.mkdtemp(prefix="phux-skill-", dir="/tmp"))
    p = Phux(root, cli_forker)
    try:
        p.start()
        yield p
    finally:
        p.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("level", skill.LEVELS)
def test_every_command_in_the_guide_runs(server: Phux, level: str) -> None:
    """Each file's commands, in order, on a fresh server (each file creates the
    sessions its examples use), exit as the text says."""
    markdown = resources.files("phux.skill").joinpath(f"{level}.md").read_text(encoding="utf-8")
    found = commands(markdown)
    assert len(found) >= 5
    for line, expected in found:
        argv = shlex.split(line, comments=True)
        assert argv[0] == "phux"
        res = server(*argv[1:], stdin="")
        assert res.code == expected, f"{line}\n-> exit {res.code}\n{res.out}\n{res.err}"


def test_skill_verb_prints_each_level(server: Phux) -> None:
    for level in skill.LEVELS:
        res = server("skill", level)
        assert res.code == 0, res.err
        assert res.out == skill.text(level)
    res = server("skill")
    assert res.out == skill.text("agent")
    assert server("skill", "nope").code == 2


def test_mcp_instructions_are_the_quick_guide(server: Phux) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "phux", "mcp"],
        input=json.dumps(init) + "\n",
        capture_output=True,
        text=True,
        env=server.env,
        timeout=30,
    )
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["result"]["instructions"] == skill.instructions()
    assert skill.instructions() == skill.text("quick").strip()

"""One meaning and one default for the timeouts of run and wait, documented once.

phux.timeouts holds the defaults and the text; the CLI's --help, the
MCP tool descriptions and docs/mcp.md all show that same text.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from phux import skill, timeouts
from phux.cli import actions, quick
from phux.cli.app import cli
from phux.mcp import catalog, tools

DOCS = Path(__file__).parents[2] / "docs" / "mcp.md"


def flat(text: str) -> str:
    return " ".join(text.split())


def test_one_default_per_verb_on_both_surfaces() -> None:
    assert catalog.RunArgs(target="w", command="x").timeout_secs == actions.RUN_TIMEOUT
    assert catalog.WaitArgs().timeout_secs == actions.WAIT_TIMEOUT
    assert quick.SPECS["run"].defaults["timeout"] == timeouts.RUN_TIMEOUT
    assert quick.SPECS["wait"].defaults["timeout"] == timeouts.WAIT_TIMEOUT
    assert actions.GRACE == tools.GRACE == timeouts.GRACE
    assert catalog.RUN_SCHEMA["properties"]["timeout_secs"]["default"] == timeouts.RUN_TIMEOUT
    assert catalog.WAIT_SCHEMA["properties"]["timeout_secs"]["default"] == timeouts.WAIT_TIMEOUT
    assert catalog.RUN_SCHEMA["properties"]["timeout_secs"]["exclusiveMinimum"] == 0
    assert catalog.WAIT_SCHEMA["properties"]["timeout_secs"]["minimum"] == 0


def test_the_text_is_the_same_everywhere() -> None:
    text = flat(timeouts.TIMEOUTS)
    for verb in ("run", "wait"):
        result = CliRunner().invoke(cli, [verb, "--help"], terminal_width=100)
        assert result.exit_code == 0
        assert text in flat(result.output), verb
    # Not in the tool descriptions any more (issue 26: the listing is paid for on every
    # conversation): the host's model gets it once, in the instructions.
    assert text not in flat(catalog.RUN_DOC) and text in flat(skill.instructions())
    assert text in flat(DOCS.read_text(encoding="utf-8"))

"""The agent guide (``phux skill``), kept as text beside the code.

Three levels, each a file here and each the one before it plus more:
``quick`` (a paragraph: the loop and the pitfall that bites first; also the
MCP ``initialize`` instructions), ``agent`` (the guide: the loop, run versus
send-keys and wait, keys, selectors, exit codes, pitfalls) and ``full`` (every
verb, remote hosts). Every ``phux ...`` command in them is run against a real
server by the tests, so the guide cannot drift from the CLI.
"""

from __future__ import annotations

from importlib import resources

LEVELS = ("quick", "agent", "full")
DEFAULT_LEVEL = "agent"


def text(level: str = DEFAULT_LEVEL) -> str:
    """The guide at ``level`` (one of :data:`LEVELS`): its file and those before it."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (levels: {', '.join(LEVELS)})")
    parts = LEVELS[: LEVELS.index(level) + 1]
    here = resources.files(__name__)
    return "".join(here.joinpath(f"{part}.md").read_text(encoding="utf-8") for part in parts)


def instructions() -> str:
    """The MCP ``initialize`` instructions: the quick level, as one paragraph block."""
    return text("quick").strip()

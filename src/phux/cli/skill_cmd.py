"""``phux skill``: print the agent guide (the text is :mod:`phux.skill`'s)."""

from __future__ import annotations

import click

from phux.cli.render import write_out

LEVELS = ("quick", "agent", "full")  # phux.skill.LEVELS, kept import-free for --help


@click.command(
    "skill",
    short_help="Print the guide for agents (read it first).",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("level", type=click.Choice(LEVELS), default="agent", required=False)
def skill_cmd(level: str) -> None:
    """Print how to drive phux as an agent, at LEVEL of detail (default: agent).

    \b
      quick  one paragraph: the read -> act -> wait loop and the first pitfall
             (also what `phux mcp` gives MCP hosts as its instructions)
      agent  the guide: the loop, run versus send-keys + wait, keys, selectors,
             exit codes, pitfalls
      full   the guide and every other verb

    Every command in the guide is run by phux's tests against a real server.
    """
    from phux.skill import text

    write_out(text(level))

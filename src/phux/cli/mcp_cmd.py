"""``phux mcp``: the MCP stdio adapter, for agent hosts (see docs/mcp.md)."""

from __future__ import annotations

import click

from phux.mcp.names import TOOLS, tool_list

_TOOL_ROWS = "\n".join(f"  {name:<16} {title}" for name, title, _ in TOOLS)


@click.command(
    "mcp",
    short_help="Serve the phux tools to an MCP host over stdio.",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help=f"""Speak MCP (JSON-RPC 2.0, one message per line) on stdin/stdout until stdin closes.

\b
Tools ({len(TOOLS)}):
{_TOOL_ROWS}

Each takes an optional `socket` (default: $PHUX_SOCKET, then the per-user
default) and `host`. The adapter never starts a server.

\b
Configure a host with e.g.
  {{"mcpServers": {{"phux": {{"command": "phux", "args": ["mcp"]}}}}}}
""",
)
@click.option(
    "--read-only",
    is_flag=True,
    help=f"Expose only the tools that change nothing: {tool_list(read_only=True)}.",
)
def mcp_cmd(read_only: bool) -> None:
    from phux.mcp import run_stdio

    run_stdio(read_only=read_only)

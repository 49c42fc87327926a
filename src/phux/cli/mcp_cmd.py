"""``phux mcp``: the MCP stdio adapter, for agent hosts (see docs/mcp.md)."""

from __future__ import annotations

import click


@click.command(
    "mcp",
    short_help="Serve the phux tools to an MCP host over stdio.",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Expose only the tools that change nothing: phux_ls, phux_snapshot, phux_wait.",
)
def mcp_cmd(read_only: bool) -> None:
    """Speak MCP (JSON-RPC 2.0, one message per line) on stdin/stdout until stdin closes.

    \b
    Tools: phux_ls, phux_snapshot, phux_send_keys, phux_run, phux_wait, phux_new.
    Each takes an optional `socket` (default: $PHUX_SOCKET, then the per-user
    default). The adapter never starts a server. Configure a host with e.g.
      {"mcpServers": {"phux": {"command": "phux", "args": ["mcp"]}}}
    """
    from phux.mcp import run_stdio

    run_stdio(read_only=read_only)

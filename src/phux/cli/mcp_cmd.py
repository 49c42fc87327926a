"""``phux mcp``: the MCP adapter, for agent hosts, over stdio or HTTP (see docs/mcp.md)."""

from __future__ import annotations

import click

from phux.mcp.names import TOOLS, tool_list

_TOOL_ROWS = "\n".join(f"  {name:<16} {title}" for name, title, _ in TOOLS)


@click.command(
    "mcp",
    short_help="Serve the phux tools to an MCP host over stdio or HTTP.",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help=f"""Speak MCP (JSON-RPC 2.0, one message per line) on stdin/stdout until stdin closes;
with --http, MCP's Streamable HTTP transport at http://HOST:PORT/mcp instead.

\b
Tools ({len(TOOLS)}):
{_TOOL_ROWS}

Each takes an optional `socket` (default: $PHUX_SOCKET, then the per-user
default) and `host`. The adapter never starts a server. Panes are resources
too: phux://SESSION/WINDOW.PANE (or phux://@N) reads as its screen, and a
subscription is told when the pane settles after a change.

\b
Configure a host with e.g.
  {{"mcpServers": {{"phux": {{"command": "phux", "args": ["mcp"]}}}}}}
or, over HTTP (an agent in a container, on another machine):
  phux mcp --http 8765
  {{"url": "http://127.0.0.1:8765/mcp",
   "headers": {{"Authorization": "Bearer TOKEN"}}}}

TOKEN is what --print-token prints: every HTTP request needs it (made on first
start, kept 0600 in $XDG_STATE_HOME/phux/mcp-token); a request from a web page of
another origin is refused (403). HTTP binds 127.0.0.1 unless HOST says otherwise, which needs
--allow-remote (and prints a warning: use a tunnel or TLS proxy in front).
""",
)
@click.option(
    "--read-only",
    is_flag=True,
    help=f"Expose only the tools that change nothing: {tool_list(read_only=True)}.",
)
@click.option(
    "--http",
    "bind",
    metavar="[HOST:]PORT",
    help="Serve Streamable HTTP on this address (HOST default 127.0.0.1; PORT 0: any free one).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Let --http bind an address other than loopback (prints a warning).",
)
@click.option(
    "--allow-origin",
    "origins",
    multiple=True,
    metavar="ORIGIN",
    help="Also accept requests from web pages of this origin (e.g. http://localhost:3000).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="Keep the bearer token in this file instead (made, 0600, if missing).",
)
@click.option(
    "--print-token",
    is_flag=True,
    help="Print the bearer token (making it if missing) and exit.",
)
def mcp_cmd(
    read_only: bool,
    bind: str | None,
    allow_remote: bool,
    origins: tuple[str, ...],
    token_file: str | None,
    print_token: bool,
) -> None:
    if print_token or bind is not None:
        _http(read_only, bind, allow_remote, origins, token_file, print_token)
        return
    from phux.mcp import run_stdio

    run_stdio(read_only=read_only)


def _http(
    read_only: bool,
    bind: str | None,
    allow_remote: bool,
    origins: tuple[str, ...],
    token_file: str | None,
    print_token: bool,
) -> None:
    from phux.mcp.token import TokenError, default_token_path, load_or_create

    if print_token:
        try:
            click.echo(load_or_create(token_file or default_token_path()))
        except TokenError as exc:
            raise click.ClickException(str(exc)) from None
        return
    assert bind is not None
    from phux.mcp.http import is_loopback, parse_bind

    try:
        host, port = parse_bind(bind)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--http") from None
    if not is_loopback(host):
        if not allow_remote:
            raise click.UsageError(
                f"--http {bind} is not a loopback address: anyone who can reach it and "
                "holds the token drives your terminals; add --allow-remote to mean it"
            )
        click.echo(
            f"phux mcp: warning: serving on {host}, beyond this machine; the bearer token "
            "is all that guards it and plain HTTP carries it in clear: put a TLS proxy or "
            "a tunnel in front",
            err=True,
        )
    from phux.mcp import run_http
    from phux.mcp.token import TokenError as _TokenError

    try:
        run_http(host, port, token_file=token_file, read_only=read_only, allowed_origins=origins)
    except _TokenError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {bind}: {exc}") from None

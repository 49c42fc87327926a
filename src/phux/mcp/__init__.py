"""phux.mcp: the MCP stdio adapter (``phux mcp``), a thin front end over phux.client.

:mod:`phux.mcp.jsonrpc` frames JSON-RPC lines, :mod:`phux.mcp.server` runs the
loop and negotiates the MCP revision, :mod:`phux.mcp.tools` holds the tools, and
:mod:`phux.mcp.panes` makes the calls that write to one pane take turns.
"""

from __future__ import annotations

import os
import warnings


def run_stdio(*, read_only: bool = False) -> None:
    """Serve MCP on stdin/stdout until stdin reaches EOF."""
    from phux import __version__
    from phux.mcp.resources import PaneResources
    from phux.mcp.server import serve
    from phux.mcp.tools import PhuxTools
    from phux.skill import instructions

    # Stdout carries protocol messages only: keep a private copy of it for them
    # and point fd 1 (and sys.stdout) at /dev/null, so nothing stray can
    # corrupt the stream. Warnings would break the quiet of stderr.
    warnings.simplefilter("ignore")
    protocol_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    tools = PhuxTools()
    resources = PaneResources(tools.pool)
    try:
        serve(
            tools.catalog(read_only=read_only),
            name="phux",
            version=__version__,
            instructions=instructions(),
            stdout_fd=protocol_fd,
            resources=resources,
        )
    finally:
        # protocol_fd stays open: a call still running past the EOF grace must
        # not find its number reused by another file while the process exits.
        resources.close()
        tools.close()


def run_http(
    host: str,
    port: int,
    *,
    token_file: str | None = None,
    read_only: bool = False,
    allowed_origins: tuple[str, ...] = (),
) -> None:
    """Serve MCP over Streamable HTTP at http://HOST:PORT/mcp until SIGINT or SIGTERM.

    The token, the bind's warning and the address served go to stderr; stdout stays
    empty (a host may still run it as a child)."""
    import signal
    import sys

    import trio

    from phux import __version__
    from phux.mcp.http import ENDPOINT, HttpTransport, is_loopback
    from phux.mcp.resources import PaneResources
    from phux.mcp.token import default_token_path, load_or_create
    from phux.mcp.tools import PhuxTools
    from phux.skill import instructions

    # Every call hands the GIL from the trio loop to its worker thread and back; at
    # the default 5 ms switch interval a handoff can wait for a forced switch (a warm
    # phux_snapshot took 8 ms over HTTP against 1.6 over stdio; 2.5 with this).
    sys.setswitchinterval(0.0005)
    path = token_file or default_token_path()
    token = load_or_create(path)
    tools = PhuxTools()
    resources = PaneResources(tools.pool)
    transport = HttpTransport(
        tools.catalog(read_only=read_only),
        token=token,
        name="phux",
        version=__version__,
        instructions=instructions(),
        resources=resources,
        allowed_origins=allowed_origins,
        loopback=is_loopback(host),
    )

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            port_served = await nursery.start(transport.serve, host, port)
            shown = f"[{host}]" if ":" in host else host
            print(
                f"phux mcp: serving MCP at http://{shown}:{port_served}{ENDPOINT} "
                f"(bearer token in {path})",
                file=sys.stderr,
                flush=True,
            )
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    try:
        trio.run(main)
    finally:
        resources.close()
        tools.close()

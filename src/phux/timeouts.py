"""How long ``run`` and ``wait`` wait: one meaning and one default for every surface.

The CLI's ``--timeout`` and the MCP tools' ``timeout_secs`` both read these
constants and both show :data:`TIMEOUTS` (``phux run --help``, ``phux wait
--help``, the MCP tool descriptions); docs/mcp.md quotes it word for word and a
test holds the copies together. Plain constants: the one-shot verbs import this.
"""

from __future__ import annotations

RUN_TIMEOUT = 30.0
"""Seconds ``run`` waits for the command by default."""
WAIT_TIMEOUT = 30.0
"""Seconds ``wait`` waits for its condition by default."""
MAX_TIMEOUT = 1e9
"""The largest --timeout the CLI accepts (keeps the platform's timers from overflowing)."""
MCP_MAX_TIMEOUT = 3600.0
"""The largest ``timeout_secs`` an MCP call accepts: an hour. A host abandons a call
long before (commonly after about 60 s); each call blocking this long holds a thread
and a connection of the adapter until it is cancelled."""
GRACE = 5.0
"""Seconds allowed beyond the timeout for connecting, resolving and reporting."""

TIMEOUTS = (
    "Timeouts are seconds and mean the same in the CLI (--timeout) and MCP (timeout_secs). "
    f"run: default {RUN_TIMEOUT:g}; must be more than 0 (there is no unlimited run); when it "
    "passes phux stops waiting (CLI exit 125, MCP outcome timed_out) and the command keeps "
    "running: wait for the prompt to come back rather than run again. For a longer job, "
    "type it with send-keys and wait for the prompt. "
    f"wait: default {WAIT_TIMEOUT:g}; 0 checks the current state once (idle and prompt "
    "are watched for just their quiet time); when it passes: CLI exit 124, MCP outcome "
    "timed_out."
)
"""The one text that documents both timeouts, wherever they are documented."""

"""The server's limits and knobs, with their defaults in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MiB = 1024 * 1024


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


@dataclass(frozen=True)
class ServerConfig:
    socket_path: Path
    log_file: Path | None = None
    journal_bytes: int = 4 * MiB
    """Output bytes each terminal keeps for bootstraps after its newest checkpoint.

    With replicas on, the oldest part is replaced by a checkpoint, never just
    dropped; while a lagging replica leaves more than this after its newest
    checkpoint, bootstraps are the newest this-many bytes without one. With
    replicas off, the oldest bytes are dropped.
    """
    replica_mode: str = field(default_factory=lambda: _env("PHUX_REPLICAS", "process"))
    """Where the terminals' engine replicas run: "thread", "process" or "off"
    (``$PHUX_REPLICAS``). Off: no checkpoints, no answers to terminal queries."""
    history_lines: int = field(default_factory=lambda: int(_env("PHUX_HISTORY_LINES", "2000")))
    """Scrollback rows each replica keeps, so each checkpoint carries (tmux's default;
    ``$PHUX_HISTORY_LINES``)."""
    compact_bytes: int = 64 * 1024
    """A caught-up replica writes a checkpoint once this much output followed the last one,
    so a bootstrap replays at most about this much output after its checkpoint (replaying
    64 KiB of full-screen output takes a client engine about 25 ms)."""
    replica_lag_bytes: int = 32 * MiB
    """Output a replica may have queued and not parsed; beyond it the replica is restarted
    from the journal's newest bytes and its backlog dropped (memory stays bounded in a
    flood, and the program is never slowed down for the replica)."""
    subscriber_queue_bytes: int = 4 * MiB
    """Output a subscription may have queued before it is tombstoned."""
    retention_s: float = 60.0
    """How long a closed terminal stays listed and subscribable."""
    kill_grace_s: float = 2.0
    """SIGKILL follows SIGHUP after this long if a killed terminal is still running."""
    exit_drain_s: float = 0.5
    """After the child is reaped, wait at most this long for the PTY to reach EOF."""
    max_metadata_value: int = 64 * 1024
    max_subscriptions: int = 256
    max_input_backlog: int = 64 * MiB
    """Unacknowledged INPUT bytes per connection before the server stops reading it."""
    max_control_backlog: int = 64 * MiB
    """Queued non-output frames for a connection that does not read before it is dropped."""
    exit_after_idle_s: float | None = None
    shell_integration: bool = field(
        default_factory=lambda: os.environ.get("PHUX_SHELL_INTEGRATION") != "0"
    )
    """Whether shells a SPAWN starts get shell integration unless the SPAWN opts out
    (``$PHUX_SHELL_INTEGRATION=0`` turns the default off; spec/shell-integration.md)."""
    foreground_poll_s: float = 0.2
    """While someone follows a terminal's state (TERMINAL_STATE), its foreground is also
    checked this often: a program starting or a tty mode changing may print nothing."""
    foreground_gap_s: float = 0.01
    """Output and input trigger a foreground check at most once per this interval."""
    read_batch_bytes: int = 64 * 1024
    """A PTY read pass stops after this many bytes, so one flood cannot hog the loop."""
    audit_file: Path | None = None
    """The input audit's JSON-lines file (``phux audit``); None: no audit."""
    audit_max_bytes: int = field(
        default_factory=lambda: int(_env("PHUX_AUDIT_MAX_BYTES", str(MiB)))
    )
    """The audit file is rotated (``.1``, ``.2``, ...) before it would pass this size."""
    audit_keep: int = field(default_factory=lambda: int(_env("PHUX_AUDIT_KEEP", "3")))
    """Rotated audit files kept besides the current one."""
    audit_data: bool = field(default_factory=lambda: os.environ.get("PHUX_AUDIT_DATA") == "1")
    """Whether the audit keeps the input bytes themselves, not only their count and hash
    (``$PHUX_AUDIT_DATA=1``): off by default, because input holds typed passwords."""

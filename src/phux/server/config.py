"""The server's limits and knobs, with their defaults in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024


@dataclass(frozen=True)
class ServerConfig:
    socket_path: Path
    log_file: Path | None = None
    journal_bytes: int = 4 * MiB
    """Output bytes each terminal keeps for bootstraps (oldest dropped first)."""
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
    read_batch_bytes: int = 64 * 1024
    """A PTY read pass stops after this many bytes, so one flood cannot hog the loop."""

"""The server's limits and knobs, with their defaults in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MiB = 1024 * 1024


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def _env_int(name: str, default: int) -> int:
    return int(_env(name, str(default)))


def _env_float(name: str, default: float) -> float:
    return float(_env(name, str(default)))


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
    max_journal_total: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_JOURNAL_TOTAL", 256 * MiB)
    )
    """Output bytes all terminals' journals may hold together (``$PHUX_MAX_JOURNAL_TOTAL``;
    checkpoints are not counted: their size follows ``history_lines``). Past it the
    largest journals shrink to 7/8 of it: a terminal whose replica lags waits (its
    program blocks on a full PTY) until the replica has parsed all it was fed and
    checkpointed, so the bytes before the checkpoint go and every bootstrap stays
    exact; with replicas off, the largest journals lose their oldest bytes. It is looked
    at once per sixteenth of it, and a journal under ``compact_bytes`` never waits, so
    the sum may pass it by a sixteenth plus, per terminal, ``compact_bytes`` and one
    read pass (``read_batch_bytes``)."""
    replica_mode: str = field(default_factory=lambda: _env("PHUX_REPLICAS", "process"))
    """Where the terminals' engine replicas run: "thread", "process" or "off"
    (``$PHUX_REPLICAS``). Off: no checkpoints, no answers to terminal queries."""
    history_lines: int = field(default_factory=lambda: int(_env("PHUX_HISTORY_LINES", "2000")))
    """Scrollback rows each replica keeps, so each checkpoint carries (tmux's default;
    ``$PHUX_HISTORY_LINES``)."""
    replica_idle_s: float = field(default_factory=lambda: _env_float("PHUX_REPLICA_IDLE_S", 5.0))
    """A replica with nothing to do for this long checkpoints and puts its engine away,
    keeping only the checkpoint, compressed; output or a resize builds it again from
    that (``$PHUX_REPLICA_IDLE_S``; 0: never). An idle terminal's replica is then a few
    hundred bytes instead of an engine (ARCHITECTURE.md, "Memory")."""
    compact_bytes: int = 64 * 1024
    """A caught-up replica writes a checkpoint once this much output followed the last one,
    so a bootstrap replays at most about this much output after its checkpoint (replaying
    64 KiB of full-screen output takes a client engine about 25 ms)."""
    replica_lag_bytes: int = field(
        default_factory=lambda: _env_int("PHUX_REPLICA_LAG_BYTES", 32 * MiB)
    )
    """Output a replica may have queued and not parsed (``$PHUX_REPLICA_LAG_BYTES``,
    ``--replica-lag-bytes``); beyond it the terminal's reader pauses until the replica
    has caught up to half of it, so memory stays bounded in a flood and every byte is
    parsed (a bootstrap never starts mid-stream)."""
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
    max_input_backlog: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_INPUT_BACKLOG", 16 * MiB)
    )
    """Unacknowledged INPUT bytes per connection before the server stops reading it
    (``$PHUX_MAX_INPUT_BACKLOG``): a fast paste waits for the program, it is not refused."""
    max_terminal_input: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_TERMINAL_INPUT", 32 * MiB)
    )
    """INPUT bytes queued for one terminal (``$PHUX_MAX_TERMINAL_INPUT``): an INPUT that
    would pass it while some is queued gets RESOURCE_EXHAUSTED (a program not reading)."""
    max_input_total: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_INPUT_TOTAL", 128 * MiB)
    )
    """INPUT bytes queued for all terminals together (``$PHUX_MAX_INPUT_TOTAL``); the
    INPUT that would pass it gets RESOURCE_EXHAUSTED."""
    input_unit_hold_s: float = field(
        default_factory=lambda: _env_float("PHUX_INPUT_UNIT_HOLD", 10.0)
    )
    """How long an input unit's next piece may keep the terminal's other input waiting
    (``$PHUX_INPUT_UNIT_HOLD``): then the rest of the unit is cancelled (a sender that
    stalled mid-unit), as if an interrupt had cut it (spec/L1.md §7)."""
    max_control_backlog: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_REPLY_BACKLOG", 16 * MiB)
    )
    """Queued replies and events (not output) for a connection that does not read
    (``$PHUX_MAX_REPLY_BACKLOG``); past it the connection gets DETACHED(SLOW_CONSUMER)."""
    max_connection_queue: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_CONNECTION_QUEUE", 64 * MiB)
    )
    """Everything queued for one connection, output of all its subscriptions included
    (``$PHUX_MAX_CONNECTION_QUEUE``); past it the connection gets DETACHED(SLOW_CONSUMER)."""
    max_queued_total: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_QUEUED_TOTAL", 512 * MiB)
    )
    """Bytes queued for all connections together (``$PHUX_MAX_QUEUED_TOTAL``). Output
    that would pass it detaches the connection with the most queued (SLOW_CONSUMER);
    a reply or event that passes it detaches its own connection."""
    max_connections: int = field(default_factory=lambda: _env_int("PHUX_MAX_CONNECTIONS", 1000))
    """Open client connections past HELLO (``$PHUX_MAX_CONNECTIONS``,
    ``--max-connections``); the one over it gets ERROR RESOURCE_EXHAUSTED and is closed,
    unless an idle one makes room (``idle_close_s``)."""
    idle_close_s: float = field(default_factory=lambda: _env_float("PHUX_IDLE_CLOSE", 30.0))
    """At ``max_connections``, a new client takes the place of the connection silent the
    longest, if it has sent nothing for this long and holds nothing (no subscription, no
    input or reply waiting): it gets DETACHED(IDLE) (``$PHUX_IDLE_CLOSE``). Leaked or
    parked connections then cannot keep every new client out."""
    max_handshaking: int = field(default_factory=lambda: _env_int("PHUX_MAX_HANDSHAKING", 64))
    """Connections that have not sent HELLO yet (``$PHUX_MAX_HANDSHAKING``). They do not
    count against ``max_connections``; past this bound the oldest of them is closed for
    the newcomer (a client sends HELLO at once, so only a flood of idle ones is hit,
    and it cannot keep anyone out, as OpenSSH's MaxStartups keeps room for logins)."""
    max_handshaking_per_process: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_HANDSHAKING_PER_PROCESS", 8)
    )
    """Connections of one client process (SO_PEERCRED's pid) served before their HELLO at
    a time (``$PHUX_MAX_HANDSHAKING_PER_PROCESS``); its newer ones wait unread, in order,
    until one of these says HELLO or closes (phux.server.waiting_room): a process that
    floods connections without HELLO costs the server no work and others no place."""
    max_parked: int = field(default_factory=lambda: _env_int("PHUX_MAX_PARKED", 0))
    """Connections waiting past their process's share, all processes together
    (``$PHUX_MAX_PARKED``; 0: what the file descriptor limit leaves room for, at most
    16,384). Past it the newcomer's process (or, if it has none waiting, the process with
    the most) loses its oldest waiting one."""
    max_connections_per_process: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_CONNECTIONS_PER_PROCESS", 256)
    )
    """Open connections of one client process, by its pid from SO_PEERCRED
    (``$PHUX_MAX_CONNECTIONS_PER_PROCESS``): one runaway process cannot take every
    connection; the one over it gets ERROR RESOURCE_EXHAUSTED and is closed."""
    max_terminals: int = field(default_factory=lambda: _env_int("PHUX_MAX_TERMINALS", 4096))
    """Live terminals (``$PHUX_MAX_TERMINALS``); SPAWN over it gets RESOURCE_EXHAUSTED."""
    hello_timeout_s: float = field(default_factory=lambda: _env_float("PHUX_HELLO_TIMEOUT", 10.0))
    """A connection that has not sent HELLO this long after connecting gets ERROR
    HANDSHAKE_REQUIRED and is closed (``$PHUX_HELLO_TIMEOUT``, ``--hello-timeout``)."""
    max_hello_frame: int = 64 * 1024
    """The largest frame accepted before HELLO (HELLO and PING are small); a longer
    length is FRAME_TOO_LARGE at once instead of a partial frame held in memory."""
    max_partial_frames: int = field(
        default_factory=lambda: _env_int("PHUX_MAX_PARTIAL_FRAMES", 256 * MiB)
    )
    """Bytes all connections together may hold in frames that have not fully arrived
    (``$PHUX_MAX_PARTIAL_FRAMES``; a frame is counted at its announced length from its
    first bytes on). A frame over ``max_hello_frame`` that would pass it gets ERROR
    RESOURCE_EXHAUSTED (with its request id) and its connection is closed, so 1,000
    connections each holding most of a 16 MiB frame cannot make the server hold
    16 GiB; smaller frames always fit."""
    max_frame_items: int = 65536
    """Fields and list elements one client frame may hold, nested ones included
    (decoding is linear in them: a frame of millions of empty fields would stall the
    loop); over it the frame is MALFORMED_MESSAGE."""
    trim_interval_s: float = field(default_factory=lambda: _env_float("PHUX_TRIM_INTERVAL", 5.0))
    """How often the server looks whether its RSS grew and gives freed heap back to the
    system (``malloc_trim``; ``$PHUX_TRIM_INTERVAL``, 0: never)."""
    memory_fact_interval_s: float = 2.0
    """How often the server looks at its and its replica helpers' memory, to publish
    it as facts when it moved (``phux status`` of a server on another machine)."""
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
    name_quiet_s: float = field(default_factory=lambda: _env_float("PHUX_NAME_QUIET", 1.0))
    """A foreground's program read from /proc this long after the terminal's last input
    or output is taken to hold, while its group and tty modes do, by LIST_TERMINALS
    (``$PHUX_NAME_QUIET``; see Terminal.foreground)."""
    list_reread: int = field(default_factory=lambda: int(_env("PHUX_LIST_REREAD", "64")))
    """A whole listing reads the foreground again, besides those of terminals active
    since it was last read, for this many terminals, those read longest ago
    (``$PHUX_LIST_REREAD``; every terminal of a server with this many or fewer;
    see phux.server.listing)."""
    read_batch_bytes: int = 64 * 1024
    """A PTY read pass stops after this many bytes, so one flood cannot hog the loop."""
    echo_first_s: float = field(default_factory=lambda: _env_float("PHUX_ECHO_FIRST", 0.05))
    """After a client's INPUT, the terminals that flood wait up to this long for the
    typed-into terminal's echo to be read and sent before their next read pass
    (``$PHUX_ECHO_FIRST``; 0: never; phux.server.echo_first)."""
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

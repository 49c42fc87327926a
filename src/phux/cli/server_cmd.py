"""``phux server``: run the terminal server (foreground by default)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from phux.runtime_paths import default_audit_path, default_log_path, resolve_socket_path

LIMITS = """\
\b
Limits without an option, read from the server's environment (what passing one
does to the client that passes it: spec/proto.md §8, spec/L1.md §5.1, §7):
  PHUX_MAX_TERMINALS         live terminals (4096)
  PHUX_MAX_INPUT_BACKLOG     unacknowledged INPUT bytes per connection before
                             the server stops reading it (16 MiB)
  PHUX_MAX_TERMINAL_INPUT    INPUT bytes queued for one terminal (32 MiB)
  PHUX_MAX_INPUT_TOTAL       INPUT bytes queued for all terminals (128 MiB)
  PHUX_INPUT_UNIT_HOLD       seconds an input unit may wait for its next
                             piece before it is cut (10)
  PHUX_MAX_REPLY_BACKLOG     replies and events queued for a connection that
                             does not read (16 MiB)
  PHUX_MAX_CONNECTION_QUEUE  everything queued for one connection (64 MiB)
  PHUX_MAX_QUEUED_TOTAL      everything queued for all connections (512 MiB)
  PHUX_MAX_PARTIAL_FRAMES    bytes of incomplete incoming frames, all
                             connections together (256 MiB)
  PHUX_MAX_JOURNAL_TOTAL     output all terminals' journals hold (256 MiB)
  PHUX_TRIM_INTERVAL         seconds between looks at freed heap to give
                             back (5; 0: never)
  PHUX_NAME_QUIET            seconds of quiet after which a listing may give a
                             terminal's foreground as last read (1;
                             spec/L1.md §8.1)
  PHUX_LIST_REREAD           quiet terminals whose foreground a whole listing
                             reads again anyway, longest unread first (64)
  PHUX_ECHO_FIRST            seconds flooding terminals wait, after a client's
                             INPUT, for that terminal's echo to be read first
                             (0.05; 0: never)
  PHUX_REPLICA_IDLE_S        seconds a terminal's replica waits idle before it
                             keeps only its checkpoint; the helper process
                             goes once all do (5; 0: never)"""


@click.command("server", epilog=LIMITS)
@click.option(
    "--socket",
    "socket_path",
    metavar="PATH",
    help="Socket path (default: $PHUX_SOCKET, else $XDG_RUNTIME_DIR/phux/phux.sock, "
    "else /tmp/phux-$UID/phux.sock).",
)
@click.option("--daemon", is_flag=True, help="Detach; return once the socket accepts connections.")
@click.option(
    "--exit-after-idle",
    type=float,
    metavar="SECS",
    default=None,
    help="Exit after SECS with no terminals and no connections.",
)
@click.option(
    "--journal-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="Output bytes kept per terminal for bootstraps (default 4 MiB).",
)
@click.option(
    "--subscriber-queue-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Output a subscriber may fall behind before it is tombstoned (default 4 MiB).",
)
@click.option(
    "--retention",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECS",
    help="How long an exited terminal stays listed and subscribable (default 60).",
)
@click.option(
    "--replicas",
    type=click.Choice(["process", "thread", "off"]),
    default=None,
    help="Where the terminals' engine replicas run (checkpoints, answers to terminal "
    "queries); off disables both (default: $PHUX_REPLICAS, else process).",
)
@click.option(
    "--history-lines",
    type=click.IntRange(min=0),
    default=None,
    help="Scrollback rows a checkpoint keeps per terminal "
    "(default: $PHUX_HISTORY_LINES, else 2000).",
)
@click.option(
    "--replica-lag-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Output a replica may fall behind before the terminal's reader waits for it "
    "(default: $PHUX_REPLICA_LAG_BYTES, else 32 MiB).",
)
@click.option(
    "--hello-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECS",
    help="Close a connection that has not sent HELLO within SECS "
    "(default: $PHUX_HELLO_TIMEOUT, else 10).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=None,
    help="Refuse connections past HELLO beyond this many (default: $PHUX_MAX_CONNECTIONS, "
    "else 1000). Connections that have not sent HELLO yet are bounded apart "
    "($PHUX_MAX_HANDSHAKING, else 64: past it the oldest is closed for the newcomer); "
    "one client process has $PHUX_MAX_HANDSHAKING_PER_PROCESS (else 8) of them served at "
    "a time, its newer ones wait unread, in order ($PHUX_MAX_PARKED in all, else what the "
    "fd limit leaves room for, at most 16384); and "
    "one client process may hold at most $PHUX_MAX_CONNECTIONS_PER_PROCESS (else 256). "
    "When full, a new client takes the place of one idle for $PHUX_IDLE_CLOSE seconds "
    "(else 30) that holds no subscription.",
)
@click.option(
    "--shell-integration/--no-shell-integration",
    default=None,
    help="Whether shells started in panes get shell integration unless a pane opts out "
    "(default: off when $PHUX_SHELL_INTEGRATION is 0, else on).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Server log (default $XDG_STATE_HOME/phux/server.log for the default socket, "
    "server-HASH.log, HASH from the socket's path, for any other).",
)
@click.option(
    "--audit-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The input audit, JSON lines (default: audit-<socket hash>.jsonl beside the log).",
)
@click.option(
    "--no-audit",
    is_flag=True,
    help="Keep no input audit (`phux audit` then has nothing of this server).",
)
@click.option(
    "--audit-max-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Rotate the audit file at this size (default: $PHUX_AUDIT_MAX_BYTES, else 1 MiB; "
    "$PHUX_AUDIT_KEEP old files are kept, default 3).",
)
@click.option(
    "--audit-data/--no-audit-data",
    default=None,
    help="Also keep the input bytes in the audit, not only their count and SHA-256 "
    "(default: on when $PHUX_AUDIT_DATA is 1). They include typed passwords.",
)
def server_cmd(
    socket_path: str | None,
    daemon: bool,
    exit_after_idle: float | None,
    journal_bytes: int | None,
    subscriber_queue_bytes: int | None,
    retention: float | None,
    replicas: str | None,
    history_lines: int | None,
    replica_lag_bytes: int | None,
    hello_timeout: float | None,
    max_connections: int | None,
    shell_integration: bool | None,
    log_file: Path | None,
    audit_file: Path | None,
    no_audit: bool,
    audit_max_bytes: int | None,
    audit_data: bool | None,
) -> None:
    """Run the phux server."""
    from phux.server.app import run_server
    from phux.server.config import ServerConfig
    from phux.server.daemon import daemonize

    path = Path(resolve_socket_path(socket_path)).absolute()
    log_path = (log_file or Path(default_log_path(path))).absolute()
    audit_path = None
    if not no_audit:
        audit_path = (audit_file or Path(default_audit_path(path, log_path))).absolute()
    config = ServerConfig(
        socket_path=path,
        log_file=log_path,
        exit_after_idle_s=exit_after_idle,
        audit_file=audit_path,
    )
    if audit_max_bytes is not None:
        config = dataclasses.replace(config, audit_max_bytes=audit_max_bytes)
    if audit_data is not None:
        config = dataclasses.replace(config, audit_data=audit_data)
    if journal_bytes is not None:
        config = dataclasses.replace(config, journal_bytes=journal_bytes)
    if retention is not None:
        config = dataclasses.replace(config, retention_s=retention)
    if subscriber_queue_bytes is not None:
        config = dataclasses.replace(config, subscriber_queue_bytes=subscriber_queue_bytes)
    if replicas is not None:
        config = dataclasses.replace(config, replica_mode=replicas)
    if history_lines is not None:
        config = dataclasses.replace(config, history_lines=history_lines)
    if replica_lag_bytes is not None:
        config = dataclasses.replace(config, replica_lag_bytes=replica_lag_bytes)
    if hello_timeout is not None:
        config = dataclasses.replace(config, hello_timeout_s=hello_timeout)
    if max_connections is not None:
        config = dataclasses.replace(config, max_connections=max_connections)
    if shell_integration is not None:
        config = dataclasses.replace(config, shell_integration=shell_integration)
    if daemon:
        code = daemonize(
            lambda ready, error: run_server(
                config, foreground=False, on_ready=ready, on_error=error
            ),
            log_path,
        )
    else:
        code = run_server(config, foreground=True)
    if code:
        raise click.exceptions.Exit(code)

"""The phux server: a trio daemon that owns PTYs and carries their bytes.

It never interprets terminal output for its clients (see ARCHITECTURE.md and
spec/). Modules, from the outside in:

- ``app``: socket setup (directory checks, stale socket, one server per path
  by a lock file, mode 0600), the accept loop, signals, idle exit, shutdown.
- ``daemon``: ``--daemon`` (double fork, new session, stdio to the log,
  readiness through a pipe).
- ``connection``: one client: peer uid check, handshake, request dispatch,
  the sender task.
- ``subscriber``: a connection's ordered outbound queue; per-subscription
  byte accounting, tombstones and bootstrap rendering.
- ``state``: the registry and its atomic operations (spawn with unique keys,
  multi-terminal kill, listing, metadata writes).
- ``terminal``: one terminal: PTY reader, input writer, exit, resize,
  signals, and the ``output_hooks`` seam for server-side replicas.
- ``exits``: every terminal's process exit through one task (an epoll set of
  pidfds).
- ``journal``: sequence-numbered output and size changes; ``bootstrap()``
  returns the newest checkpoint and the output after it.
- ``replica``: an engine replica per terminal, off the loop (one helper
  process for all terminals by default, or a thread): checkpoints that
  compact journals, and the answers to DA1/DA2/DSR queries (spec/L1.md §5.1,
  §5.2); ``replica_worker`` is the helper's side (no trio), which puts idle
  replicas away, and an idle server lets its helper go.
- ``pty_process``, ``metadata``, ``config``, ``log``.

Defaults (``config.ServerConfig``): journal 4 MiB per terminal after its
newest checkpoint (``--journal-bytes``), replicas in a thread while output is
light and in a helper process while it is heavy (``$PHUX_REPLICAS``: auto,
process, thread or off) keeping 2000 scrollback rows
(``$PHUX_HISTORY_LINES``), a checkpoint after 64 KiB of output, a replica
put away after 5 s with nothing to do (``$PHUX_REPLICA_IDLE_S``), a terminal's
reader paused while its replica is 32 MiB behind (``--replica-lag-bytes``),
subscriber queue 4 MiB (``--subscriber-queue-bytes``),
closed-terminal retention 60 s (``--retention``), metadata values 64 KiB,
256 terminal and 256 metadata subscriptions per connection, SIGKILL 2 s after
a KILL's SIGHUP, 16 MiB of unacknowledged input per connection before the
server stops reading it, and the limits of issue 15 (HELLO deadline, connection
and terminal counts, input and reply queues, work per frame): see ``config``.
"""

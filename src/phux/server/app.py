"""The server process: socket setup, the accept loop, signals, idle exit and shutdown."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import signal
import socket
import stat
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from phux.runtime_paths import SocketDirError, ensure_socket_dir, open_lock_file, run_lock_dir
from phux.server.config import ServerConfig
from phux.server.connection import ClientConnection, peer_credentials
from phux.server.log import flush_throttled, log, setup_logging
from phux.server.memory import return_freed_memory
from phux.server.pty_process import raise_fd_limit, session_groups, signal_group
from phux.server.state import ServerState
from phux.server.waiting_room import Peer, WaitingRoom, default_bound
from phux.wire.errors import DetachReason

SEND_BUFFER_BYTES = 1024 * 1024
SHUTDOWN_GRACE_S = 2.0
"""At shutdown, how long terminals have to exit after SIGHUP and clients to get DETACHED."""


class ServerStartError(Exception):
    """The server cannot start (socket in use, unsafe directory, ...); the message says why."""


# ---------------------------------------------------------------- socket setup


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def acquire_lock(path: Path) -> int:
    """Hold an exclusive lock beside the socket for the server's life (one server per path)."""
    try:
        fd = open_lock_file(_lock_path(path))
    except OSError as exc:
        raise ServerStartError(f"cannot open the lock file {_lock_path(path)}: {exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ServerStartError(f"a phux server is already running on {path}") from None
    return fd


def reset_run_locks(path: Path) -> None:
    """An empty, private run-lock directory (a crashed server's lock files removed)."""
    directory = run_lock_dir(path)
    remove_run_locks(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)


def remove_run_locks(path: Path) -> None:
    """Remove the run-lock directory and the lock files in it (never following a link)."""
    directory = run_lock_dir(path)
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(directory)
        return
    for entry in os.scandir(directory):
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(directory)


def clear_stale_socket(path: Path) -> None:
    """Remove a socket file nobody listens on; refuse a live one or a non-socket."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ServerStartError(f"{path} exists and is not a socket; remove it or use another path")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        log.info("removing stale socket %s", path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise ServerStartError(f"cannot probe existing socket {path}: {exc}") from None
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    finally:
        probe.close()
    raise ServerStartError(f"a phux server is already listening on {path}")


def bind_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    except OSError as exc:
        sock.close()
        raise ServerStartError(f"cannot bind {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


# ---------------------------------------------------------------- the running server


async def _guard(what: str, fn: Callable[[], Awaitable[None]]) -> None:
    try:
        await fn()
    except Exception:
        log.exception("unexpected error in %s", what)


async def _accept_loop(
    listener: trio.SocketListener,
    state: ServerState[ClientConnection],
    server_id: str,
    task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
) -> None:
    config = state.config
    bound = config.max_parked or default_bound(config.max_terminals, config.max_connections)

    def serve(stream: trio.SocketStream, peer: Peer) -> None:
        with contextlib.suppress(OSError):  # bigger batches per send; capped by wmem_max
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        turn_over = functools.partial(room.handshake_over, peer[0])
        conn = ClientConnection(state, stream, server_id, peer, handshake_over=turn_over)
        state.nursery.start_soon(_guard, "connection", conn.run)

    room = WaitingRoom(config.max_handshaking_per_process, bound, serve)
    try:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:  # EMFILE and friends: wait a little, keep serving
                    log.error("accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                try:
                    pid, uid, _ = peer_credentials(stream.socket)
                except OSError as exc:
                    log.warning("refused connection: cannot read peer credentials: %s", exc)
                    stream.socket.close()
                    continue
                room.arrive(stream, (pid, uid))
    finally:
        room.close()


async def _watch_signals(state: ServerState[ClientConnection]) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if signum == signal.SIGHUP:
                log.info("ignoring %s", name)
                continue
            log.info("received %s", name)
            state.shutdown_requested.set()


async def _exit_when_idle(state: ServerState[ClientConnection], idle_s: float) -> None:
    idle_since: float | None = None
    while True:
        activity = state.activity
        if state.connections or state.live_terminals:
            idle_since = None
            await activity.wait()
            continue
        now = trio.current_time()
        if idle_since is None:
            idle_since = now
        remaining = idle_since + idle_s - now
        if remaining <= 0:
            log.info("idle for %.1fs: exiting", idle_s)
            state.shutdown_requested.set()
            return
        with trio.move_on_after(remaining):
            await activity.wait()


async def _shutdown(
    state: ServerState[ClientConnection],
    listener: trio.SocketListener,
    accepting: trio.CancelScope,
    path: Path,
) -> None:
    live, clients = state.live_terminals, len(state.connections)
    log.info("shutting down: %d terminals, %d clients", live, clients)
    accepting.cancel()
    await listener.aclose()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(OSError):
        remove_run_locks(path)
    terminals = [t for t in state.terminals.values() if not t.closed]
    # Every process in a terminal's session, background jobs in their own groups
    # included, gets SIGHUP (and SIGCONT, so a stopped one sees it), then SIGKILL if
    # it is still there when the grace period is over: nothing outlives the server.
    sessions = {t.pid for t in state.terminals.values()}
    for term in terminals:
        term.hangup()
    for pgrp in session_groups(sessions):
        signal_group(pgrp, signal.SIGHUP)
        signal_group(pgrp, signal.SIGCONT)
    for conn in list(state.connections):
        conn.close_with(DetachReason.SERVER_SHUTDOWN, "the server is shutting down")
    end = trio.current_time() + SHUTDOWN_GRACE_S
    with trio.move_on_at(end):
        while state.connections or state.live_terminals:
            await state.activity.wait()
    for term in terminals:
        if not term.closed:
            term.force_kill()
    while (left := session_groups(sessions)) and trio.current_time() < end:
        await trio.sleep(0.05)
    if left:
        log.info("shutdown: SIGKILL to %d process groups that survived SIGHUP", len(left))
    for pgrp in left:
        signal_group(pgrp, signal.SIGKILL)


def _publish_facts(state: ServerState[ClientConnection], server_id: str) -> None:
    """What ``phux status`` and ``phux doctor`` read and the wire does not carry
    (spec/L3.md §3); ``clients`` follows connections (ServerState.touch)."""
    from phux import __version__

    state.server_id = server_id
    config = state.config
    state.set_fact("version", __version__)
    state.set_fact("started_ms", str(time.time_ns() // 1_000_000))
    state.set_fact("replicas", config.replica_mode)
    if config.audit_file is not None:
        state.set_fact("audit_file", os.fspath(config.audit_file))
    state.set_fact("clients", "0")


async def serve(config: ServerConfig, on_ready: Callable[[], None] | None = None) -> None:
    path = config.socket_path
    try:
        ensure_socket_dir(path)
    except SocketDirError as exc:
        raise ServerStartError(str(exc)) from None
    raise_fd_limit()
    lock_fd = acquire_lock(path)
    try:
        clear_stale_socket(path)
        reset_run_locks(path)
        raw = bind_socket(path)
        inode = path.stat().st_ino
        server_id = uuid.uuid4().hex
        log.info("server %s started: pid %d socket %s", server_id, os.getpid(), path)
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(raw))
        try:
            async with trio.open_nursery() as nursery:
                state = ServerState[ClientConnection](config, nursery)
                _publish_facts(state, server_id)
                accepting = await nursery.start(_accept_loop, listener, state, server_id)
                nursery.start_soon(_watch_signals, state)
                if config.trim_interval_s > 0:
                    nursery.start_soon(return_freed_memory, config.trim_interval_s)
                nursery.start_soon(state.memory_facts.run, config.memory_fact_interval_s)
                if config.exit_after_idle_s is not None:
                    nursery.start_soon(_exit_when_idle, state, config.exit_after_idle_s)
                await trio.sleep(0)  # the signal receiver is installed before we say ready
                if on_ready is not None:
                    on_ready()
                await state.shutdown_requested.wait()
                await _shutdown(state, listener, accepting, path)
                state.replicas.stop()
                if state.audit is not None:
                    state.audit.close()
                nursery.cancel_scope.cancel()
        finally:
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_ino == inode:
                    path.unlink()
            with contextlib.suppress(OSError):
                remove_run_locks(path)
    finally:
        os.close(lock_fd)
        flush_throttled()
        log.info("server stopped")


def run_server(
    config: ServerConfig,
    *,
    foreground: bool = True,
    on_ready: Callable[[], None] | None = None,
    on_error: Callable[[str], None] | None = None,
) -> int:
    """Run the server until it is shut down; returns the process exit code."""
    setup_logging(config.log_file, foreground=foreground)
    try:
        trio.run(serve, config, on_ready)
    except ServerStartError as exc:
        log.info("cannot start: %s", exc)  # INFO: stderr gets the plain message below
        if on_error is not None:
            on_error(str(exc))
        else:
            print(f"phux server: cannot start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0

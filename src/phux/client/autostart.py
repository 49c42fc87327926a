"""Find or start the server, and stop it.

``ensure_server`` connects if it can; otherwise it runs ``python -m phux
server --daemon --socket P`` (which returns once the socket accepts) and
connects. Two clients auto-starting at once is fine: the loser's daemon fails
to take the socket, and both then connect to the winner.
"""

from __future__ import annotations

import os
import sys
import time

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    NoServer,
    ServerError,
    ServerStartFailed,
)
from phux.runtime_paths import resolve_socket_path
from phux.wire.frames import Shutdown


def server_running(socket: str | os.PathLike[str] | None, deadline: Deadline) -> bool:
    path = resolve_socket_path(socket)
    try:
        Connection.open(path, deadline).close()
    except NoServer:
        return False
    return True


def ensure_server(socket: str | os.PathLike[str] | None, deadline: Deadline) -> str:
    """The socket path of a running server, starting one if needed."""
    path = resolve_socket_path(socket)
    if server_running(path, deadline):
        return path
    import subprocess

    argv = [sys.executable, "-m", "phux", "server", "--daemon", "--socket", os.fspath(path)]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=deadline.remaining(),
            check=False,
        )
        reason = done.stderr.decode("utf-8", "replace").strip()
    except subprocess.TimeoutExpired:
        raise DeadlineExceeded(f"timed out starting the server on {path}") from None
    # Whatever the daemon said, a server may be there now (maybe another client's).
    delay = 0.005
    while True:
        if server_running(path, deadline):
            return path
        if deadline.expired() or (done.returncode != 0 and delay >= 0.2):
            raise ServerStartFailed(
                f"could not start a server on {path}: {reason or f'exit status {done.returncode}'}"
            )
        left = deadline.remaining()
        time.sleep(delay if left is None else min(delay, left))
        delay = min(delay * 2, 0.2)


def kill_server(socket: str | os.PathLike[str] | None, deadline: Deadline) -> bool:
    """Shut the server down; True if one was running (absent is success too)."""
    path = resolve_socket_path(socket)
    try:
        conn = Connection.open(path, deadline)
    except NoServer:
        return False
    try:
        conn.call(lambda rid: Shutdown(request_id=rid), deadline)
        # The server detaches us and closes: wait for that (bounded by the deadline).
        while True:
            conn.receive(deadline)
    except (ConnectionLost, ServerError):
        pass
    finally:
        conn.close()
    return True

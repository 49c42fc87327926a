"""``phux server --daemon``: detach properly and return once the socket accepts.

The parent forks; the child starts a new session and forks again, so the
server is not a session leader and can never acquire a controlling tty. The
server's stdio goes to its log file. Readiness (or the reason it failed) comes
back to the waiting parent through a pipe, written once the socket listens.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from phux.runtime_paths import open_private

READY = b"ok\n"
START_TIMEOUT_S = 30.0

ServerMain = Callable[[Callable[[], None], Callable[[str], None]], int]
"""``main(on_ready, on_error) -> exit code``: runs the server in the daemon process."""


def _read_all(fd: int, deadline: float) -> bytes:
    import select

    out = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return out
        readable, _, _ = select.select([fd], [], [], left)
        if not readable:
            return out
        data = os.read(fd, 4096)
        if not data:
            return out
        out += data


def _redirect_stdio(log_file: Path | None) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    target = devnull
    if log_file is not None:
        with contextlib.suppress(OSError):
            log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            target = open_private(log_file)
    os.dup2(target, 1)
    os.dup2(target, 2)
    for fd in {devnull, target}:
        if fd > 2:
            os.close(fd)


def daemonize(main: ServerMain, log_file: Path | None) -> int:
    """Run ``main`` in a detached grandchild; in the caller, return 0 once it is ready, else 1."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(write_end)
        try:
            message = _read_all(read_end, time.monotonic() + START_TIMEOUT_S)
        finally:
            os.close(read_end)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        if message == READY:
            return 0
        text = message.decode("utf-8", "replace").strip()
        print(f"phux server: {text or 'the daemon did not start (see its log)'}", file=sys.stderr)
        return 1
    # first child
    code = 1
    try:
        os.close(read_end)
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        # grandchild: the daemon
        os.chdir("/")
        _redirect_stdio(log_file)
        reported = False

        def on_ready() -> None:
            nonlocal reported
            if not reported:
                reported = True
                with contextlib.suppress(OSError):
                    os.write(write_end, READY)
                    os.close(write_end)

        def on_error(message: str) -> None:
            nonlocal reported
            if not reported:
                reported = True
                with contextlib.suppress(OSError):
                    os.write(write_end, message.encode("utf-8", "replace"))
                    os.close(write_end)

        code = main(on_ready, on_error)
        if not reported:
            on_error(f"the server exited with status {code} before it was ready")
    except BaseException as exc:
        with contextlib.suppress(Exception):
            print(f"phux server: daemon failed: {exc!r}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)

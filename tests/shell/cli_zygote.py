"""A process that has imported phux's CLI once and forks one child per command line:
each child runs ``phux ARGS`` as ``python -m phux ARGS`` does (``phux.cli.main.main``
with that argv, environment and working directory), in a process of its own, but
without paying for the interpreter's start and the CLI's imports again: under the
suite's load those were ~0.4 s of each CLI call, most of the real-config matrix's
time.

Run as ``python cli_zygote.py FD`` by ``cli_fork.CliForker``, which listens on the
unix socket FD and starts this with the environment and working directory its calls
use by default, so the imports see what ``python -m phux`` would. Each connection
sends one JSON line, ``{"argv": [...], "env": {...} | null, "cwd": "..." | null}``,
with three fds (stdin, stdout, stderr); this answers with the child's pid, then its
wait status, each a line. A child given an ``env`` or ``cwd`` takes them before it
runs the CLI (phux reads its environment when a verb runs, never at import).

A script, not a test module: it imports nothing of the tests, so a child holds only
what the CLI imports (and the verbs' lazy imports, done here once).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
from typing import Any

import phux.cli.app
import phux.cli.main
import phux.client.client
import phux.client.run
import phux.engine

MAIN = importlib.util.find_spec("phux.__main__")
assert MAIN is not None and MAIN.origin is not None
MAIN_PATH = MAIN.origin
"""What ``python -m phux`` puts in sys.argv[0]."""


def child(request: dict[str, Any], fds: list[int], keep_out: list[int]) -> None:
    """In the forked child: become ``python -m phux ARGV`` in the request's environment
    and working directory (or this process's); never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in keep_out:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        argv: list[str] = request["argv"]
        if request.get("env") is not None:
            os.environ.clear()  # (os.environ's writes reach the C environment too)
            os.environ.update(request["env"])
        if request.get("cwd") is not None:
            os.chdir(request["cwd"])
        sys.argv = [MAIN_PATH, *argv]
        sys.path[0] = os.getcwd()  # as -m has it (this script's folder is not on it)
        try:
            phux.cli.main.main()  # a quick verb exits in it (os._exit)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):  # as the interpreter reports one
                print(exc.code, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    finally:
        os._exit(code)


def serve(listener: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # (the wakeup fd is what wakes)
    waiting: dict[int, socket.socket] = {}
    parent = os.getppid()
    while os.getppid() == parent:  # (a test process that died leaves no zygote behind)
        ready, _, _ = select.select([listener, wake_r], [], [], 2.0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(f"{status}\n".encode())
                conn.close()
        if listener in ready:
            conn, _ = listener.accept()
            try:
                pid = start(conn, [listener.fileno(), wake_r, wake_w, *waiting_fds(waiting)])
            except (OSError, ValueError, EOFError) as exc:  # that caller's loss only
                print(f"cli_zygote: a request failed: {exc!r}", file=sys.stderr, flush=True)
                conn.close()
                continue
            waiting[pid] = conn
            with contextlib.suppress(OSError):
                conn.sendall(f"{pid}\n".encode())


def waiting_fds(waiting: dict[int, socket.socket]) -> list[int]:
    return [conn.fileno() for conn in waiting.values()]


def start(conn: socket.socket, keep_out: list[int]) -> int:
    """Read one request from ``conn`` and fork its child; the child's pid."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    try:
        while not data.endswith(b"\n"):  # (sent in one piece: it rarely comes in two)
            more = conn.recv(1 << 16)
            if not more:
                raise EOFError("the caller went away mid-request")
            data += more
        request = json.loads(data)
        if not isinstance(request, dict) or not isinstance(request.get("argv"), list):
            raise ValueError(f"not a request: {request!r}")
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} fds came, not 3")
        pid = os.fork()
        if pid == 0:
            conn.close()
            child(request, fds, keep_out)
        return pid
    finally:
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))

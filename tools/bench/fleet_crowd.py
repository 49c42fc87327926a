"""A crowd of connections to a phux server, held until stdin closes (for bench_fleet).

    python -m tools.bench.fleet_crowd idle COUNT SOCKET      # clients past HELLO, silent
    python -m tools.bench.fleet_crowd hostile COUNT SOCKET   # never HELLO, reconnect when cut

``idle``: COUNT connections that complete the handshake and then say and read
nothing (a server takes at most 256 from one process: run several). ``hostile``:
COUNT sockets that connect and send one byte of a frame header, never more; each
one the server closes (its HELLO deadline, or its room for waiting connections
full) is opened again (at most every 50 ms per round): a standing flood. Prints
``ready`` once all are open, then holds them until its stdin closes.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
import time

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.server.pty_process import raise_fd_limit


def _idle(count: int, path: str) -> None:
    held = []
    refused = 0
    for _ in range(count):
        try:
            held.append(Connection.open(path, Deadline.after(60), client_name="crowd"))
        except ServerError:  # past the server's limit: the crowd meets it, as it should
            refused += 1
    print("ready", flush=True)
    if refused:
        print(f"{refused} idle clients refused (the server's connection limit)", file=sys.stderr)
    sys.stdin.read()
    for conn in held:
        conn.close()


def _hostile(count: int, path: str) -> None:
    held: dict[int, socket.socket] = {}

    def fill() -> None:
        while len(held) < count:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(path)
                sock.send(b"\x00")
            except OSError:  # the backlog is full: the next round tries again
                sock.close()
                return
            held[sock.fileno()] = sock

    fill()
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while True:
        poller = select.poll()  # (select() cannot take fds past 1023)
        poller.register(stdin, select.POLLIN)
        for fd in held:
            poller.register(fd, select.POLLIN)
        events = poller.poll(50)
        if any(fd == stdin for fd, _ in events):
            break
        for fd, _ in events:
            sock = held.pop(fd)
            with contextlib.suppress(OSError):
                sock.recv(4096)
            sock.close()
        fill()
    for sock in held.values():
        sock.close()


def main() -> int:
    mode, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    raise_fd_limit(count + 256)
    start = time.monotonic()
    (_idle if mode == "idle" else _hostile)(count, path)
    print(f"held {mode} {count} for {time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.pop("PHUX_TERMINAL", None)
    sys.exit(main())

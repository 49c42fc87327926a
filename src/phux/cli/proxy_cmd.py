"""``phux proxy``: splice stdin/stdout to this machine's server socket.

What ``ssh HOST phux proxy`` runs on the far side of ``phux --host HOST``
(spec/transport.md): the bytes on the pipe are the bytes on the socket, in
both directions, untouched; a server is started first if none runs, as
``phux new`` does. It prints nothing else on stdout, ever.
"""

from __future__ import annotations

import _socket
import contextlib
import os
import sys
import threading

import click

from phux.cli.options import Verb

_CHUNK = 256 * 1024
_START_DEADLINE_S = 30.0


@click.command(
    "proxy",
    cls=Verb,
    short_help="Splice stdin/stdout to the local server (what --host runs over ssh).",
)
@click.option(
    "--socket",
    metavar="PATH",
    default=None,
    help="Server socket (default: $PHUX_SOCKET, else the per-user default).",
)
def proxy_cmd(socket: str | None) -> None:
    """Connect stdin and stdout to this machine's phux server, byte for byte.

    `phux --host HOST VERB ...` runs `ssh -T HOST phux proxy` and speaks the
    wire through it, so the server on HOST sees a client of the ssh user, as
    if it ran there. Starts the server if none runs. Exits when either side
    closes. Not for people: stdout carries the binary wire.
    """
    from phux.client.autostart import ensure_server
    from phux.client.deadline import Deadline
    from phux.client.errors import PhuxError

    try:
        path = ensure_server(socket, Deadline.after(_START_DEADLINE_S))
    except PhuxError as exc:
        sys.stderr.write(f"phux proxy: {exc.message}\n")
        raise SystemExit(1) from None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sys.stderr.write(f"phux proxy: cannot connect to {path}: {exc.strerror or exc}\n")
        raise SystemExit(1) from None
    splice(sys.stdin.fileno(), sys.stdout.fileno(), sock)


def splice(in_fd: int, out_fd: int, sock: _socket.socket) -> None:
    """Copy ``in_fd`` -> ``sock`` and ``sock`` -> ``out_fd`` until the socket side ends.

    End of input half-closes the socket (the server then ends the connection);
    the server closing ends the proxy, whatever its input is doing.
    """

    def upstream() -> None:
        with contextlib.suppress(OSError):
            while data := os.read(in_fd, _CHUNK):
                sock.sendall(data)
        with contextlib.suppress(OSError):
            sock.shutdown(_socket.SHUT_WR)

    # A daemon: blocked in read() on a pipe that never ends, it must not keep us alive.
    threading.Thread(target=upstream, name="phux-proxy-in", daemon=True).start()
    with contextlib.suppress(OSError):
        while data := sock.recv(_CHUNK):
            view = memoryview(data)
            while view:
                view = view[os.write(out_fd, view) :]
    with contextlib.suppress(OSError):
        sock.close()

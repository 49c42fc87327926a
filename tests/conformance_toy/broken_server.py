"""A deliberately broken phux server, to prove the conformance suite can fail.

It listens on a socket and relays every connection to a real phux server,
breaking a handful of clauses on the way (and nothing else):

- ``proto.md §5 request id 0``: a request with id 0 is relayed under a spare
  id and its reply is given back as id 0, so id 0 is accepted;
- ``proto.md §4 rule 3 version``: HELLO's minor version is rewritten to the
  server's, so a minor mismatch is accepted;
- ``L1.md §2 metadata order``: METADATA_KEYS entries come back in reverse
  key order.

``python -m tests.conformance_toy.broken_server LISTEN_PATH SERVER_PATH``
serves until killed. Test-only: never shipped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable

from phux.wire import MAX_FRAME, PROTOCOL_VERSION, WireError, decode_frame, encode_frame
from phux.wire.frames import Frame, Hello, MetadataKeys

Edit = Callable[[Frame], Frame]

SPARE_ID = 0xFFFFFF00
"""Where a request with id 0 is relayed (the suite never comes near it)."""


class Relay:
    def __init__(self, client: socket.socket, server_path: str) -> None:
        self.client = client
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.connect(server_path)

    def client_to_server(self) -> None:
        self._pump(self.client, self.server, self._from_client)

    def server_to_client(self) -> None:
        self._pump(self.server, self.client, self._from_server)

    def _pump(self, src: socket.socket, dst: socket.socket, edit: Edit) -> None:
        """Relay whole frames, rewriting only those ``edit`` changes; anything the
        codec rejects, and everything after lost framing, goes on byte for byte."""
        buf = bytearray()
        passthrough = False
        try:
            while data := src.recv(65536):
                if passthrough:
                    dst.sendall(data)
                    continue
                buf += data
                out = bytearray()
                while len(buf) >= 4:
                    length = int.from_bytes(buf[:4], "big")
                    if length == 0 or length > MAX_FRAME:
                        passthrough = True
                        out += buf
                        buf.clear()
                        break
                    if len(buf) < 4 + length:
                        break
                    raw = bytes(buf[: 4 + length])
                    del buf[: 4 + length]
                    try:
                        frame = decode_frame(raw)
                    except WireError:
                        out += raw
                        continue
                    edited = edit(frame)
                    out += raw if edited is frame else encode_frame(edited)
                dst.sendall(out)
        except OSError:
            pass
        finally:
            # Half-close: the other direction still delivers what the peer said last
            # (an ERROR before the server closes must reach the client).
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def _from_client(self, frame: Frame) -> Frame:
        if isinstance(frame, Hello) and frame.minor != PROTOCOL_VERSION[1]:
            return Hello(
                client_name=frame.client_name,
                major=frame.major,
                minor=PROTOCOL_VERSION[1],
                patch=frame.patch,
                capabilities=frame.capabilities,
            )
        if getattr(frame, "request_id", None) == 0:
            return _with_request_id(frame, SPARE_ID)
        return frame

    def _from_server(self, frame: Frame) -> Frame:
        if getattr(frame, "request_id", None) == SPARE_ID:
            return _with_request_id(frame, 0)
        if isinstance(frame, MetadataKeys) and len(frame.entries) > 1:
            return MetadataKeys(request_id=frame.request_id, entries=frame.entries[::-1])
        return frame


def _with_request_id(frame: Frame, request_id: int) -> Frame:
    values = {name: getattr(frame, name) for name in frame.__slots__}  # type: ignore[attr-defined]
    values["request_id"] = request_id
    return type(frame)(**values)


def serve(listen_path: str, server_path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(listen_path)
    os.chmod(listen_path, 0o600)
    listener.listen(64)
    while True:
        client, _ = listener.accept()
        relay = Relay(client, server_path)
        for target in (relay.client_to_server, relay.server_to_client):
            threading.Thread(target=target, daemon=True).start()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])

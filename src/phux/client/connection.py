"""A blocking connection to the server.

Blocking sockets rather than trio: the one-shot CLI verbs must not pay for
importing an event loop, and every call is bounded by the caller's Deadline.
Replies are matched to requests by id; frames pushed by the server (output,
bootstrap, lifecycle, metadata changes) that arrive while waiting for a reply
are kept, in order, for :meth:`Connection.receive`.
"""

from __future__ import annotations

import _socket  # the C socket type: the socket module's wrapper costs ~3 ms to import
import contextlib
import os
import sys
from collections import deque
from collections.abc import Callable, Mapping

from phux import __version__
from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    NoServer,
    ProtocolError,
    ServerError,
    UnsafeSocket,
)
from phux.runtime_paths import SocketDirError, check_socket_trust
from phux.wire.errors import ErrorCode, WireError
from phux.wire.frames import Detach, Error, Frame, Hello, HelloOk
from phux.wire.framing import FrameReader, encode_frame
from phux.wire.handshake import PROTOCOL_VERSION

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import TypeVar

    from phux.client.remote import SshLink

    F = TypeVar("F", bound=Frame)

_RECV_SIZE = 256 * 1024

# Frames that answer a request carry a request_id; a few frame types are
# either a reply or a pushed event depending on whether it is set.
_REPLY_FIELD = "request_id"


def _stepping_down(attempt: Callable[[int], Connection], first: int) -> Connection:
    """``attempt(minor)``, announcing the next older minor each time the server refuses
    the version, down to 0 (a 1.0 server wants an exact match; spec/proto.md §4)."""
    announce = first
    while True:
        try:
            return attempt(announce)
        except ServerError as exc:
            if exc.wire_code != ErrorCode.VERSION_INCOMPATIBLE or announce <= 0:
                raise
            announce -= 1


class Connection:
    def __init__(self, sock: _socket.socket, path: str, link: SshLink | None = None) -> None:
        self._sock = sock
        self.path = path
        """The socket path, or ``ssh://HOST`` for a server reached over ssh."""
        self._link = link
        self._reader = FrameReader()
        self._pushed: deque[Frame] = deque()
        self._replies: dict[int, Frame] = {}
        self._next_id = 1
        self._closed = False
        self._interrupted = False
        self.hello: HelloOk | None = None
        self.minor = PROTOCOL_VERSION[1]
        """The protocol minor this connection speaks (older against an older server)."""

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        deadline: Deadline,
        client_name: str = "phux",
        *,
        minor: int | None = None,
    ) -> Connection:
        """Connect and complete the handshake before ``deadline``.

        A server of an older minor than ours may refuse our HELLO (a 1.0 server
        wants an exact match): we connect again announcing the next older minor,
        down to 0, and speak that (``self.minor``); what the server cannot send
        then is simply absent (spec/proto.md §4 rule 3). ``minor`` announces an
        older minor from the start (tests and benchmarks of older clients).
        """
        first = PROTOCOL_VERSION[1] if minor is None else minor
        return _stepping_down(
            lambda announce: cls._open_once(path, deadline, client_name, announce), first
        )

    @classmethod
    def _open_once(
        cls, path: str | os.PathLike[str], deadline: Deadline, client_name: str, minor: int
    ) -> Connection:
        """One connection attempt announcing ``minor``.

        Nothing is sent to a socket another user could be behind: the socket
        and its directory must be this user's and private, and the listening
        process must run as this user (the server trusts only its own uid too).
        """
        try:
            if not check_socket_trust(path):
                raise NoServer(f"no server running on {path}")
        except SocketDirError as exc:
            raise UnsafeSocket(f"refusing to connect: {exc}") from None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(deadline.remaining())
            sock.connect(os.fspath(path))
            _check_peer(sock, os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise NoServer(f"no server running on {path}") from None
        except TimeoutError:
            sock.close()
            raise DeadlineExceeded(f"timed out connecting to {path}") from None
        except (DeadlineExceeded, UnsafeSocket):
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            raise NoServer(f"cannot connect to {path}: {exc.strerror or exc}") from None
        conn = cls(sock, os.fspath(path))
        try:
            conn._handshake(deadline, client_name, minor)
        except BaseException:
            conn.close()
            raise
        return conn

    @classmethod
    def open_host(
        cls,
        host: str,
        socket: str | None,
        deadline: Deadline,
        env: Mapping[str, str],
        client_name: str = "phux",
    ) -> Connection:
        """Reach the server on ``host`` through ``ssh HOST phux proxy`` (phux.client.remote)
        and complete the handshake before ``deadline``; ``socket`` is the far side's."""
        from phux.client.remote import RemoteFailed, open_ssh

        def attempt(announce: int) -> Connection:
            link = open_ssh(host, socket, deadline, env)
            conn = cls(link.sock, f"ssh://{host}", link)
            try:
                conn._handshake(deadline, client_name, announce)
                return conn
            except ServerError:
                conn.close()
                raise
            except (ConnectionLost, ProtocolError, DeadlineExceeded) as exc:
                failure = link.failure(f"no phux server answered over ssh: {exc.message}")
                conn.close()
                if isinstance(exc, DeadlineExceeded) and link.proc.returncode is None:
                    raise
                raise failure from None

        try:
            return _stepping_down(attempt, PROTOCOL_VERSION[1])
        except ServerError as exc:
            if exc.wire_code != ErrorCode.VERSION_INCOMPATIBLE:
                raise
            raise RemoteFailed(
                f"phux on {host} speaks another protocol version: {exc.message}",
                remedy=f"install the same phux version here and on {host}",
            ) from None

    def _handshake(self, deadline: Deadline, client_name: str, minor: int) -> None:
        major, _, patch = PROTOCOL_VERSION
        self.send(
            Hello(client_name=f"{client_name}/{__version__}", major=major, minor=minor, patch=patch)
        )
        frame = self._read_frame(deadline)
        if isinstance(frame, Error):
            raise ServerError(frame.code, frame.message)
        if not isinstance(frame, HelloOk):
            raise ProtocolError(f"expected HELLO_OK, got {type(frame).__name__}")
        self.hello = frame
        self.minor = minor

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.settimeout(0.0)  # best effort: never block on a wedged server
            self._sock.sendall(encode_frame(Detach()))
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._link is not None:
            self._link.close()

    def interrupt(self) -> None:
        """Shut the socket down so a call blocked on it (in any thread) raises ConnectionLost.

        Thread-safe and idempotent: ``shutdown`` wakes a blocked ``recv`` or
        ``send`` at once. The connection is unusable afterwards.
        """
        self._interrupted = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(_socket.SHUT_RDWR)

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ sending

    def new_request_id(self) -> int:
        rid = self._next_id
        self._next_id = rid + 1 if rid < 0xFFFFFFFF else 1
        return rid

    def send(self, frame: Frame, deadline: Deadline | None = None) -> None:
        # A non-blocking read may have left the socket in non-blocking mode:
        # always (re)set the timeout before a send, or a large frame fails EAGAIN.
        try:
            self._sock.settimeout(None if deadline is None else deadline.remaining())
            self._sock.sendall(encode_frame(frame))
        except TimeoutError:
            raise DeadlineExceeded("timed out sending to the server") from None
        except OSError as exc:
            raise self._lost(f"connection to the server lost: {exc}") from None

    def _lost(self, message: str) -> ConnectionLost:
        if self._interrupted:
            return ConnectionLost("the call was interrupted (the connection was shut down)")
        if self._link is not None and self.hello is not None:
            # The ssh link broke (killed, network gone): the far server and its panes
            # are unaffected, only this connection ended.
            return ConnectionLost(
                f"the ssh link to {self._link.host} ended ({message}); the panes there "
                "keep running",
                remedy="run the command again to reconnect",
            )
        return ConnectionLost(message)

    def submit(self, make: Callable[[int], Frame], deadline: Deadline | None = None) -> int:
        """Send the request ``make(request_id)`` and return its id without waiting."""
        rid = self.new_request_id()
        self.send(make(rid), deadline)
        return rid

    def call(self, make: Callable[[int], Frame], deadline: Deadline) -> Frame:
        """Send a request and wait for its reply; ERROR raises ServerError."""
        return self.wait_reply(self.submit(make, deadline), deadline)

    def call_expect(self, make: Callable[[int], Frame], kind: type[F], deadline: Deadline) -> F:
        reply = self.call(make, deadline)
        if not isinstance(reply, kind):
            raise ProtocolError(f"expected {kind.__name__}, got {type(reply).__name__}")
        return reply

    # ------------------------------------------------------------ receiving

    def wait_reply(self, request_id: int, deadline: Deadline) -> Frame:
        while request_id not in self._replies:
            self._dispatch(self._read_frame(deadline))
        reply = self._replies.pop(request_id)
        if isinstance(reply, Error):
            raise ServerError(reply.code, reply.message)
        return reply

    def receive(self, deadline: Deadline) -> Frame:
        """The next pushed (non-reply) frame."""
        while not self._pushed:
            self._dispatch(self._read_frame(deadline))
        return self._pushed.popleft()

    def poll(self) -> Frame | None:
        """A pushed frame if one is already here or readable without waiting."""
        if not self._pushed:
            with contextlib.suppress(DeadlineExceeded):
                self._dispatch(self._read_frame(Deadline(at=0.0), block=False))
        return self._pushed.popleft() if self._pushed else None

    def read_one(self, deadline: Deadline) -> None:
        """Block (until ``deadline``) for one frame and file it as a reply or a pushed frame."""
        self._dispatch(self._read_frame(deadline))

    def read_nowait(self) -> bool:
        """File one frame if it is already buffered or readable; False if none was."""
        try:
            self._dispatch(self._read_frame(Deadline(at=0.0), block=False))
        except DeadlineExceeded:
            return False
        return True

    def take_pushed(self) -> Frame | None:
        """The oldest pushed frame already read, without reading more."""
        return self._pushed.popleft() if self._pushed else None

    def take_reply(self, request_id: int) -> Frame | None:
        """The reply to ``request_id`` if it has been read (ERROR raises ServerError)."""
        reply = self._replies.pop(request_id, None)
        if isinstance(reply, Error):
            raise ServerError(reply.code, reply.message)
        return reply

    @property
    def closed(self) -> bool:
        return self._closed

    def fileno(self) -> int:
        return self._sock.fileno()

    @property
    def has_buffered(self) -> bool:
        return bool(self._pushed) or self._reader.buffered > 0

    def _dispatch(self, frame: Frame) -> None:
        if isinstance(frame, Error) and frame.request_id is None:
            # Not an answer: the server is closing the connection, or could not read a
            # frame of ours, whose request will never be answered and cannot be told
            # from the others. Either way nothing more can be trusted to come; fail
            # every call now with the server's reason, not at its deadline (proto.md §6).
            with contextlib.suppress(OSError):
                self._sock.close()
            self._closed = True
            try:
                name = ErrorCode(frame.code).name
            except ValueError:
                name = f"error {frame.code}"
            raise ConnectionLost(f"the server ended the connection: {name}: {frame.message}")
        rid = getattr(frame, _REPLY_FIELD, None)
        # BOOTSTRAP_BEGIN carries the SUBSCRIBE's id but is the start of a
        # stream, not a reply to wait for: it goes to the pushed frames too.
        if rid is not None and type(frame).__name__ != "BootstrapBegin":
            self._replies[rid] = frame
        else:
            self._pushed.append(frame)

    def _read_frame(self, deadline: Deadline, block: bool = True) -> Frame:
        while True:
            try:
                frame = self._reader.next_frame()
            except WireError as exc:
                raise ProtocolError(f"bad frame from the server: {exc}") from None
            if frame is not None:
                return frame
            try:
                self._sock.settimeout(deadline.remaining() if block else 0.0)
                data = self._sock.recv(_RECV_SIZE)
            except (TimeoutError, BlockingIOError):
                raise DeadlineExceeded("timed out waiting for the server") from None
            except OSError as exc:
                raise self._lost(f"connection to the server lost: {exc}") from None
            if not data:
                raise self._lost("the server closed the connection")
            self._reader.feed(data)


def _check_peer(sock: _socket.socket, path: str) -> None:
    """Refuse a listener that runs as another user (Linux: SO_PEERCRED)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:  # not Linux: the path checks above are all there is
        return
    # struct ucred {pid_t pid; uid_t uid; gid_t gid}: three native 32-bit ints
    # (read without struct, which would cost the one-shot verbs its import).
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)
    pid = int.from_bytes(raw[0:4], sys.byteorder, signed=True)
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    if uid != os.geteuid():
        raise UnsafeSocket(
            f"refusing to talk to {path}: the process listening on it "
            f"(pid {pid}) runs as uid {uid}, not as you (uid {os.geteuid()})"
        )


def connect(
    path: str | os.PathLike[str], deadline: Deadline, client_name: str = "phux"
) -> Connection:
    return Connection.open(path, deadline, client_name)

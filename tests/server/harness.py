"""Start a real ``phux server`` process on a socket in a temp dir, and always stop it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import PhuxError
from phux.wire import FrameReader, encode_frame
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    ExitStatus,
    Frame,
    Hello,
    HelloOk,
    Input,
    Output,
    Resized,
    Shutdown,
    Spawn,
    Subscribe,
    TerminalClosed,
    TerminalSpawned,
)

START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0
F = TypeVar("F", bound=Frame)


class ServerProcess:
    def __init__(
        self,
        directory: Path,
        *args: str,
        env: dict[str, str] | None = None,
        wrapper: list[str] | None = None,
    ) -> None:
        self.dir = directory
        self.socket = directory / "s"
        self.log = directory / "server.log"
        self.args = list(args)
        self.env = env
        self.wrapper = wrapper or []
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [*self.wrapper, sys.executable, "-m", "phux", "server", "--socket", str(self.socket)]
        argv += ["--log-file", str(self.log), *self.args]
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("SHELL", "/bin/sh")
        self.proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, cwd=self.dir)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"server exited with {self.proc.returncode}: {err}")
            if accepts(self.socket):
                return
            time.sleep(0.02)
        raise TimeoutError("server did not start")

    def connect(self, timeout: float = 5.0) -> Connection:
        return Connection.open(self.socket, Deadline.after(timeout), client_name="test")

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:  # a test at the connection limit may close its clients just before
                conn = self.connect(2.0)
            except PhuxError:
                time.sleep(0.05)
                continue
            with contextlib.suppress(Exception), conn:
                conn.call(lambda rid: Shutdown(request_id=rid), Deadline.after(2.0))
            break
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
            try:
                proc.wait(STOP_TIMEOUT)
                break
            except subprocess.TimeoutExpired:
                continue
        if proc.stderr:
            proc.stderr.close()


def interruptible() -> None:
    """A child's ``preexec_fn``: SIGINT as a terminal's foreground job has it. A test run
    started in the background by a shell without job control (``cmd &`` in a script, as a
    CI runner may be) ignores SIGINT, and a child inherits that: Ctrl-C (a test's SIGINT)
    would never reach, say, a recorder."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def accepts(path: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        sock.close()


@contextlib.contextmanager
def running_server(directory: Path, *args: str, **env: str) -> Iterator[ServerProcess]:
    """A server in ``directory``, with ``env`` added to this process's environment."""
    server = ServerProcess(directory, *args, env={**os.environ, **env} if env else None)
    try:
        server.start()
        yield server
    finally:
        server.stop()


# ---------------------------------------------------------------- client helpers


def spawn(conn: Connection, argv: list[str], timeout: float = 5.0, **kw: object) -> int:
    reply = conn.call_expect(
        lambda rid: Spawn(request_id=rid, argv=argv, **kw),  # type: ignore[arg-type]
        TerminalSpawned,
        Deadline.after(timeout),
    )
    return reply.terminal


def next_of(conn: Connection, kind: type[F], deadline: Deadline, **match: object) -> F:
    """The next pushed frame of ``kind`` (with fields equal to ``match``), skipping others."""
    while True:
        frame = conn.receive(deadline)
        if isinstance(frame, kind) and all(getattr(frame, k) == v for k, v in match.items()):
            return frame


def wait_exit(conn: Connection, terminal: int, timeout: float = 10.0) -> ExitStatus:
    """The exit status of a subscribed terminal: from TERMINAL_CLOSED, or from the
    bootstrap's READY when the terminal had already exited when subscribed."""
    deadline = Deadline.after(timeout)
    while True:
        frame = conn.receive(deadline)
        if getattr(frame, "terminal", None) != terminal:
            continue
        if isinstance(frame, TerminalClosed):
            return frame.status
        if isinstance(frame, BootstrapReady) and frame.exit is not None:
            assert not frame.alive
            return frame.exit
        # (A READY without exit and not alive: killed, not yet reaped; CLOSED follows.)


class Stream:
    """One terminal's byte stream as a subscriber sees it (bootstrap, then live)."""

    def __init__(self, terminal: int) -> None:
        self.terminal = terminal
        self.data = bytearray()
        self.start_seq = 0
        self.next_seq = 0
        self.sizes: list[tuple[int, int, int]] = []
        self.ready: BootstrapReady | None = None
        self.closed = False

    def feed(self, frame: Frame) -> None:
        if getattr(frame, "terminal", None) != self.terminal:
            return
        if isinstance(frame, BootstrapBegin):
            self.data.clear()
            self.start_seq = self.next_seq = frame.start_seq
            self.sizes = [(frame.start_seq, frame.cols, frame.rows)]
        elif isinstance(frame, BootstrapChunk | Output):
            assert frame.seq == self.next_seq, (frame.seq, self.next_seq)
            self.data += frame.data
            self.next_seq += len(frame.data)
        elif isinstance(frame, Resized):
            self.sizes.append((frame.seq, frame.cols, frame.rows))
        elif isinstance(frame, BootstrapReady):
            assert frame.next_seq == self.next_seq
            self.ready = frame


def subscribe(conn: Connection, terminal: int, **kw: object) -> int:
    return conn.submit(lambda rid: Subscribe(request_id=rid, terminal=terminal, **kw))  # type: ignore[arg-type]


def read_until(
    conn: Connection, stream: Stream, predicate: Callable[[Stream], bool], timeout: float = 10.0
) -> Stream:
    deadline = Deadline.after(timeout)
    while not predicate(stream):
        stream.feed(conn.receive(deadline))
    return stream


def raw_send(conn: Connection, frame: Frame) -> None:
    conn._sock.sendall(encode_frame(frame))


class RawClient:
    """A bare socket speaking frames, for tests that misbehave on purpose."""

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(os.fspath(path))
        self.reader = FrameReader()

    def send(self, data: bytes | Frame) -> None:
        self.sock.sendall(data if isinstance(data, bytes) else encode_frame(data))

    def hello(self) -> HelloOk:
        self.send(Hello(client_name="raw", major=1, minor=0, patch=0))
        reply = self.recv()
        assert isinstance(reply, HelloOk), reply
        return reply

    def recv(self, timeout: float = 5.0) -> Frame | None:
        """The next frame, or None at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.reader.next_frame()
            if frame is not None:
                return frame
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            data = self.sock.recv(1 << 16)
            if not data:
                return None
            self.reader.feed(data)

    def close(self) -> None:
        self.sock.close()


def paste_in_background(conn: Connection, tid: int, chunk: bytes, count: int) -> threading.Thread:
    """Send ``count`` INPUTs of ``chunk`` without reading the replies, from a thread: the
    server stops reading the connection once its input backlog is full, and the test
    goes on meanwhile (``conn.interrupt()`` ends the sending)."""

    def send() -> None:
        with contextlib.suppress(PhuxError, OSError):
            for _ in range(count):
                conn.submit(lambda rid: Input(request_id=rid, terminal=tid, data=chunk))

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread

"""Wire-level steps the tests share: spawn, subscribe + bootstrap, read output."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .catalog import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    EnvVar,
    Error,
    ErrorCode,
    Frame,
    MetaEntry,
    Output,
    Resized,
    Role,
    Spawn,
    Subscribe,
    TerminalClosed,
    TerminalSpawned,
)
from .wire_client import TIMEOUT, Conn, TimedOut


def check_error(frame: Frame, code: ErrorCode, request_id: int | None) -> Error:
    assert isinstance(frame, Error), f"expected ERROR {code.name}, got {frame!r}"
    assert frame.code == code, f"expected {code.name}, got {ErrorCode(frame.code)!r}: {frame}"
    assert frame.request_id == request_id
    return frame


def spawn(
    conn: Conn,
    cleanup: list[int],
    argv: list[str],
    *,
    cols: int = 80,
    rows: int = 24,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    metadata: dict[str, bytes] | None = None,
    unique_keys: list[str] | None = None,
) -> TerminalSpawned:
    rid = conn.rid()
    reply = conn.request(
        Spawn(
            request_id=rid,
            argv=argv,
            cwd=cwd,
            env=[EnvVar(name=k, value=v) for k, v in (env or {}).items()],
            cols=cols,
            rows=rows,
            metadata=[MetaEntry(key=k, value=v) for k, v in (metadata or {}).items()],
            unique_keys=unique_keys or [],
        )
    )
    assert isinstance(reply, TerminalSpawned), f"SPAWN {argv} failed: {reply!r}"
    assert reply.request_id == rid
    cleanup.append(reply.terminal)
    return reply


@dataclass
class Stream:
    """One subscriber's view of a terminal: bytes by seq, sizes, and where it is."""

    terminal: int
    start_seq: int = 0
    next_seq: int = 0
    data: bytearray = field(default_factory=bytearray)
    sizes: list[tuple[int, int, int]] = field(default_factory=list)
    """(seq, cols, rows) of the bootstrap start and every RESIZED."""
    alive: bool = True
    closed: TerminalClosed | None = None
    checkpoint: bytes = b""
    ready: BootstrapReady | None = None

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def _take(self, frame: Frame) -> None:
        if isinstance(frame, Output | BootstrapChunk):
            if isinstance(frame, BootstrapChunk) and frame.checkpoint:
                assert not self.data, "a checkpoint chunk must come first"
                assert frame.seq == self.start_seq
                self.checkpoint = frame.data
                return
            assert frame.seq == self.next_seq, (
                f"gap or duplicate: expected seq {self.next_seq}, got {frame.seq}"
            )
            self.data += frame.data
            self.next_seq += len(frame.data)
        elif isinstance(frame, Resized):
            assert frame.seq == self.next_seq, (
                f"RESIZED at seq {frame.seq} out of order (stream at {self.next_seq})"
            )
            self.sizes.append((frame.seq, frame.cols, frame.rows))
        elif isinstance(frame, TerminalClosed):
            assert frame.final_seq == self.next_seq, (
                f"TERMINAL_CLOSED final_seq {frame.final_seq} but {self.next_seq} bytes seen"
            )
            self.closed = frame
            self.alive = False

    def _mine(self, frame: Frame) -> bool:
        return (
            isinstance(frame, Output | Resized | TerminalClosed | BootstrapChunk)
            and frame.terminal == self.terminal
        )

    def pump(self, conn: Conn, timeout: float) -> None:
        """Take one frame of this terminal (OUTPUT, RESIZED, TERMINAL_CLOSED)."""
        self._take(conn.expect(self._mine, timeout=timeout, what=f"output of {self.terminal}"))

    def read_until(self, conn: Conn, needle: bytes, *, timeout: float = TIMEOUT) -> None:
        """Read live frames until ``needle`` appears in the bytes (or the terminal closes)."""
        deadline = time.monotonic() + timeout
        while needle not in self.data:
            if self.closed is not None:
                raise AssertionError(f"terminal closed before {needle!r}: {self.text()!r}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut(f"{needle!r} not seen within {timeout}s; got {self.text()!r}")
            self.pump(conn, left)

    def read_until_closed(self, conn: Conn, *, timeout: float = TIMEOUT) -> TerminalClosed:
        deadline = time.monotonic() + timeout
        while self.closed is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut(f"terminal {self.terminal} did not close within {timeout}s")
            self.pump(conn, left)
        return self.closed


def subscribe(
    conn: Conn,
    terminal: int,
    *,
    role: int = Role.VIEWER,
    cols: int | None = None,
    rows: int | None = None,
    input: bool = False,
) -> Stream:
    """SUBSCRIBE and consume the whole bootstrap; live output is read with the Stream.
    ``input`` asks for INPUT_WRITTEN too (1.3), which stays in ``conn.backlog``."""
    rid = conn.rid()
    conn.send(
        Subscribe(request_id=rid, terminal=terminal, role=role, cols=cols, rows=rows, input=input)
    )
    begin = conn.reply(rid)
    assert isinstance(begin, BootstrapBegin), f"SUBSCRIBE {terminal}: {begin!r}"
    assert begin.terminal == terminal
    stream = Stream(terminal=terminal, start_seq=begin.start_seq, next_seq=begin.start_seq)
    stream.sizes.append((begin.start_seq, begin.cols, begin.rows))

    def part(frame: Frame) -> bool:
        return (
            isinstance(frame, BootstrapChunk | Resized | BootstrapReady)
            and frame.terminal == terminal
        )

    while True:
        frame = conn.expect(part, what=f"bootstrap of {terminal}")
        if isinstance(frame, BootstrapReady):
            assert frame.next_seq == stream.next_seq, (
                f"BOOTSTRAP_READY next_seq {frame.next_seq} but chunks reached {stream.next_seq}"
            )
            stream.ready = frame
            stream.alive = frame.alive
            # Killed but not yet reaped: not alive, no exit yet (L1.md §3).
            assert not (frame.alive and frame.exit is not None)
            return stream
        stream._take(frame)

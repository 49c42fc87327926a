"""``run``: type a command into a POSIX shell, capture its exit code and whole output.

How it works:

* Markers. Each call draws a random token and types::

      printf '__phx%s_%s__\\n' B TOKEN; { COMMAND
      }; printf '__phx%s_%s_%s__\\n' E TOKEN "$?"

  The shell prints ``__phxB_TOKEN__`` and ``__phxE_TOKEN_<status>__``; what it
  echoes while the line is typed never contains those strings (the pieces are
  joined only by printf), so the echo cannot match. The braces keep the
  command in the current shell (``cd`` persists to the next run) and accept
  multi-line commands, here-documents and commands that read stdin.
* Capture. A capture-only VIEWER mirror (no engine) scans the raw output bytes
  for the markers as they arrive, and keeps every byte between them. Once the
  end marker arrives those bytes are replayed into a fresh engine of the
  terminal's size (RESIZED frames replayed at their offsets); its logical
  lines, including everything that scrolled into its history, are the output.
  So ``output`` is the command's whole rendered output, not the viewport.
  ``truncated`` is true only if bytes were lost (a lagging subscription whose
  re-bootstrap no longer had them) or the output exceeded the history limit.
* Timing. ``duration_ms`` runs from just before the INPUT is submitted until the
  frame carrying the end marker is read: the client blocks on the socket, no
  poll interval.
* Concurrency. Runs on one terminal are serialised with an advisory ``flock``
  on a per-terminal lock file in a private directory beside the server's
  socket (released by the kernel if the holder dies; the file is removed when
  the terminal closes, the directory when the server exits), so three agents
  running on one pane never type into each other's commands. The lock is held
  from before typing until the end marker arrived (or the run gave up).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time

from phux.client.deadline import Deadline
from phux.client.errors import (
    DeadlineExceeded,
    InvalidArgument,
    RunTimedOut,
    TerminalGone,
    UnsafeSocket,
    describe_exit,
)
from phux.record import Record
from phux.runtime_paths import SocketDirError, open_run_lock
from phux.wire.frames import Exited, ExitStatus

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.client.client import Client
    from phux.engine import ScreenState

# Rows of rendered output kept in memory at most (the "history limit" of run).
RUN_HISTORY_ROWS = 5_000_000
# Bytes of output kept at most before the oldest are dropped (marks truncated).
RUN_CAPTURE_BYTES = 256 * 1024 * 1024
_ENGINE_HISTORY = 4_000
_FEED_SLICE = 2_048

BEFORE, CAPTURING, DONE = "before", "capturing", "done"


class RunOutcome(Record):
    """What a completed ``run`` found: the fields of ``RunResult``, its JSON shape.

    A record rather than the msgspec Struct itself, so that ``phux run``
    without ``--json`` does not import msgspec.
    """

    command: str
    exit_code: int
    output: str
    duration_ms: int
    truncated: bool


def wrap_command(command: str, token: str) -> str:
    return (
        f" printf '__phx%s_%s__\\n' B {token}; {{ {command}\n"
        f"}}; printf '__phx%s_%s_%s__\\n' E {token} \"$?\"\n"
    )


class MarkerScanner:
    """Finds the begin/end markers in the raw byte stream and keeps what is between."""

    def __init__(self, token: str, cols: int, rows: int) -> None:
        self.begin = f"__phxB_{token}__".encode()
        self.end_re = re.compile(rb"__phxE_" + token.encode() + rb"_([0-9]+)__")
        self.end_len = len(self.begin) + 24
        self.scan_seq: int | None = None
        self.phase = BEFORE
        self.window = bytearray()
        self.capture = bytearray()
        self.dropped = 0
        self.size = (cols, rows)
        self.begin_size = (cols, rows)
        self.resizes: list[tuple[int, int, int]] = []
        self.truncated = False
        self.maybe_begin = False
        self.exit_code: int | None = None
        self.done_at: float | None = None
        self.output: bytes = b""

    def start(self, seq: int) -> None:
        self.scan_seq = seq

    def feed(self, seq: int, data: bytes) -> None:
        if self.scan_seq is None or self.phase == DONE:
            return
        end = seq + len(data)
        if end <= self.scan_seq:
            return
        if seq > self.scan_seq:
            self.gap(self.scan_seq)
        skip = self.scan_seq - seq
        if skip > 0:
            data = data[skip:]
        self.scan_seq = end
        if self.phase == BEFORE:
            self.window += data
            idx = self.window.find(self.begin)
            if idx < 0:
                keep = len(self.begin) - 1
                if len(self.window) > keep:
                    del self.window[:-keep]
                return
            rest = bytes(self.window[idx + len(self.begin) :])
            self.window.clear()
            self.phase = CAPTURING
            self.begin_size = self.size
            self.resizes = []
            self._capture(rest)
        else:
            self._capture(data)

    def _capture(self, data: bytes) -> None:
        capture = self.capture
        start = max(0, len(capture) - self.end_len)
        capture += data
        if self.maybe_begin:
            idx = capture.find(self.begin)
            if idx >= 0:
                del capture[: idx + len(self.begin)]
                self.maybe_begin = False
                self.truncated = False
                self.begin_size = self._size_at(idx)
                self.resizes = [(o - idx, c, r) for (o, c, r) in self.resizes if o > idx]
                start = 0
        match = self.end_re.search(capture, start)
        if match is not None:
            self.exit_code = min(int(match.group(1)), 255)
            self.output = bytes(capture[: match.start()])
            self.phase = DONE
            self.done_at = time.monotonic()
            return
        if len(capture) > RUN_CAPTURE_BYTES:
            cut = len(capture) - RUN_CAPTURE_BYTES // 2
            cut = max(capture.find(b"\n", cut) + 1, cut)
            del capture[:cut]
            self.begin_size = self._size_at(cut)
            self.resizes = [(o - cut, c, r) for (o, c, r) in self.resizes if o > cut]
            self.truncated = True

    def _size_at(self, offset: int) -> tuple[int, int]:
        size = self.begin_size
        for o, c, r in self.resizes:
            if o <= offset:
                size = (c, r)
        return size

    def resize(self, seq: int, cols: int, rows: int) -> None:
        self.size = (cols, rows)
        if self.phase == CAPTURING:
            self.resizes.append((len(self.capture), cols, rows))

    def gap(self, lost_seq: int) -> None:
        """Bytes from ``lost_seq`` on will not arrive (a tombstone, or a bootstrap gap)."""
        if self.scan_seq is None or self.phase == DONE:
            return
        if self.phase == BEFORE:
            # The begin marker may have been in the lost bytes: capture from here,
            # and drop that if the marker turns up after all.
            self.phase = CAPTURING
            self.begin_size = self.size
            self.maybe_begin = True
        self.truncated = True

    def rebase(self, seq: int) -> None:
        """A re-bootstrap restarts the stream at ``seq`` (ignore what we already saw)."""
        if self.scan_seq is not None and seq > self.scan_seq:
            self.gap(self.scan_seq)
            self.scan_seq = seq


def _join_logical(rows: list[str], wrapped: list[bool]) -> list[str]:
    out: list[str] = []
    for text, cont in zip(rows, wrapped, strict=True):
        if cont and out:
            out[-1] += text
        else:
            out.append(text)
    return [line.rstrip(" ") for line in out]


# Plain output up to this size is rendered without the engine (see _render_plain).
_PLAIN_LIMIT = 256 * 1024
_PLAIN_ROW = re.compile(rb"[\x20-\x7e]*")


def _render_plain(data: bytes, cols: int) -> str | None:
    """The rendering of printable-ASCII rows separated by CR LF, each narrower than the
    terminal, without the engine (and without importing it); None for anything else.

    Such bytes draw each row at the left margin and never wrap, so the engine would
    produce exactly these rows, right-trimmed, minus an empty last row the cursor
    sits at the start of (``render_output`` keeps rows up to the cursor's).
    """
    if len(data) > _PLAIN_LIMIT:
        return None
    pieces = data.split(b"\r\n")
    fullmatch = _PLAIN_ROW.fullmatch
    for piece in pieces:
        if len(piece) >= cols or fullmatch(piece) is None:
            return None
    if not pieces[-1]:
        pieces.pop()
    return "\n".join(piece.decode("ascii").rstrip(" ") for piece in pieces)


def render_output(
    data: bytes,
    cols: int,
    rows: int,
    resizes: list[tuple[int, int, int]] | None = None,
) -> tuple[str, bool]:
    """Replay captured bytes into a fresh engine; return (logical text, rows were dropped)."""
    if not resizes:
        plain = _render_plain(data, max(cols, 1))
        if plain is not None:
            return plain, False
    return _render_engine(data, cols, rows, resizes)


def _render_engine(
    data: bytes,
    cols: int,
    rows: int,
    resizes: list[tuple[int, int, int]] | None = None,
) -> tuple[str, bool]:
    from phux.engine import Terminal

    engine = Terminal(max(cols, 1), max(rows, 1), history=_ENGINE_HISTORY)
    all_rows: list[str] = []
    all_wrapped: list[bool] = []
    dropped = False
    points = sorted(resizes or [])
    pos = 0
    bounds = [o for o, _, _ in points] + [len(data)]
    for index, stop in enumerate(bounds):
        while pos < stop:
            end = min(stop, pos + _FEED_SLICE)
            engine.feed(data[pos:end])
            pos = end
            if engine.history_size >= _ENGINE_HISTORY // 2:
                h_rows, h_wrapped = engine.drain_history()
                all_rows += h_rows
                all_wrapped += h_wrapped
                if len(all_rows) > RUN_HISTORY_ROWS:
                    cut = len(all_rows) - RUN_HISTORY_ROWS
                    del all_rows[:cut]
                    del all_wrapped[:cut]
                    dropped = True
        if index < len(points):
            _, new_cols, new_rows = points[index]
            engine.resize(max(new_cols, 1), max(new_rows, 1))
    h_rows, h_wrapped = engine.drain_history()
    all_rows += h_rows
    all_wrapped += h_wrapped
    state = engine.project_data()
    screen_rows = [engine.screen.row_text(y) for y in range(engine.rows)]
    wrapped_set = set(state["wrapped"])
    last = -1
    for y, text in enumerate(screen_rows):
        if text.strip():
            last = y
    cursor = engine.screen.cursor
    last = max(last, cursor.y if cursor.x > 0 else cursor.y - 1)
    all_rows += screen_rows[: last + 1]
    all_wrapped += [y in wrapped_set for y in range(last + 1)]
    lines = _join_logical(all_rows, all_wrapped)
    return "\n".join(lines), dropped


def _status_code(status: ExitStatus | None) -> int:
    if status is None:
        return 255
    if isinstance(status, Exited):
        return min(max(status.code, 0), 255)
    return min(128 + status.signal, 255)


class RunLock:
    """An advisory per-terminal flock; the kernel drops it if the holder dies.

    The file lives in the server's private run-lock directory beside the
    socket (``phux.runtime_paths.run_lock_dir``), opened without following
    symlinks; the server removes it when the terminal closes.
    """

    def __init__(self, socket_path: str, terminal: int) -> None:
        self.socket_path = socket_path
        self.terminal = terminal
        self.fd: int | None = None

    def acquire(self, deadline: Deadline) -> None:
        try:
            fd = open_run_lock(self.socket_path, self.terminal)
        except SocketDirError as exc:
            raise UnsafeSocket(str(exc)) from None
        delay = 0.002
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = deadline.remaining()  # raises DeadlineExceeded when past
                    time.sleep(delay if left is None else min(delay, left))
                    delay = min(delay * 2, 0.05)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _timeout_screen(scanner: MarkerScanner, pane_id: int) -> ScreenState | None:
    if scanner.phase == BEFORE:
        return None
    from phux.engine import Terminal

    cols, rows = scanner.begin_size
    engine = Terminal(max(cols, 1), max(rows, 1), history=1000)
    engine.feed(bytes(scanner.capture[-1_000_000:]))
    return engine.project(pane=pane_id)


def run_command(
    client: Client,
    target: str,
    command: str,
    *,
    timeout: float | None,
    deadline: Deadline,
) -> RunOutcome:
    if not command.strip():
        raise InvalidArgument(
            "run needs a command", remedy="give the command line, e.g. phux run work 'make test'"
        )
    if "\x00" in command:
        raise InvalidArgument("the command contains a NUL byte")
    started = time.monotonic()
    run_deadline = deadline.earliest(Deadline.after(timeout))
    pane = client.resolve(target, deadline)
    if not pane.alive:
        raise TerminalGone(f"terminal {pane.id} has exited")
    client.used(pane, deadline)
    token = os.urandom(8).hex()  # what secrets.token_hex(8) does, without importing it
    scanner = MarkerScanner(token, pane.cols, pane.rows)
    lock = RunLock(client.local_anchor, pane.terminal)
    submitted: float | None = None

    def gave_up() -> RunTimedOut:
        since = submitted if submitted is not None else started
        elapsed = int((time.monotonic() - since) * 1000)
        return RunTimedOut(command, elapsed, _timeout_screen(scanner, pane.terminal))

    try:
        lock.acquire(run_deadline)
    except DeadlineExceeded:
        raise gave_up() from None
    try:
        try:
            mirror = client.mirror(pane, run_deadline, engine=False)
        except DeadlineExceeded:
            raise gave_up() from None
        try:
            scanner.size = scanner.begin_size = (mirror.cols, mirror.rows)
            mirror.bytes_hooks.append(scanner.feed)
            mirror.resize_hooks.append(scanner.resize)
            mirror.gap_hooks.append(scanner.gap)
            scanner.start(mirror.next_seq)
            if not mirror.alive:
                raise TerminalGone(f"terminal {pane.id} has exited")
            submitted = time.monotonic()
            try:
                client.write(pane, wrap_command(command, token).encode(), run_deadline)
                while scanner.phase != DONE and mirror.alive:
                    client.pump(run_deadline)
            except DeadlineExceeded:
                raise gave_up() from None
        finally:
            mirror.bytes_hooks.remove(scanner.feed)
            mirror.resize_hooks.remove(scanner.resize)
            mirror.gap_hooks.remove(scanner.gap)
            client.release(mirror)
    finally:
        lock.release()
    if scanner.phase == DONE:
        exit_code = scanner.exit_code if scanner.exit_code is not None else 255
        data = scanner.output
        done_at = scanner.done_at or time.monotonic()
    elif mirror.exit is not None and not isinstance(mirror.exit, Exited):
        # A signal ended the pane's shell (`kill -9 $$`, `phux kill`): the command
        # never reported a status, and 128+N would read as if it had exited so.
        raise TerminalGone(
            f"the pane {pane.id} died during run: its shell {describe_exit(mirror.exit)}"
            " before the command finished",
            remedy="read what it left with `phux snapshot TARGET`; start a new pane with "
            "`phux new`",
        )
    else:
        # The shell ended before printing the end marker (the command ran `exit`).
        exit_code = _status_code(mirror.exit)
        data = bytes(scanner.capture)
        done_at = time.monotonic()
    lead = 2 if data.startswith(b"\r\n") else 1 if data.startswith(b"\n") else 0
    data = data[lead:]
    resizes = [(max(0, o - lead), c, r) for (o, c, r) in scanner.resizes]
    cols, rows = scanner.begin_size
    output, dropped = render_output(data, cols, rows, resizes)
    duration_ms = max(0, int((done_at - (submitted or started)) * 1000))
    return RunOutcome(
        command=command,
        exit_code=exit_code,
        output=output,
        duration_ms=duration_ms,
        truncated=scanner.truncated or dropped,
    )

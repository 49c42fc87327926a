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
    PhuxError,
    RunTimedOut,
    ShellNotReady,
    TerminalGone,
    UnsafeSocket,
    describe_exit,
)
from phux.client.typeahead import Typeahead, echo_mode, without_echoes
from phux.record import Record
from phux.runtime_paths import SocketDirError, open_run_lock
from phux.signed_marks import unsigned
from phux.wire.frames import Exited, ExitStatus

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from phux.client.core import ClientCore
    from phux.client.errors import PaneDied
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.client.shell_scan import ShellView
    from phux.engine import ScreenState, Terminal
    from phux.wire.frames import Foreground

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
        self.capture_seq: int | None = None
        """The output seq of ``capture``'s first byte (None: unknown, bytes were lost)."""

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
            self.capture_seq = end - len(rest)
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
            if self.capture_seq is not None:
                self.capture_seq += cut
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
        self.capture_seq = None
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
    clears = [m.start() for m in _CLEAR.finditer(data)]
    for index, stop in enumerate(bounds):
        while pos < stop:
            end = min(stop, pos + _FEED_SLICE)
            if clears and clears[0] < end:
                end = max(clears.pop(0), pos)
                # The screen is about to be erased (`clear`): what it shows now is
                # output too, kept as if it had scrolled off.
                engine.feed(data[pos:end])
                pos = end
                _keep_screen(engine, all_rows, all_wrapped)
                continue
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
    _keep_screen(engine, all_rows, all_wrapped)
    if len(all_rows) > RUN_HISTORY_ROWS:
        cut = len(all_rows) - RUN_HISTORY_ROWS
        del all_rows[:cut]
        del all_wrapped[:cut]
        dropped = True
    lines = _join_logical(all_rows, all_wrapped)
    return "\n".join(lines), dropped


_CLEAR = re.compile(rb"\x1b\[[23]J|\x1bc")
"""Erase the whole display (ED 2, ED 3: `clear`) or reset the terminal (RIS)."""


def _keep_screen(engine: Terminal, all_rows: list[str], all_wrapped: list[bool]) -> None:
    """Append the engine's history, then its screen's rows down to the last one written
    (or the cursor's, when it is past the row's start)."""
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

    def __init__(self, socket_path: str, terminal: int | str) -> None:
        # (a name instead of a terminal id: another lock of the server's, ``notes``)
        self.socket_path = socket_path
        self.terminal = terminal
        self.fd: int | None = None

    def acquire(self, deadline: Deadline) -> bool:
        """Take the lock; returns whether another run held it first (so what was
        read about the pane before may be stale)."""
        try:
            fd = open_run_lock(self.socket_path, self.terminal)
        except SocketDirError as exc:
            raise UnsafeSocket(str(exc)) from None
        delay = 0.002
        waited = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = True
                    left = deadline.remaining()  # raises DeadlineExceeded when past
                    time.sleep(delay if left is None else min(delay, left))
                    delay = min(delay * 2, 0.05)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return waited

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


# ---------------------------------------------------------------- the command line


_SAFE_WORD = re.compile(r"[A-Za-z0-9@+=:,./_-]+")


def quote_word(word: str, *, fish: bool = False) -> str:
    """``word`` as one literal shell word (shlex.quote's rule; fish's own quoting for fish).

    A word starting with ``=`` is quoted too (zsh expands ``=cmd``), and ``%`` always
    (fish expands ``%self``).
    """
    if _SAFE_WORD.fullmatch(word) and not word.startswith("="):
        return word
    if fish:  # fish reads \\ and \' inside single quotes
        return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + word.replace("'", "'\"'\"'") + "'"


def command_line(command: str | Sequence[str], shell: str | None = None) -> str:
    """What ``run`` types: one word is a shell command line as given; several words
    are each quoted, so ``run t echo "it's"`` prints ``it's``."""
    if isinstance(command, str):
        return command
    words = list(command)
    if len(words) == 1:
        return words[0]
    fish = shell == "fish"
    return " ".join(quote_word(word, fish=fish) for word in words)


# ---------------------------------------------------------------- OSC 133 marks


_MARK_MAX = 1 << 20
"""Longest mark (its command line included) looked for across reads."""
# OSC 133 marks, and OSC 7 (kind "7"): the integration prints it once per prompt
# cycle, before the prompt's A and never when the editor only redraws the prompt,
# so it tells a new prompt after a line that ran nothing (a comment, a syntax
# error: no C, no D in bash and zsh) from the same prompt drawn again.
_MARK = re.compile(rb"\x1b\](?:133;([A-D])|7;)([^\x07\x1b]*)(?:\x07|\x1b\\)")


class Mark(Record):
    """One OSC 133 mark in the captured stream (offsets are absolute capture offsets)."""

    kind: str
    params: str
    start: int
    end: int
    at: float


class MarkScanner:
    """Keeps every output byte after the command was typed and finds the OSC 133 marks.

    The bytes between a C mark and its D mark are the command's output: they are
    replayed into a fresh engine of the terminal's size (RESIZED frames at their
    offsets) like the marker path's capture, so the output is whole, not the
    viewport, however long it is.
    """

    def __init__(self, cols: int, rows: int, key: str | None = None) -> None:
        self.key = key
        """The pane's mark key: OSC 133 marks without it are output (phux.signed_marks)."""
        self.buf = bytearray()
        self.base = 0  # bytes dropped from the front of buf
        self.scan = 0  # absolute offset scanning resumes at
        self.marks: list[Mark] = []
        self.scan_seq: int | None = None
        self.size = (cols, rows)
        self.start_size = (cols, rows)
        self.resizes: list[tuple[int, int, int]] = []
        self.lost: list[int] = []  # absolute offsets where bytes were lost or dropped
        self.anchors: list[tuple[int, int]] = []  # (seq, absolute offset) where they part
        self.typeahead: Typeahead | None = None
        """Other clients' keys: their echo is cut from what ``render`` renders."""

    @property
    def end(self) -> int:
        return self.base + len(self.buf)

    def start(self, seq: int) -> None:
        self.scan_seq = seq
        self.anchors.append((seq, self.end))

    def offset_of(self, seq: int) -> int:
        """The absolute capture offset of output byte ``seq``."""
        at_seq, at = self.anchors[0]
        for s, o in self.anchors:
            if s <= seq:
                at_seq, at = s, o
        return at + seq - at_seq

    def feed(self, seq: int, data: bytes) -> None:
        if self.scan_seq is None:
            return
        stop = seq + len(data)
        if stop <= self.scan_seq:
            return
        if seq > self.scan_seq:
            self.lost.append(self.end)
            self.anchors.append((seq, self.end))
        skip = self.scan_seq - seq
        if skip > 0:
            data = data[skip:]
        self.scan_seq = stop
        self.buf += data
        if len(self.buf) > RUN_CAPTURE_BYTES:
            cut = len(self.buf) - RUN_CAPTURE_BYTES // 2
            self.start_size = self._size_at(self.base + cut)
            del self.buf[:cut]
            self.base += cut
            self.lost.append(self.base)
        self._find()

    def _find(self) -> None:
        buf, base = self.buf, self.base
        pos = max(self.scan, base) - base
        now = time.monotonic()
        for match in _MARK.finditer(buf, pos):
            pos = match.end()
            params = match.group(2).decode("utf-8", "replace")
            kind = match.group(1)
            if kind is not None:  # OSC 133 (OSC 7 is not signed)
                signed = unsigned(params.removeprefix(";"), self.key)
                if signed is None:
                    continue  # printed by a program, not by the pane's shell
                params = ";" + signed if signed else ""
            self.marks.append(
                Mark(
                    kind=(kind or b"7").decode(),
                    params=params,
                    start=base + match.start(),
                    end=pos,
                    at=now,
                )
            )
        # Resume at an unterminated OSC (a mark split between reads), else near the end.
        pending = buf.rfind(b"\x1b", pos)
        if pending >= 0 and len(buf) - pending < _MARK_MAX:
            self.scan = base + pending
        else:
            self.scan = base + len(buf)

    def resize(self, seq: int, cols: int, rows: int) -> None:
        self.size = (cols, rows)
        self.resizes.append((self.end, cols, rows))

    def gap(self, lost_seq: int) -> None:
        self.lost.append(self.end)

    def _size_at(self, offset: int) -> tuple[int, int]:
        size = self.start_size
        for o, c, r in self.resizes:
            if o <= offset:
                size = (c, r)
        return size

    def render(self, start: int, stop: int) -> tuple[str, bool]:
        """The rendered logical lines of the bytes in [start, stop); and whether some were lost."""
        lost = any(start < o <= stop for o in self.lost) or start < self.base
        start = max(start, self.base)
        data = bytes(self.buf[start - self.base : max(start, stop) - self.base])
        cols, rows = self._size_at(start)
        resizes = [(o - start, c, r) for (o, c, r) in self.resizes if start < o < stop]
        if self.typeahead is not None:
            typed = [(self.offset_of(seq) - start, e) for seq, e in self.typeahead.foreign]
            data, resizes = without_echoes(data, typed, resizes)
        output, dropped = render_output(data, cols, rows, resizes)
        return output, lost or dropped


def _mark_status(mark: Mark) -> int | None:
    first = mark.params.lstrip(";").split(";", 1)[0]
    try:
        return min(max(int(first), 0), 255) if first and "=" not in first else None
    except ValueError:
        return None


def _continuation(mark: Mark) -> bool:
    return "k=s" in mark.params.split(";")


# ---------------------------------------------------------------- before typing


def _holder_text(
    pane: Pane, mirror: Mirror, view: ShellView, force: bool, settled: bool = False
) -> tuple[str, str | None]:
    """``(path, refusal)``: ``path`` is "shell" (integration: marks seen, the pane's own
    shell holds the foreground) or "markers"; ``refusal`` says what holds the pane when
    it is not at an idle shell prompt (None when it is, or with ``force``).

    ``settled``: the output has been quiet since the foreground was read. Only then is a
    prompt the shell's hooks did not mark (:func:`phux.client.pane_state.unmarked_prompt`:
    hooks replaced for good, ``exec bash``) taken for one: ``run`` then types its markers,
    which work in any shell. Before, the marks may just be on their way."""
    from phux.client.pane_state import REMOTE, SHELLS, TUI, project_parts, unmarked_prompt

    fg = mirror.foreground_of(pane)
    phase = view.shell_phase
    own_shell = fg is None or fg.pgrp == pane.pid
    path = "shell" if phase != "none" and own_shell else "markers"
    if force:
        return path, None
    program, state = project_parts(mirror.alive, pane.pid, fg, view)
    name = program or "the program"
    if state == "hidden_input":
        return path, (
            f"the pane waits for hidden input ({name} turned echo off: a password or "
            "`read -s` prompt)"
        )
    if fg is not None and (fg.name or not own_shell) and fg.name not in SHELLS | REMOTE:
        kind = "a full-screen program" if state == TUI else "a running program"
        return path, f"{name} holds the pane ({kind}), not the shell"
    if view.alternate:
        return path, f"{name} shows a full-screen program (the alternate screen is up)"
    if path == "markers":
        return path, None
    if unmarked_prompt(pane.pid, fg, view):
        if settled:
            return "markers", None
        return path, "the shell's prompt carries no marks (its hooks were replaced?)"
    if phase == "continuation":
        return path, "the shell waits at a continuation prompt (an unfinished command line)"
    if phase == "running":
        what = ""
        if view.commands:
            what = f": {getattr(view.commands[-1], 'command', '')!r}"
        return path, f"the shell is running a command{what}"
    pending = view.pending_input
    if pending:
        return path, f"input is pending at the prompt: {pending!r}"
    return path, None


# ---------------------------------------------------------------- run


_FISH_GRACE = 1.0
"""fish draws no continuation prompt: no mark, and fish quiet this long after it answered
the Enter (its editor's redraw), means it waits for more."""
_INTERRUPT_GRACE = 1.0
"""How long an interrupted continuation may take to draw its next prompt before
``run`` presses C-c again (three times at most)."""
_FIRST_PROMPT_AGE_MS = 10_000
"""A pane younger than this with no mark yet may still be starting its integrated shell."""
_FIRST_PROMPT_QUIET = 0.1
_UNMARKED_PROMPT_QUIET = 0.3
"""How long an integrated bash or zsh must stay quiet with its line editor up, its
prompt not marked, before ``run`` takes that prompt for one drawn without marks."""


def run_command(
    client: ClientCore,
    target: str,
    command: str | Sequence[str],
    *,
    timeout: float | None,
    deadline: Deadline,
    force: bool = False,
) -> RunOutcome:
    text = command if isinstance(command, str) else " ".join(command)
    if not text.strip():
        raise InvalidArgument(
            "run needs a command", remedy="give the command line, e.g. phux run work 'make test'"
        )
    if "\x00" in text:
        raise InvalidArgument("the command contains a NUL byte")
    started = time.monotonic()
    run_deadline = deadline.earliest(Deadline.after(timeout))
    pane = client.resolve(target, deadline)
    if not pane.alive:
        raise TerminalGone(f"terminal {pane.id} has exited")
    client.used(pane, deadline)
    _refuse_own_job(pane, force)
    lock = RunLock(client.local_anchor, pane.terminal)
    shown = command_line(command, pane.foreground.name if pane.foreground else None)
    try:
        waited = lock.acquire(run_deadline)
    except DeadlineExceeded:
        raise RunTimedOut(shown, int((time.monotonic() - started) * 1000)) from None
    try:
        if waited:  # another run typed meanwhile: what the listing said is stale
            pane = client.resolve(pane.id, run_deadline)
            if not pane.alive:
                raise TerminalGone(f"terminal {pane.id} has exited")
        return _run_locked(client, pane, command, run_deadline, started, force)
    finally:
        lock.release()


def _refuse_own_job(pane: Pane, force: bool) -> None:
    """``run .`` called by the command the pane runs (a script an agent ran there): the
    pane comes back to its prompt only once this call returns, and a run that typed
    that command holds the pane's run lock until then. Refused at once, never waited."""
    fg = pane.foreground
    if force or fg is None or os.environ.get("PHUX_TERMINAL") != str(pane.terminal):
        return
    if fg.pgrp != os.getpgrp():
        return  # not the pane's foreground job (a background job may wait its turn)
    from phux.client.errors import PaneBusy

    raise PaneBusy(
        f"not typing into {pane.id}: run was called from inside it, by the command it is "
        "running (its prompt comes back only after this run ends)",
        holder=fg.name,
        state="running",
    )


def _run_locked(
    client: ClientCore,
    pane: Pane,
    command: str | Sequence[str],
    run_deadline: Deadline,
    started: float,
    force: bool,
) -> RunOutcome:
    fg = pane.foreground
    shell = fg.name if fg is not None else None
    try:
        # Other clients' keys typed meanwhile are told from ours (phux.client.typeahead).
        typeahead = client.shows_input(run_deadline)
        if client._one_shot(pane):
            # No engine: the checks read the bootstrap's bytes (phux.client.shell_scan)
            # and the output renders from the bytes, so a one-shot run of a command
            # with plain output never imports the engine.
            mirror = client.scan_mirror(pane, run_deadline, input_events=typeahead)
        else:
            mirror = client.mirror(pane, run_deadline, input_events=typeahead)
    except DeadlineExceeded:
        raise RunTimedOut(command_line(command, shell), _ms_since(started)) from None
    try:
        if not mirror.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        _await_first_prompt(client, pane, mirror, run_deadline, started, command, force)
        view = _view(mirror)
        path, refusal = _holder_text(pane, mirror, view, force)
        if refusal is not None and not mirror.foreground_known:
            # A program may have ended since the listing (C-c just before `run`).
            pane = client.listed_after_subscribe(pane, mirror, run_deadline)
            path, refusal = _holder_text(pane, mirror, view, force)
        if refusal is not None:
            # Keys typed just before (send-keys '…' Enter, or C-c) may be mid-way:
            # echoed but not yet run, a program not yet ended. Let the output settle
            # once (TERMINAL_STATE keeps the foreground current) before refusing.
            limit = run_deadline.earliest(Deadline.after(_SETTLE_MAX))
            _settle(client, mirror, run_deadline, limit)
            view = _view(mirror)
            path, refusal = _holder_text(pane, mirror, view, force, settled=True)
            # The shell holds the terminal but its marks say a command runs: it
            # may be about to print the command's end (a program just ended by
            # C-c or a signal; the shell not yet scheduled). Give it the rest of
            # the second; a builtin still running (`read`) is refused after it.
            while refusal is not None and _shell_finishing(pane, mirror, view):
                try:
                    client.pump(limit)
                except DeadlineExceeded:
                    if run_deadline.expired():
                        raise
                    break
                view = _view(mirror)
                path, refusal = _holder_text(pane, mirror, view, force, settled=True)
        mirror.raw = None  # read: stop keeping the bytes
        if refusal is not None:
            from phux.client.errors import PaneBusy
            from phux.client.pane_state import project_parts

            fg_now = mirror.foreground_of(pane)
            program, state = project_parts(mirror.alive, pane.pid, fg_now, view)
            raise PaneBusy(
                f"not typing into {pane.id}: {refusal}", holder=program or "", state=state
            )
        if path == "shell":
            return _run_integrated(
                client, pane, mirror, view, command, shell, run_deadline, started
            )
        return _run_markers(client, pane, mirror, command, shell, run_deadline, started)
    finally:
        client.release(mirror)


_SETTLE_QUIET = 0.15
_SETTLE_MAX = 1.0


def _shell_finishing(pane: Pane, mirror: Mirror, view: ShellView) -> bool:
    """The pane may be about to be back at its prompt: the shell holds the terminal
    but has not printed the command's end yet, or the foreground group's leader has
    exited (its name is gone) and the shell is about to take the terminal back."""
    fg = mirror.foreground_of(pane)
    if not mirror.alive or fg is None:
        return False
    if fg.pgrp != pane.pid:
        return not fg.name
    return view.shell_phase == "running"


def _settle(client: ClientCore, mirror: Mirror, deadline: Deadline, limit: Deadline) -> None:
    """Pump until no output for ``_SETTLE_QUIET`` (at most until ``limit``)."""
    mirror.last_output = time.monotonic()
    while mirror.alive and not limit.expired():
        quiet_at = mirror.last_output + _SETTLE_QUIET
        if time.monotonic() >= quiet_at:
            return
        try:
            client.pump(limit.earliest(Deadline(at=quiet_at)))
        except DeadlineExceeded:
            if deadline.expired():
                raise


def _view(mirror: Mirror) -> ShellView:
    from phux.client.shell_scan import view, view_of_engine

    if mirror.engine is not None:
        return view_of_engine(mirror.engine)
    raw = bytes(mirror.raw or b"")
    return view(raw, mirror.cols, mirror.rows, mirror.checkpoint_bytes, mirror.mark_key)


def _ms_since(t: float) -> int:
    return max(0, int((time.monotonic() - t) * 1000))


def integrated_shell(pane: Pane) -> str | None:
    """The shell the server started with its integration (``phux.shell``): bash, zsh,
    fish or sh; None for a pane whose program phux did not integrate."""
    from phux.signed_marks import pane_shell

    return pane_shell(pane.metadata) or None


def editor_up(pane: Pane, fg: Foreground | None) -> bool:
    """The pane's own bash or zsh holds the terminal with its line editor up (the tty
    out of canonical mode: readline, zle), which they put up only to read a command
    line. Not fish: its reader takes the tty while config.fish still runs, and keeps
    it while its prompt event handlers do."""
    if integrated_shell(pane) not in ("bash", "zsh"):
        return False
    return fg is not None and fg.pgrp == pane.pid and not fg.canonical


def shell_starting(pane: Pane, integration: str) -> bool:
    """An integrated shell that has not marked its first prompt yet: it announced
    itself (``133;I;start``: its startup files run), or phux started it with its
    integration (fish announces only after config.fish) and no mark came."""
    if integration == "starting":
        return True
    return integration == "none" and integrated_shell(pane) is not None


def _await_first_prompt(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    deadline: Deadline,
    started: float,
    command: str | Sequence[str],
    force: bool = False,
) -> None:
    """Before typing, wait (within the run's deadline) for the prompt of a shell that is
    drawing it: an integrated shell whose startup files still run (it announced
    itself, or phux started it with its integration, and no marked prompt came yet),
    or whose prompt hooks run after a command's D mark, before the prompt's B (a hook's
    child may hold the terminal meanwhile: that is not a running command). A shell
    that drew a prompt without marks (its editor is up, the pane quiet) is not waited
    for. Nothing is typed until then; past the deadline, ``ShellNotReady`` says so.
    ``force`` (type anyway) does not wait for an integrated shell."""
    if integrated_shell(pane) is None:
        _await_unmarked(client, pane, mirror, deadline, started, command)
        return
    if force:
        return
    view = _view(mirror)
    seen = mirror.next_seq
    up_since: float | None = None
    try:
        while mirror.alive:
            starting = shell_starting(pane, view.integration)
            if not starting and not view.drawing:
                return
            fg = mirror.foreground_of(pane)
            wake = deadline
            if not editor_up(pane, fg):
                up_since = None
            else:
                # The editor reads a line though the marks did not say the prompt is
                # drawn: once the pane stayed quiet since, no marks come for this prompt
                # (a theme's hook replaced them). Counted from when the editor came up
                # too: the tty's modes may be read before the prompt printed next.
                if up_since is None:
                    up_since = time.monotonic()
                quiet_at = max(mirror.last_output, up_since) + _UNMARKED_PROMPT_QUIET
                if time.monotonic() >= quiet_at:
                    return
                wake = deadline.earliest(Deadline(at=quiet_at))
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if deadline.expired():
                    raise
            if mirror.next_seq != seen:
                seen = mirror.next_seq
                view = _view(mirror)
    except DeadlineExceeded:
        fg = mirror.foreground_of(pane)
        shown = command_line(command, integrated_shell(pane))
        holder = f": {fg.name} runs" if fg is not None and fg.pgrp != pane.pid and fg.name else ""
        if shell_starting(pane, view.integration):
            why = f"the shell is still starting (its startup files drew no prompt yet{holder})"
        else:
            why = f"the shell is still drawing its prompt (its prompt hooks run{holder})"
        raise ShellNotReady(shown, _ms_since(started), why) from None


def _await_unmarked(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    deadline: Deadline,
    started: float,
    command: str | Sequence[str],
) -> None:
    """A young pane whose program phux did not integrate may not have drawn its first
    prompt yet: wait for output that then settles (up to ``_FIRST_PROMPT_QUIET`` once
    it printed), so that the markers are not typed into a shell still starting."""
    from phux.client.pane_state import foreground_is_shell

    fg = pane.foreground
    if fg is not None and fg.pgrp != pane.pid:
        return
    if fg is not None and not foreground_is_shell(pane.pid, fg):
        # Not a shell (`-- sleep 600` may never print): nothing to await. (A shell phux
        # integrated is awaited in _await_first_prompt even so: a listing taken before
        # its exec names the server's own program.)
        return
    if pane.created_ms and time.time() * 1000 - pane.created_ms > _FIRST_PROMPT_AGE_MS:
        return
    try:
        # (No mark can end this wait: a pane phux did not integrate has no key, and
        # no client or replica acts on an unsigned mark.)
        while mirror.alive:
            if mirror.next_seq > 0:
                quiet_at = mirror.last_output + _FIRST_PROMPT_QUIET
                if time.monotonic() >= quiet_at:
                    return
                wake = deadline.earliest(Deadline(at=quiet_at))
            else:
                wake = deadline
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if deadline.expired():
                    raise
    except DeadlineExceeded:
        shown = command_line(command, fg.name if fg else None)
        raise RunTimedOut(shown, _ms_since(started)) from None


def _died(pane: Pane, mirror: Mirror) -> PaneDied:
    from phux.client.errors import PaneDied

    status = mirror.exit
    how = describe_exit(status) if status is not None else "ended"
    return PaneDied(
        f"the pane {pane.id} died while the command ran (its program {how}): "
        "no exit code of the command to report",
        status=None if status is None else _status_code(status),
    )


def _run_integrated(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    view: ShellView,
    command: str | Sequence[str],
    shell: str | None,
    deadline: Deadline,
    started: float,
) -> RunOutcome:
    """Type the command line and Enter, nothing else; read the result from the marks."""
    from phux.client.errors import IncompleteCommand

    line = command_line(command, shell)
    lines = line.split("\n")
    paste = len(lines) > 1 and view.bracketed_paste
    if paste:
        # One command line of several lines: as a paste the shell's editor takes it
        # whole (one history entry, one prompt), as a person pasting it would.
        from phux.client.keys import KeyModes, paste_bytes

        data = paste_bytes(line, KeyModes(bracketed_paste=True)) + b"\r"
        prompts_needed = 1
    else:
        data = line.replace("\n", "\r").encode() + b"\r"
        prompts_needed = len(lines)
    _check_canonical_lines(mirror, pane, data, shell)
    pending: list[bytes] = []  # lines still to type, each once the shell asks for it
    fg = mirror.foreground_of(pane)
    if not paste and len(lines) > 1 and fg is not None and fg.canonical:
        # The tty's canonical mode (dash) echoes lines typed ahead all at once, before
        # the shell has printed the prompts that ask for them, so the screen and the
        # history would read out of order: a line at a time, as a person types.
        data, *pending = [part.encode() + b"\r" for part in lines]
    scanner = MarkScanner(mirror.cols, mirror.rows, mirror.mark_key)
    scanner.typeahead = _typeahead(client, pane, mirror)
    mirror.bytes_hooks.append(scanner.feed)
    mirror.resize_hooks.append(scanner.resize)
    mirror.gap_hooks.append(scanner.gap)
    submitted: float | None = None
    interrupted_at: float | None = None
    interrupts = 0
    try:
        scanner.start(mirror.next_seq)
        submitted = time.monotonic()
        try:
            _type(client, pane, scanner, data, deadline)
        except DeadlineExceeded:
            raise RunTimedOut(line, _ms_since(started)) from None
        since = 0  # marks before this index came before the last C-c
        own = line  # the command line our C mark names ("": take any)
        foreign_wake: Deadline | None = None
        while True:
            answered = len(lines) - len(pending)
            if pending and _integrated_progress(scanner, answered, own) is not None:
                _type(client, pane, scanner, pending.pop(0), deadline)
                continue
            if interrupted_at is None:
                done = _integrated_progress(scanner, prompts_needed, own)
                foreign = _foreign_done_at(scanner, own)
                if done is None and foreign is not None:
                    if time.monotonic() - foreign > _FOREIGN_GRACE:
                        # No C naming our line came after all (a shell that records
                        # it differently): the command it ran was ours.
                        own = ""
                        continue
                    foreign_wake = Deadline(at=foreign + _FOREIGN_GRACE)
            else:
                done = _redrawn(scanner, since)
            if interrupted_at is not None:
                late = time.monotonic() - interrupted_at > _INTERRUPT_GRACE
                if (done == "continuation" or (done is None and late)) and interrupts < 3:
                    # The C-c came before the editor read again (the shell asked
                    # anew), or bash took it without drawing a prompt: once more.
                    _type(client, pane, scanner, b"\x03", deadline)
                    interrupts += 1
                    interrupted_at = time.monotonic()
                    since = len(scanner.marks)
                    continue
                if done is not None or late:
                    raise IncompleteCommand(
                        "the shell asked for more input (an unbalanced quote or bracket?): "
                        "interrupted it with C-c; nothing ran"
                    )
            elif done == "continuation":
                _type(client, pane, scanner, b"\x03", deadline)
                interrupted_at = time.monotonic()
                interrupts = 1
                since = len(scanner.marks)
                continue
            elif done is not None:
                break
            if not mirror.alive:
                raise _died(pane, mirror)
            wake = deadline
            if foreign_wake is not None:
                wake = wake.earliest(foreign_wake)
                foreign_wake = None
            fish_watch = shell == "fish" and interrupted_at is None and _only_redraws(scanner.marks)
            if fish_watch and mirror.last_output > submitted:
                # Counted from fish's last output after the Enter, not from the Enter:
                # a fish that has not read it yet (descheduled on a loaded machine)
                # is not waiting for more; its answer, whatever it is, wakes us.
                wake = deadline.earliest(Deadline(at=mirror.last_output + _FISH_GRACE))
            if interrupted_at is not None:
                wake = deadline.earliest(Deadline(at=interrupted_at + _INTERRUPT_GRACE))
            unmarked = interrupted_at is None and shell != "fish" and _ended_open(scanner)
            if unmarked:
                # Look again once the pane was quiet that long: from its last output, or
                # from now when that is past (the last look found a command still running,
                # e.g. a builtin's `read`). A wake already past would read nothing.
                now = time.monotonic()
                at = mirror.last_output + _UNMARKED_QUIET
                wake = wake.earliest(Deadline(at=at if at > now else now + _UNMARKED_QUIET))
            try:
                client.pump(wake)
            except DeadlineExceeded:
                if deadline.expired():
                    # From the call, as --timeout counts, not from the Enter.
                    raise RunTimedOut(line, _ms_since(started), _screen(mirror, pane)) from None
                if unmarked and _back_unmarked(client, pane, mirror, deadline):
                    raise RunTimedOut(
                        line,
                        _ms_since(started),
                        _screen(mirror, pane),
                        reason=(
                            "the command ran, but the shell came back to its prompt without "
                            "the marks that report its end (its prompt hooks were replaced, "
                            "PROMPT_COMMAND and PS1 at once?): its exit status is unknown; "
                            "the next run types markers"
                        ),
                    ) from None
                if (
                    fish_watch
                    and _only_redraws(scanner.marks)
                    and submitted < mirror.last_output <= time.monotonic() - _FISH_GRACE
                    and _fish_waits(client, pane, deadline)
                ):
                    message = _fish_rejection(scanner)
                    if message:
                        # fish did not run the line (a syntax error): it printed why and
                        # drew its prompt again with the line still in its editor.
                        _clear_fish_line(client, pane, scanner, deadline)
                        return RunOutcome(
                            command=line,
                            exit_code=2,
                            output=message,
                            duration_ms=_ms_since(submitted),
                            truncated=False,
                        )
                    _type(client, pane, scanner, b"\x03", deadline)
                    interrupted_at = time.monotonic()
                    interrupts = 1
                    since = len(scanner.marks)
    finally:
        mirror.bytes_hooks.remove(scanner.feed)
        mirror.resize_hooks.remove(scanner.resize)
        mirror.gap_hooks.remove(scanner.gap)
        if scanner.typeahead is not None:
            client.remove_sink(scanner.typeahead)
    return _integrated_outcome(scanner, line, own, submitted, prompts_needed)


def _typeahead(client: ClientCore, pane: Pane, mirror: Mirror) -> Typeahead | None:
    """A sink telling this run's keys from other clients', when the mirror brings the
    input written to the pane (the caller removes it from ``client`` when done)."""
    if not mirror.input_events:
        return None
    typeahead = Typeahead(pane.terminal, lambda: echo_mode(mirror.foreground_of(pane), pane.pid))
    client.add_sink(typeahead)
    return typeahead


def _type(
    client: ClientCore, pane: Pane, scanner: MarkScanner, data: bytes, deadline: Deadline
) -> None:
    """Write ``data`` as this run's own keys (``Typeahead`` tells them from others')."""
    if scanner.typeahead is not None:
        scanner.typeahead.wrote(data)
    client.write(pane, data, deadline)


_UNMARKED_QUIET = 0.5
"""How long a shell back at its line editor after our C, with no D, stays quiet before
``run`` takes it for one whose hooks the command removed."""


def _ended_open(scanner: MarkScanner) -> bool:
    """A C mark came, and nothing after it: the command runs, or ended unmarked."""
    kinds = [m.kind for m in scanner.marks]
    return "C" in kinds and kinds[-1] == "C"


def _back_unmarked(client: ClientCore, pane: Pane, mirror: Mirror, deadline: Deadline) -> bool:
    """The pane's own shell holds the terminal with its line editor up (not canonical)
    and the output has been quiet: it reads a new command line, unmarked."""
    if not mirror.alive or time.monotonic() - mirror.last_output < _UNMARKED_QUIET:
        return False
    if mirror.foreground_known:
        fg = mirror.foreground_of(pane)
    else:  # no change reported since the subscription: ask
        try:
            fg = client.resolve(pane.id, deadline).foreground
        except PhuxError:
            return False
    return fg is not None and fg.pgrp == pane.pid and not fg.canonical


def _redrawn(scanner: MarkScanner, since: int) -> str | None:
    """After a C-c: "done" once a prompt's B mark is drawn (fish redraws its prompt
    without a new A), "continuation" when that prompt is a continuation prompt."""
    cont = False
    for mark in scanner.marks[since:]:
        if mark.kind == "A":
            cont = _continuation(mark)
        elif mark.kind == "B":
            return "continuation" if cont else "done"
    return None


_PERCENT = re.compile(rb"%([0-9A-Fa-f]{2})")


def _cmdline(mark: Mark) -> str | None:
    """A C mark's ``cmdline_url``, decoded; None when it has none."""
    for param in mark.params.split(";"):
        key, eq, value = param.partition("=")
        if eq and key == "cmdline_url":
            raw = _PERCENT.sub(lambda m: bytes([int(m.group(1), 16)]), value.encode())
            return raw.decode("utf-8", "replace")
    return None


_FOREIGN_GRACE = 0.5
"""How long after another command's prompt ``run`` waits for a C naming its own line."""


def _foreign_done_at(scanner: MarkScanner, line: str) -> float | None:
    """When the prompt after the last command not ours was drawn (None: none was)."""
    if not line or "\n" in line:
        return None
    at = None
    foreign = False
    for mark in scanner.marks:
        if mark.kind == "C":
            named = _cmdline(mark)
            foreign = named is not None and named.strip() != line.strip()
            if not foreign:
                at = None  # ours (or unnamed) came after: nothing to give up on
        elif mark.kind == "B" and foreign:
            at = mark.at
            foreign = False
    return at


def _own_marks(scanner: MarkScanner, line: str) -> list[Mark]:
    """The marks of our command line: without a command someone typed just before
    ours (send-keys 'x' Enter, then run) that the shell ran first. Such a command
    shows as a C naming another command line; its marks up to the B of the prompt
    after it are dropped. Only a one-line command is compared: the shell may
    rewrite a command of several lines (bash's history joins them)."""
    marks = scanner.marks
    if not line or "\n" in line or not any(m.kind == "C" for m in marks):
        return marks
    out: list[Mark] = []
    foreign = False
    for mark in marks:
        if foreign:
            if mark.kind == "B":
                foreign = False
            continue
        if mark.kind == "C":
            named = _cmdline(mark)
            if named is not None and named.strip() != line.strip():
                foreign = True
                continue
        out.append(mark)
    return out


def _answers(marks: list[Mark], prompts_needed: int) -> tuple[list[Mark], Mark | None]:
    """The marks up to the prompt answering the last line typed, and that prompt's A.

    Each line typed is answered by one prompt: the continuation prompt of an
    unfinished command, or the next primary prompt, which follows the command's
    C or D mark, or the OSC 7 of a new prompt cycle (a line that ran nothing). A
    primary prompt with none of them since the last one is the same prompt drawn
    again (readline redraws it on SIGWINCH): it answers nothing.
    """
    prompts = 0
    active = False
    upto: list[Mark] = []
    for mark in marks:
        upto.append(mark)
        if mark.kind in ("C", "D", "7"):
            active = True
        elif mark.kind == "A" and (active or _continuation(mark)):
            prompts += 1
            active = False
            if prompts == prompts_needed:
                return upto, mark
    return upto, None


def _integrated_progress(scanner: MarkScanner, prompts_needed: int, line: str = "") -> str | None:
    """None while the command runs; "continuation" when the shell asked for more input
    after the last line; "done" once the prompt after the command has drawn its B mark.
    """
    marks = _own_marks(scanner, line)
    upto, final = _answers(marks, prompts_needed)
    if final is None:
        return None
    for mark in marks[len(upto) :]:
        if mark.kind == "B":
            # Drawn (the shell's editor reads again): a C-c now reaches it.
            return "continuation" if _continuation(final) else "done"
    return None


def _fish_waits(client: ClientCore, pane: Pane, deadline: Deadline) -> bool:
    """fish still holds the foreground at its editor (its own pgrp, raw tty): it took the
    Enter as a newline inside an unfinished command line."""
    try:
        now = client.resolve(pane.id, deadline)
    except PhuxError:
        return False
    fg = now.foreground
    return bool(now.alive and fg is not None and fg.pgrp == now.pid and not fg.canonical)


def _only_redraws(marks: list[Mark]) -> bool:
    """No mark since the Enter but B: fish redrew its prompt (no new prompt cycle, no
    command started), as it does after rejecting a line."""
    return all(m.kind == "B" for m in marks)


def _fish_rejection(scanner: MarkScanner) -> str:
    """What fish printed between the Enter and its prompt drawn again ("" when it
    printed nothing: an unfinished line, which it keeps editing on a new row). The
    row the prompt is drawn on is fish's, not the message's."""
    marks = scanner.marks
    if not marks:
        return ""
    buf = scanner.buf
    newline = buf.find(b"\n")  # the Enter: the typed line ends there
    stop = marks[0].start
    if newline < 0 or scanner.base + newline >= stop:
        return ""
    text, _ = scanner.render(scanner.base + newline + 1, stop)
    rows = text.rstrip("\n").split("\n")[:-1]  # the last: the prompt, drawn again
    return "\n".join(rows).strip("\n")


def _clear_fish_line(
    client: ClientCore, pane: Pane, scanner: MarkScanner, deadline: Deadline
) -> None:
    """C-c: fish drops the line it kept and draws its prompt again (a B mark)."""
    since = len(scanner.marks)
    _type(client, pane, scanner, b"\x03", deadline)
    limit = deadline.earliest(Deadline.after(_INTERRUPT_GRACE))
    while _redrawn(scanner, since) is None:
        try:
            client.pump(limit)
        except DeadlineExceeded:
            return  # the line is cleared once fish reads the C-c; the prompt may come later


def _integrated_outcome(
    scanner: MarkScanner, line: str, own: str, submitted: float | None, prompts_needed: int
) -> RunOutcome:
    upto, _ = _answers(_own_marks(scanner, own), prompts_needed)
    pieces: list[str] = []
    lost = False
    status: int | None = None
    open_c: Mark | None = None
    finished_at: float | None = None
    saw_c = any(m.kind == "C" for m in upto)
    for mark in upto:
        if mark.kind == "C":
            # A second C before the D: one command line holding several commands
            # (bash's hook fires per command): the output runs from the first.
            if open_c is None:
                open_c = mark
        elif mark.kind == "D" and (open_c is not None or not saw_c):
            start = open_c.end if open_c is not None else _echo_end(scanner, mark)
            text, was_lost = scanner.render(start, mark.start)
            pieces.append(text)
            lost = lost or was_lost
            status = _mark_status(mark)
            finished_at = mark.at
            open_c = None
    output = "\n".join(p for p in pieces if p) if len(pieces) > 1 else "".join(pieces)
    cycle = [m for m in upto if m.kind == "7"]
    if not saw_c and status is None and cycle:
        # No command ran (bash and zsh print neither C nor D): a comment is exit 0
        # with no output; a line the shell rejected (a syntax error) is what it
        # printed, with exit 2, as bash and dash report a syntax error.
        text, lost = scanner.render(_echo_end(scanner, cycle[-1]), cycle[-1].start)
        output = text.strip("\n")
        status = 2 if output.strip() else 0
        finished_at = cycle[-1].at
    end = finished_at if finished_at is not None else time.monotonic()
    return RunOutcome(
        command=line,
        exit_code=status if status is not None else 0,
        output=output,
        duration_ms=max(0, int((end - (submitted or end)) * 1000)),
        truncated=lost,
    )


def _echo_end(scanner: MarkScanner, d_mark: Mark) -> int:
    """Where the output starts in a shell that prints no C mark (dash, or a line that
    ran nothing): after the echo of the line typed at the last prompt before
    ``d_mark`` (the prompt drawn before the run, or a continuation prompt: ``run``
    types a canonical-mode shell's lines one at a time, each once it is asked for)."""
    start = scanner.base
    for mark in scanner.marks:
        if mark.kind == "B" and start <= mark.end <= d_mark.start:
            start = mark.end
    newline = scanner.buf.find(b"\n", start - scanner.base, d_mark.start - scanner.base)
    return start if newline < 0 else scanner.base + newline + 1


CANONICAL_LINE_MAX = 4095
"""Bytes a line may hold, its end included, in the tty's canonical mode (Linux's n_tty
keeps 4095 and drops the rest of a longer line but its end: another command runs)."""


def _check_canonical_lines(mirror: Mirror, pane: Pane, data: bytes, shell: str | None) -> None:
    """Refuse, before typing, a line the tty's canonical mode would cut: a shell with no
    line editor of its own (dash, sh, bash --noediting) lets the kernel collect it."""
    fg = mirror.foreground_of(pane)
    if fg is None or not fg.canonical:
        return  # the shell's editor reads keys one by one: any length
    longest = max(len(part) + 1 for part in data.replace(b"\n", b"\r").split(b"\r"))
    if longest <= CANONICAL_LINE_MAX:
        return
    from phux.client.errors import InvalidArgument

    raise InvalidArgument(
        f"not typing into {pane.id}: a line of the command is {longest} bytes and "
        f"{shell or 'the shell'} reads it in the tty's canonical mode, which keeps at "
        f"most {CANONICAL_LINE_MAX} (the rest would be cut and another command run)",
        remedy="put the command in a script file and run that, or split it into lines",
    )


def _screen(mirror: Mirror, pane: Pane) -> ScreenState | None:
    engine = mirror.engine
    return engine.project(pane=pane.terminal) if engine is not None else None


# ---------------------------------------------------------------- markers (no integration)


def wrap_fish(command: str, token: str) -> str:
    return (
        f" printf '__phx%s_%s__\\n' B {token}; begin; {command}\n"
        f"end; printf '__phx%s_%s_%s__\\n' E {token} $status\n"
    )


def _run_markers(
    client: ClientCore,
    pane: Pane,
    mirror: Mirror,
    command: str | Sequence[str],
    shell: str | None,
    deadline: Deadline,
    started: float,
) -> RunOutcome:
    """A shell phux did not start (no marks): bracket the command with printed markers."""
    line = command_line(command, shell)
    token = os.urandom(8).hex()  # what secrets.token_hex(8) does, without importing it
    scanner = MarkerScanner(token, mirror.cols, mirror.rows)
    submitted: float | None = None

    def gave_up() -> RunTimedOut:  # from the call, as --timeout counts, not from the Enter
        return RunTimedOut(line, _ms_since(started), _timeout_screen(scanner, pane.terminal))

    wrapped = wrap_fish(line, token) if shell == "fish" else wrap_command(line, token)
    _check_canonical_lines(mirror, pane, wrapped.encode(), shell)
    typeahead = _typeahead(client, pane, mirror)
    if typeahead is not None:
        typeahead.wrote(wrapped.encode())
    mirror.bytes_hooks.append(scanner.feed)
    mirror.resize_hooks.append(scanner.resize)
    mirror.gap_hooks.append(scanner.gap)
    try:
        scanner.start(mirror.next_seq)
        submitted = time.monotonic()
        try:
            client.write(pane, wrapped.encode(), deadline)
            while scanner.phase != DONE and mirror.alive:
                client.pump(deadline)
        except DeadlineExceeded:
            raise gave_up() from None
    finally:
        mirror.bytes_hooks.remove(scanner.feed)
        mirror.resize_hooks.remove(scanner.resize)
        mirror.gap_hooks.remove(scanner.gap)
        if typeahead is not None:
            client.remove_sink(typeahead)
    if scanner.phase != DONE:
        raise _died(pane, mirror)
    exit_code = scanner.exit_code if scanner.exit_code is not None else 255
    data = scanner.output
    resizes = scanner.resizes
    if typeahead is not None and scanner.capture_seq is not None:
        at = scanner.capture_seq
        typed = [(seq - at, echo) for seq, echo in typeahead.foreign]
        data, resizes = without_echoes(data, typed, resizes)
    done_at = scanner.done_at or time.monotonic()
    lead = 2 if data.startswith(b"\r\n") else 1 if data.startswith(b"\n") else 0
    data = data[lead:]
    resizes = [(max(0, o - lead), c, r) for (o, c, r) in resizes]
    cols, rows = scanner.begin_size
    output, dropped = render_output(data, cols, rows, resizes)
    return RunOutcome(
        command=line,
        exit_code=exit_code,
        output=output,
        duration_ms=max(0, int((done_at - (submitted or started)) * 1000)),
        truncated=scanner.truncated or dropped,
    )


def _timeout_screen(scanner: MarkerScanner, pane_id: int) -> ScreenState | None:
    if scanner.phase == BEFORE:
        return None
    from phux.engine import Terminal

    cols, rows = scanner.begin_size
    engine = Terminal(max(cols, 1), max(rows, 1), history=1000)
    engine.feed(bytes(scanner.capture[-1_000_000:]))
    return engine.project(pane=pane_id)

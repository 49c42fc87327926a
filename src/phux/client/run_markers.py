"""``run`` without the shell's marks: the command bracketed with printed markers.

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

import os
import re
import time

from phux.client.deadline import Deadline
from phux.client.errors import (
    DeadlineExceeded,
    RunTimedOut,
)
from phux.client.run_base import (
    RunOutcome,
    _check_canonical_lines,
    _died,
    _ms_since,
    _typeahead,
    command_line,
)
from phux.client.run_output import RUN_CAPTURE_BYTES, render_output
from phux.client.typeahead import without_echoes

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from phux.client.core import ClientCore
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.engine import ScreenState


BEFORE, CAPTURING, DONE = "before", "capturing", "done"


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

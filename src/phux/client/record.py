"""``record``: a pane as an asciicast v2 recording (what ``asciinema play`` plays).

The recorder is one VIEWER subscription (it never resizes the pane) whose
frames it turns into asciicast v2 lines: a header (size, start time, title,
``TERM``/``SHELL``), then ``[t, "o", text]`` for output and ``[t, "r",
"COLSxROWS"]`` for resizes, ``t`` in seconds since the recording started.

With ``since`` the recording opens with what the pane already printed, as the
server's bootstrap gives it: the checkpoint (plain VT bytes recreating the
state, scrollback included) and the journal after it, with its resizes, all
at ``t = 0`` and the header at the size the bootstrap started from. Replayed,
that reproduces the pane's screen at the moment recording began; the times of
those bytes are not kept by the server, so they are not in the file.

Without ``since`` the header has the pane's current size and the recording
holds only what is printed from then on.

With ``input`` the recording also holds ``[t, "i", text]`` for the input
that reached the pane, from every client (agents' ``send-keys`` and ``run``,
people attached): the subscription asks the server for INPUT_WRITTEN
(protocol 1.3), the bytes it wrote to the PTY, in order with the output as
the server saw them. Input that was cancelled before it was written is not
in it; nor are the server's own answers to the program's terminal queries
(a terminal's replies, not typing); nor is what was typed while the tty echoed
nothing in canonical mode (the pane's state ``hidden_input``: a password
prompt), which the header's ``phux.input`` says and the summary counts. The
times are when the recorder received the bytes, like the output's.

The pane's mark key (its ``phux.shell_key``, which signs the shell
integration's OSC 133 marks: spec/shell-integration.md) is written as
``KEY_PLACEHOLDER`` wherever it appears, so a recording never carries a live
key: played back (or ``cat``) in a pane, its marks are output like any other.

Output is decoded as UTF-8 incrementally (a character split across frames is
kept whole; invalid bytes become U+FFFD, as asciinema does). Every event is
written and flushed as it happens, so a recording cut short by a signal is
still a valid file up to its last line.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded
from phux.client.pane_state import input_hidden
from phux.signed_marks import pane_key
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Foreground,
    Frame,
    InputWritten,
    Output,
    Resized,
    TerminalClosed,
    TerminalState,
)

if TYPE_CHECKING:
    from phux.client.core import ClientCore
    from phux.client.selectors import Pane

CAST_VERSION = 2
HIDDEN_INPUT_NOTE = (
    "every client's input, except what was typed while the terminal did not echo "
    "(a password prompt), which is left out"
)
PANE_TERM = "xterm-256color"
"""The TERM the server gives every pane (phux.server.state), which the player
should emulate; the recorder's own TERM says nothing about the pane."""


class RecordStats:
    """What a finished recording holds."""

    def __init__(self) -> None:
        self.events = 0
        self.output_bytes = 0
        self.input_bytes = 0
        self.hidden_input_bytes = 0
        """Input left out: typed while the tty echoed nothing (a password prompt)."""
        self.resizes = 0
        self.duration = 0.0
        self.gaps = 0
        """Stretches of output the server dropped for us (we fell too far behind)."""
        self.pane_exited = False
        self.timed_out = False


KEY_PLACEHOLDER = "x" * 32
"""What a recording holds instead of the pane's key: not hex, so never any pane's key."""


class KeyRedactor:
    """Replaces a key in a text stream with ``KEY_PLACEHOLDER``, also when it is split
    between pieces: a piece's tail that may begin the key waits for the next piece."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.held = ""

    def feed(self, text: str) -> str:
        key = self.key
        if not key:
            return text
        text = (self.held + text).replace(key, KEY_PLACEHOLDER)
        self.held = ""
        for n in range(min(len(key) - 1, len(text)), 0, -1):
            if key.startswith(text[-n:]):
                self.held, text = text[-n:], text[:-n]
                break
        return text

    def flush(self) -> str:
        """What is held at the end: a short tail as it is (it may be plain text that
        looked like the key's start), a longer one as the placeholder's start."""
        held, self.held = self.held, ""
        return held if len(held) < 8 else KEY_PLACEHOLDER[: len(held)]

    def drop(self) -> None:
        """Forget the held tail (the bytes after it were lost: a gap)."""
        self.held = ""


class CastWriter:
    """The asciicast v2 state machine: a terminal's frames in, lines to ``out``.

    Fed every frame the client receives (:meth:`handle`; frames of other
    terminals are ignored), in order, from before the subscription's bootstrap
    on. The header is written when the first bootstrap is complete; with
    ``since`` the bootstrap's bytes and resizes follow at ``t = 0``. After a
    TOMBSTONE the fresh bootstrap's journal is deduplicated by sequence
    number; when it no longer reaches our position its checkpoint is written
    as output (it redraws the whole state) and the stretch counts as a gap.
    """

    def __init__(
        self,
        terminal: int,
        out: TextIO,
        *,
        since: bool,
        title: str | None,
        size: tuple[int, int],
        env: Mapping[str, str] | None = None,
        key: str = "",
        input: bool = False,
        foreground: Foreground | None = None,
    ) -> None:
        self.out = out
        self.input = input
        self._foreground = foreground
        """What holds the PTY (the listing's, then each TERMINAL_STATE's)."""
        self.since = since
        self._redact = KeyRedactor(key)
        """The pane's key (``phux.shell_key``) never reaches the file."""
        self._redact_input = KeyRedactor(key)
        self.title = title
        self.stats = RecordStats()
        environ = os.environ if env is None else env
        self._env = {"TERM": PANE_TERM}
        if environ.get("SHELL"):
            self._env["SHELL"] = environ["SHELL"]
        self._tid = terminal
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._input_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._boot_size: tuple[int, int] | None = None
        self._fresh_size: tuple[int, int] | None = None
        """The size a fresh bootstrap after a TOMBSTONE starts from."""
        self._size = size
        """The size the recording is at, as a player replaying it would be."""
        self._boot_events: list[tuple[str, str]] = []
        self._last_resize: tuple[int, int, int] | None = None
        self._next_seq = 0
        self._live = False
        self._ready_size = size
        self._start = 0.0
        self._header_written = False

    # ------------------------------------------------------------ frames

    def handle(self, frame: Frame) -> None:
        if getattr(frame, "terminal", None) != self._tid:
            return
        if isinstance(frame, BootstrapBegin):
            # A first bootstrap, or a fresh one after the server dropped output
            # for us (TOMBSTONE): either way the bytes resume at start_seq.
            if self._live:
                self._fresh_size = (frame.cols, frame.rows)
            else:
                self._boot_size = (frame.cols, frame.rows)
            return
        if isinstance(frame, BootstrapChunk):
            if not frame.checkpoint:
                self._bytes(frame.seq, frame.data)
            elif not self._live:
                # The state before frame.seq, as VT bytes: what came before it
                # in this bootstrap is superseded.
                self._boot_events.clear()
                self._decoder.reset()
                self._redact.drop()
                self._boot_events.append(("o", self._decode(frame.data)))
                self._next_seq = frame.seq
            elif frame.seq > self._next_seq:
                # The journal no longer reaches where we were: the checkpoint
                # redraws the state, and the stretch in between is lost.
                self._gap()
                self._decoder.reset()
                self._output(frame.data)
                self._next_seq = frame.seq
            return
        if isinstance(frame, Resized):
            key = (frame.seq, frame.cols, frame.rows)
            if self._live and (frame.seq < self._next_seq or key == self._last_resize):
                return  # replayed again by a fresh bootstrap
            self._last_resize = key
            self._resize(frame.cols, frame.rows)
            return
        if isinstance(frame, BootstrapReady):
            self._fresh_size = None
            if not self._live:
                self._ready_size = (frame.cols, frame.rows)
                self._next_seq = max(self._next_seq, frame.next_seq)
                self._begin()
            self._live = True
            return
        if isinstance(frame, Output):
            if self._live:
                self._bytes(frame.seq, frame.data)
            return
        if isinstance(frame, TerminalState):
            self._foreground = frame.foreground
            return
        if isinstance(frame, InputWritten):
            fg = self._foreground
            if self._live and not frame.reply and fg is not None and input_hidden(fg):
                self.stats.hidden_input_bytes += len(frame.data)  # a password: not kept
            elif self._live and not frame.reply:
                self.stats.input_bytes += len(frame.data)
                text = self._redact_input.feed(self._input_decoder.decode(frame.data))
                if text:
                    self._event("i", text)
            return
        if isinstance(frame, TerminalClosed):
            self.stats.pane_exited = True

    def _bytes(self, seq: int, data: bytes) -> None:
        if seq > self._next_seq and self._live:
            self._gap()
            self._decoder.reset()
        skip = self._next_seq - seq
        if skip > 0:
            if skip >= len(data):
                return
            seq, data = seq + skip, data[skip:]
        self._next_seq = seq + len(data)
        self._output(data)

    def _output(self, data: bytes) -> None:
        self.stats.output_bytes += len(data)
        text = self._decode(data)
        if not text:
            return
        if self._live:
            self._event("o", text)
        else:
            self._boot_events.append(("o", text))

    def _resize(self, cols: int, rows: int) -> None:
        if self._live:
            self._size = (cols, rows)
        size = f"{cols}x{rows}"
        self.stats.resizes += 1
        if self._live:
            self._event("r", size)
        else:
            self._boot_events.append(("r", size))

    def _decode(self, data: bytes) -> str:
        return self._redact.feed(self._decoder.decode(data))

    def _gap(self) -> None:
        self.stats.gaps += 1
        self._redact.drop()
        # The resizes in the lost stretch are lost too: the state resumes at the
        # size the fresh bootstrap starts from.
        fresh = self._fresh_size
        if fresh is not None and fresh != self._size:
            self._resize(*fresh)

    # ------------------------------------------------------------ writing

    def _begin(self) -> None:
        """Write the header (and, with ``since``, the bootstrap at t = 0)."""
        if self.since and self._boot_size is not None:
            cols, rows = self._boot_size
        else:
            cols, rows = self._ready_size
        header: dict[str, object] = {
            "version": CAST_VERSION,
            "width": cols,
            "height": rows,
            "timestamp": int(time.time()),
        }
        if self.title:
            header["title"] = self.title
        header["env"] = self._env
        if self.input:
            # (asciinema ignores keys it does not know.)
            header["phux"] = {"input": HIDDEN_INPUT_NOTE}
        self._write(json.dumps(header, ensure_ascii=False))
        self._header_written = True
        self._size = (cols, rows)
        self._start = time.monotonic()
        events, self._boot_events = self._boot_events, []
        if self.since:
            for code, data in events:
                self._write_event(0.0, code, data)
                if code == "r":
                    width, _, height = data.partition("x")
                    self._size = (int(width), int(height))
        else:
            # What the pane printed before is not part of the recording; a
            # character split at the start is dropped with it.
            self._decoder.reset()
            self._redact.drop()
            self.stats.output_bytes = 0
            self.stats.resizes = 0

    def _event(self, code: str, data: str) -> None:
        self._write_event(time.monotonic() - self._start, code, data)

    def _write_event(self, t: float, code: str, data: str) -> None:
        self.stats.events += 1
        self._write(json.dumps([round(t, 6), code, data], ensure_ascii=False))

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def finish(self) -> None:
        """Flush a character left half-decoded and stamp the duration."""
        tail = self._redact.feed(self._decoder.decode(b"", final=True)) + self._redact.flush()
        if tail and self._header_written:
            self._event("o", tail)
        tail = self._input_decoder.decode(b"", final=True)
        tail = self._redact_input.feed(tail) + self._redact_input.flush()
        if tail and self._header_written:
            self._event("i", tail)
        self.stats.duration = time.monotonic() - self._start if self._header_written else 0.0


def default_title(pane: Pane) -> str:
    """``session:window.pane``, or ``@N`` for a pane outside any session."""
    if pane.session is None:
        return pane.id
    where = pane.session
    if pane.window is not None and pane.pane is not None:
        where += f":{pane.window}.{pane.pane}"
    return where


class Recorder:
    """Follow one pane and write it to ``out`` as asciicast v2.

    Use: ``Recorder(client, target, out, since=..., input=..., deadline=...)`` then
    :meth:`run` (until the pane exits, ``timeout`` passes, or a
    KeyboardInterrupt, which ends the recording cleanly).
    """

    def __init__(
        self,
        client: ClientCore,
        target: str | None,
        out: TextIO,
        *,
        since: bool = False,
        title: str | None = None,
        timeout: float | None = None,
        deadline: Deadline,
        env: Mapping[str, str] | None = None,
        input: bool = False,
    ) -> None:
        self.client = client
        self.limit = Deadline.after(timeout)
        self.pane: Pane = client.resolve(target, deadline)
        self.writer = CastWriter(
            self.pane.terminal,
            out,
            since=since,
            title=title if title is not None else default_title(self.pane),
            size=(self.pane.cols, self.pane.rows),
            env=env,
            key=pane_key(self.pane.metadata),
            input=input,
            foreground=self.pane.foreground,
        )
        self.stats = self.writer.stats
        # The sink goes in before SUBSCRIBE, so it sees the whole bootstrap.
        client.add_sink(self.writer.handle)
        try:
            self._mirror = client.mirror(
                self.pane, deadline, engine=False, history=0, input_events=input
            )
        except BaseException:
            client.remove_sink(self.writer.handle)
            raise

    # ------------------------------------------------------------ loop

    def run(self) -> RecordStats:
        """Record until the pane exits, the timeout passes, or KeyboardInterrupt."""
        try:
            while self._mirror.alive and not self.stats.pane_exited:
                try:
                    self.client.pump(self.limit)
                except DeadlineExceeded:
                    if self.limit.expired():
                        self.stats.timed_out = True
                        break
        except KeyboardInterrupt:
            pass
        finally:
            try:
                self.writer.finish()
            finally:
                self.close()
        self.stats.pane_exited = self.stats.pane_exited or not self._mirror.alive
        return self.stats

    def close(self) -> None:
        self.client.remove_sink(self.writer.handle)
        self.client.release(self._mirror)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

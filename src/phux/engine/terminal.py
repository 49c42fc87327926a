"""Terminal: one emulated terminal, fed raw PTY bytes, projected to ScreenState."""

from __future__ import annotations

import codecs
from collections.abc import Callable

from phux.engine._cells import BRACKETED_PASTE, DECCKM, FOCUS_EVENTS, MOUSE_MODES, SGR_MOUSE
from phux.engine._frame import FRAME_LIMIT, holding
from phux.engine._projection import SCHEMA_VERSION, SCHEMA_VERSIONS, Data, StyleCache, screen_data
from phux.engine._pyte import modes as mo
from phux.engine._screen import EngineScreen
from phux.engine._shell import CommandRecord
from phux.engine._stream import EngineStream

TYPE_CHECKING = False  # not typing's: see _projection (msgspec stays off a plain snapshot)
if TYPE_CHECKING:
    from typing import NamedTuple

    from phux.engine.events import EngineEvent
    from phux.engine.screen_state import ScreenState
else:
    from phux.engine._cells import NamedTuple  # typing's, without its cost at import


class Modes(NamedTuple):  # not a dataclass: importing dataclasses (and inspect) costs ~10 ms
    """The private modes clients need (a snapshot taken when ``Terminal.modes`` is read)."""

    app_cursor: bool
    app_keypad: bool
    bracketed_paste: bool
    mouse: bool
    mouse_sgr: bool
    focus_events: bool
    cursor_visible: bool
    autowrap: bool
    insert: bool
    origin: bool
    kitty_keys: int = 0
    """The kitty keyboard protocol's flags the program set on this screen (0: legacy keys)."""


class Terminal:
    """One emulated terminal: ``feed`` bytes in any chunking, ``project`` what you need.

    Replies to terminal queries (DA1, DA2, DSR 5/6 and the rest of spec/L1.md
    §5.2) are collected for the caller (``take_replies``); the engine never
    writes anywhere itself.
    """

    def __init__(
        self,
        cols: int = 80,
        rows: int = 24,
        history: int = 10_000,
        clock: Callable[[], int] | None = None,
        mark_key: str | None = None,
    ) -> None:
        if cols < 1 or rows < 1:
            raise ValueError(f"terminal size must be positive, got {cols}x{rows}")
        self.screen = EngineScreen(cols, rows, history=history)
        self.screen.shell.clock = clock
        self.screen.shell.key = mark_key
        self.stream = EngineStream(self.screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._generation = 0
        self._style_cache: StyleCache = {}

    # -- input -----------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Consume raw PTY output (bytes in any chunking). Never raises on any input."""
        if not data:
            return
        self._generation += 1
        if isinstance(data, str):
            data = data.encode()
        raw = bytes(data)
        text = self._decoder.decode(raw)
        if not text:
            return
        try:
            # ASCII text is its bytes: the bulk path scans those, not an encoded copy.
            self.stream.feed(text, raw if len(text) == len(raw) and text.isascii() else None)
        except Exception:  # pragma: no cover - defensive: the stream already catches
            self.stream.errors += 1

    def feed_checkpoint(self, data: bytes) -> None:
        """Feed a checkpoint (a bootstrap's first chunk, to a fresh terminal): as
        :meth:`feed`, but its OSC 133 marks not placed with ``phux_at`` set only the
        cells' marks, so that a checkpoint whose writer did not carry the shell's
        commands makes none up (spec/L1.md §5.1)."""
        shell = self.screen.shell
        shell.checkpoint = True
        try:
            self.feed(data)
        finally:
            shell.checkpoint = False

    def unparsed(self) -> bytes:
        """The bytes fed but not acted on yet: a sequence, a string or a UTF-8
        character cut by the end of the last chunk (a checkpoint ends with them)."""
        text = self.stream.unparsed()
        held: bytes = self._decoder.getstate()[0]
        return (text.encode("utf-8", "surrogatepass") if text else b"") + held

    def resize(self, cols: int, rows: int) -> None:
        if cols < 1 or rows < 1:
            raise ValueError(f"terminal size must be positive, got {cols}x{rows}")
        if (cols, rows) != (self.cols, self.rows):
            self.screen.resize(lines=rows, columns=cols)
            self._generation += 1

    # -- state -----------------------------------------------------------------------

    @property
    def cols(self) -> int:
        return int(self.screen.columns)

    @property
    def rows(self) -> int:
        return int(self.screen.lines)

    @property
    def title(self) -> str:
        return str(self.screen.title)

    @property
    def cwd(self) -> str | None:
        return self.screen.cwd

    @property
    def bell_count(self) -> int:
        return self.screen.bell_count

    @property
    def alternate(self) -> bool:
        return self.screen.alternate

    @property
    def clock(self) -> Callable[[], int] | None:
        """Unix ms for stamping OSC 133 C and D marks (None: marks carry no time
        unless they have a ``phux_t``). Settable, e.g. once a replay is live."""
        return self.screen.shell.clock

    @clock.setter
    def clock(self, clock: Callable[[], int] | None) -> None:
        self.screen.shell.clock = clock

    @property
    def mark_key(self) -> str | None:
        """The pane's key: only OSC 133 marks signed with it are acted on
        (``phux.signed_marks``); None, every mark is; ``""``, none is."""
        return self.screen.shell.key

    @mark_key.setter
    def mark_key(self, key: str | None) -> None:
        self.screen.shell.key = key

    @property
    def integration(self) -> str:
        """What the shell integration said of itself: ``"none"`` (no signed mark
        yet), ``"starting"`` (it announced itself, no prompt yet: the user's startup
        files are running), ``"ready"`` (a prompt was marked) or ``"off"`` (a user
        file turned it off)."""
        return self.screen.shell.integration

    def foreground_changed(self, shell_holds: bool, *, baseline: bool = False) -> None:
        """Tell the engine what holds the terminal (TERMINAL_STATE), for a shell that
        prints no C mark (sh, dash): ``shell_holds`` is False while a job the shell
        started holds it. The start of its command is then reported
        (``CommandStarted``) when the job takes the terminal, not at its D mark
        (spec/shell-integration.md, sh and dash).

        ``baseline``: what held it when the bytes fed so far may have moved on (a
        listing taken before a bootstrap): it only says that a command whose input
        already ended has started, and is not kept for the next one."""
        shell = self.screen.shell
        shell.foreground(shell_holds)
        if baseline:
            shell.away = False

    @property
    def shell_phase(self) -> str:
        """From the OSC 133 marks: ``"none"`` (none seen yet), ``"prompt"`` (a
        primary prompt or a finished command, no C since), ``"continuation"``
        (the last prompt was a continuation prompt, ``A;k=s``) or ``"running"``
        (a C after the last prompt, no D yet)."""
        return self.screen.shell.phase

    @property
    def pending_input(self) -> str:
        """At a prompt, what is typed after its B mark (to the end of that logical
        line, right-stripped); "" otherwise."""
        return self.screen.shell.pending_input()

    @property
    def commands(self) -> list[CommandRecord]:
        """The commands seen (oldest first; the last may still be running), up to
        ``MAX_COMMANDS``: those whose rows all left the history too (their output
        is gone: ``command_output`` gives "" and truncated). A fresh list."""
        return list(self.screen.shell.commands)

    def command_output(self, rec: CommandRecord) -> tuple[str, bool]:
        """``rec``'s output: the rendered logical lines of its range joined by
        newlines (right-stripped), and whether some of its rows left the history."""
        return self.screen.shell.output(rec)

    @property
    def generation(self) -> int:
        """Changes whenever bytes were fed or the size changed (cheap idle detection)."""
        return self._generation

    @property
    def history_size(self) -> int:
        """Rows currently retained in scrollback."""
        return len(self.screen.scrollback)

    @property
    def scrolled_off(self) -> int:
        """Rows that have left the top of the main screen (into history or past its
        limit, drawn or skipped by the bulk path): add it to a viewport row's index
        for an absolute row number that stays put while output scrolls (a taller
        screen taking history rows back lowers it by as many; a width change
        reflows the rows and numbers them anew, see ``phux.engine._reflow``)."""
        return self.screen.scrolled_off

    @property
    def modes(self) -> Modes:
        mode = self.screen.mode
        return Modes(
            app_cursor=DECCKM in mode,
            app_keypad=self.screen.app_keypad,
            bracketed_paste=BRACKETED_PASTE in mode,
            mouse=not MOUSE_MODES.isdisjoint(mode),
            mouse_sgr=SGR_MOUSE in mode,
            focus_events=FOCUS_EVENTS in mode,
            cursor_visible=mo.DECTCEM in mode,
            autowrap=mo.DECAWM in mode,
            insert=mo.IRM in mode,
            origin=mo.DECOM in mode,
            kitty_keys=self.screen.kitty_flags,
        )

    def take_replies(self) -> bytes:
        """Bytes the terminal would answer to the queries seen since the last call."""
        replies = self.screen.replies
        if not replies:
            return b""
        out = "".join(replies).encode()
        replies.clear()
        return out

    def take_events(self) -> list[EngineEvent]:
        events = list(self.screen.events)
        self.screen.events.clear()
        return events

    # -- projection ------------------------------------------------------------------

    @property
    def frame_pending(self) -> bool:
        """Whether a synchronized-output frame (DEC mode 2026) is open."""
        return self.screen.frame is not None

    @property
    def shown(self) -> EngineScreen:
        """The screen as a terminal would show it: while a synchronized-output frame
        (DEC mode 2026) is open, the screen from before it (read-only), until the
        frame is ``FRAME_LIMIT`` old; otherwise the live screen. Projections, the
        logical lines and the person's view read this one."""
        frame = holding(self.screen)
        if frame is None:
            return self.screen
        view: EngineScreen = frame.view
        return view

    @property
    def frame_deadline(self) -> float | None:
        """When (by ``screen.frame_clock``) the open frame stops holding the screen
        shown, or None when no frame holds it: a reader that shows the screen (the
        person's view, a replica deciding when to checkpoint) looks again then."""
        frame = holding(self.screen)
        return None if frame is None else frame.opened + FRAME_LIMIT

    def _frame_rows(self, shown: EngineScreen) -> int:
        """History rows a frame scrolled in, which the screen shown has not seen."""
        frame = self.screen.frame
        if shown is self.screen or frame is None:
            return 0
        return max(0, self.screen.scrolled_off - frame.scrolled_off)

    def _history_rows(self, scrollback: int | None, shown: EngineScreen) -> list[str]:
        # History is the main screen's: above an alternate screen it would mix two
        # screens' rows (the alternate screen has none of its own, as in tmux).
        if scrollback is None or shown.alternate:
            return []
        if scrollback < 0:
            raise ValueError("scrollback must be None, 0 (all) or a positive row count")
        rows = self.screen.history_rows(trimmed=True)
        newer = self._frame_rows(shown)
        if newer:
            rows = rows[:-newer]
        return rows[-scrollback:] if scrollback else rows

    def _history(
        self, scrollback: int | None, trimmed: bool = False
    ) -> tuple[list[str], list[bool]]:
        if scrollback is None:
            return [], []
        if scrollback < 0:
            raise ValueError("scrollback must be None, 0 (all) or a positive row count")
        rows = self.screen.history_rows(trimmed=trimmed)
        wrapped = self.screen.history_wrapped()
        newer = self._frame_rows(self.shown)
        if newer:
            rows, wrapped = rows[:-newer], wrapped[:-newer]
        if scrollback:
            return rows[-scrollback:], wrapped[-scrollback:]
        return rows, wrapped

    def project(
        self,
        pane: int = 0,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
    ) -> ScreenState:
        """The seed's ScreenState. ``scrollback``: None none, 0 all, N most-recent N rows;
        ``cells``: add the styles (runs; per cell with ``version`` 3)."""
        from phux.engine.screen_state import screen_state  # msgspec, on first use

        return screen_state(self.project_data(pane, scrollback, cells, version))

    def project_data(
        self,
        pane: int = 0,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
    ) -> Data:
        """What :meth:`project` returns, as ``msgspec.to_builtins`` would make it
        (key order included), built without importing msgspec; read-only.
        ``version``: None the current ScreenState shape, or one of SCHEMA_VERSIONS."""
        if version is None:
            version = SCHEMA_VERSION
        elif version not in SCHEMA_VERSIONS:
            raise ValueError(
                f"ScreenState schema_version {version} is not served (only "
                f"{' or '.join(map(str, SCHEMA_VERSIONS))})"
            )
        shown = self.shown
        return screen_data(
            shown,
            pane=pane,
            history=self._history_rows(scrollback, shown),
            style_cache=self._style_cache if cells else None,
            version=version,
            frame_pending=self.screen.frame is not None,
        )

    def drain_history(self) -> tuple[list[str], list[bool]]:
        """Take all scrollback rows out of the engine (oldest first, untrimmed) with
        their soft-wrap flags (True: the row continues the previous one), and forget
        them, so a long capture can be streamed with bounded memory."""
        screen = self.screen
        rows = screen.history_rows()
        wrapped = screen.history_wrapped()
        screen.clear_history()
        return rows, wrapped

    def plain_line_prefix(self, tail: int | None = None) -> str | None:
        """The text of the logical line the cursor is on, up to the cursor, when output
        of printable ASCII, SGRs and CR LFs from here on would only write that line
        on and fresh rows after it: the logical lines such output leaves are then its
        text between CR LFs (SGRs removed), the first after this prefix
        (``phux.client.line_scan``). None unless the main screen scrolls whole
        (``_bulk._plain_screen``: no scroll region, autowrap on, no insert mode, the
        plain charset), no synchronized-output frame holds it, nothing is cut
        mid-sequence, nothing is at or after the cursor on its row nor on the rows
        below it, and the line holds narrow characters only (columns are characters).
        ``tail``: a line that goes on in the history will do, from the screen's top row
        on, if that holds at least so many characters before the cursor (a search for
        a text needs no more of it than the text's length less one)."""
        return self._plain_line(tail, at_cr=False)

    def plain_line_at_cr(self, tail: int | None = None) -> str | None:
        """The text of the logical line the cursor is on, whole (right-trimmed), when
        the cursor is in column 0 of its last row and text follows it there (a CR
        went by, its LF not yet: a feed ended between the two), under the same
        conditions as ``plain_line_prefix`` otherwise. An LF next ends that line as
        it stands; anything else would write over it (``phux.client.line_scan``)."""
        return self._plain_line(tail, at_cr=True)

    def _plain_line(self, tail: int | None, at_cr: bool) -> str | None:
        from phux.engine._bulk import _plain_screen

        screen = self.screen
        if not _plain_screen(screen) or screen.frame is not None or self.unparsed():
            return None
        cols = screen.columns
        x, y = screen.cursor.x, screen.cursor.y
        buffer = screen.buffer
        for below in range(y + 1, screen.lines):
            line = buffer.get(below)
            if line is not None and (line.wrapped or screen.row_text(below).strip(" ")):
                return None
        top = y
        cut = False
        while (line := buffer.get(top)) is not None and line.wrapped:
            if top == 0:  # it goes on in the history
                if tail is None:
                    return None
                cut = True
                break
            top -= 1
        rows = [screen.row_text(row) for row in range(top, y + 1)]
        if any(len(text) != cols for text in rows):
            return None
        if at_cr:
            if x != 0 or not rows[-1].strip(" "):
                return None
            text = "".join(rows).rstrip(" ")
        else:
            if rows[-1][x:].strip(" "):
                return None
            rows[-1] = rows[-1][:x]
            text = "".join(rows)
        return None if cut and len(text) < (tail or 0) else text

    def logical_lines(self, scrollback: int | None = None) -> list[str]:
        """Viewport (and, per ``scrollback``'s tri-state, history) rows with soft
        wraps joined into logical lines, each right-trimmed. Trailing blank
        viewport rows are included (as empty strings). During a synchronized-output
        frame, those of the screen shown (``shown``)."""
        screen = self.shown
        rows, wrapped = self._history(scrollback)
        buffer = screen.buffer
        rows = rows + [screen.row_text(y) for y in range(screen.lines)]
        wrapped = wrapped + [
            (line := buffer.get(y)) is not None and line.wrapped for y in range(screen.lines)
        ]
        out: list[str] = []
        for text, cont in zip(rows, wrapped, strict=True):
            if cont and out:
                out[-1] += text
            else:
                out.append(text)
        return [line.rstrip(" ") for line in out]

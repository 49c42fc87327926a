"""Shell awareness from OSC 133 marks: the prompt cycle, the commands and their output.

The marks (spec: the shell integration phux injects, and the FinalTerm marks
other terminals' integrations print) are ``A`` (a prompt starts; ``k=s``: a
continuation prompt), ``B`` (input starts; the next line feed ends it), ``C`` (the command runs; its
output starts; ``cmdline_url=`` its command line, percent-encoded) and ``D``
(``D;<status>``: it finished). Unknown ``key=value`` parameters are ignored.

Positions are absolute rows of the main screen (``EngineScreen.scrolled_off`` is
the absolute number of the viewport's first row; it grows with every row
scrolled off the top, whether history keeps it or not), so a command's output
range stays valid while it scrolls into history, and is known to be cut once
history dropped some of it. The alternate screen never moves the main
screen's rows: a TUI run by a command leaves the command's output as the main
screen shows it.

Checkpoints (:mod:`phux.engine.checkpoint`) carry this state as marks with
two parameters of phux's own, which other terminals ignore:

* ``phux_pen=1``: the mark only sets the OSC 133 mark of the cells drawn next
  (what a checkpoint needs to recreate every cell's mark); no prompt cycle,
  no command, no event. With ``phux_spill=1`` too, the blank just drawn in the
  row's last column (a pending wrap) is the cell a wide character did not fit.
  In a checkpoint (``Terminal.feed_checkpoint``) a mark without ``phux_at`` is
  taken the same way: older writers (and other servers) wrote the cells' marks
  bare, and their checkpoints carry no commands.
* ``phux_at=<row>,<col>``: the mark happened at that position (``row``
  relative to the viewport's first row, negative in history), not at the
  cursor; it leaves the pen alone, and its times come only from ``phux_t``.
  ``C`` marks also carry ``phux_cwd=`` (the percent-encoded cwd the command
  started in) when it differs from the previous command's (``phux_nocwd=1``:
  none known); ``D`` marks carry ``phux_cut=1`` when erasing the screen cut
  the command's range; the open cycle's last ``B`` carries
  ``phux_entered=<row>,<ms>,<input>[,<col>]`` once its input ended
  (``ShellState.entered``: where and when a command without C started); a
  ``B`` whose line was typed ahead carries ``phux_read=<line>``, the cycle's last
  mark the lines still ahead as ``phux_ahead=<lines>``; the ``I`` mark
  carries ``phux_noc=1`` for a shell that prints no C.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from phux.engine._cells import Line
from phux.engine._widths import char_width
from phux.engine.events import CommandFinished, CommandStarted, EngineEvent, PromptStarted
from phux.record import Record


class ShellScreen(Protocol):
    """What the shell state reads of its screen (an ``EngineScreen``), named here so
    that this module sits below the screen that owns it instead of importing it."""

    scrolled_off: int
    scrollback: deque[Line]
    lines: int
    columns: int
    alternate: bool
    cursor: Any  # pyte's Cursor (x, y)
    cwd: str | None
    events: deque[EngineEvent]

    @property
    def buffer(self) -> Mapping[int, Line]: ...
    @property
    def main_buffer(self) -> Mapping[int, Line] | None: ...
    def set_semantic(self, semantic: int) -> None: ...


__all__ = ["CommandRecord", "ShellState", "percent_decode", "percent_encode"]


def _respill(screen: ShellScreen) -> None:
    """A checkpoint's pending wrap over the last cell of a row that a wide character did
    not fit: the blank it drew there to make the wrap pending is that cell again (data
    "": a reflow joins the row to the next without a space)."""
    line = screen.buffer[screen.cursor.y]
    cell = line.get(screen.columns - 1)
    if cell is not None and cell.data == " ":
        line[screen.columns - 1] = cell._replace(data="")


# Commands kept at most, those whose rows all left the history included (their
# command line, cwd, status and times outlive their output). Checkpoints carry
# every one, after each command: the bound keeps that small.
MAX_COMMANDS = 1024

NONE, PROMPT, CONTINUATION, RUNNING = "none", "prompt", "continuation", "running"
# What the integration said of itself (``I`` marks) and whether a prompt came since.
STARTING, READY, OFF = "starting", "ready", "off"
_ANNOUNCED = {"start": STARTING, "ready": READY, "off": OFF}


class CommandRecord(Record):
    """One command seen through OSC 133 marks.

    ``command`` is the ``cmdline_url`` of its ``C`` mark, else the text typed
    after the prompt's ``B`` mark(s) (continuation lines joined by newlines).
    ``cwd`` is the working directory (OSC 7) when it started. Times are unix
    ms (from the terminal's clock or a mark's ``phux_t``), None when unknown.
    The output range runs from (``start_row``, ``start_col``) to
    (``end_row``, ``end_col``) exclusive, absolute main-screen rows of the
    engine that recorded it (``end_row`` None: still running); read the
    output with ``Terminal.command_output``. Erasing the main screen (``clear``)
    cuts the ranges it runs through, so rows drawn there later are never taken
    for an older command's output.
    """

    command: str
    cwd: str | None
    exit_code: int | None
    started_ms: int | None
    finished_ms: int | None
    start_row: int
    start_col: int
    end_row: int | None = None
    end_col: int = 0
    erased: bool = False
    """Part of its output was erased from the screen (ED, RIS): the range was cut."""

    @property
    def running(self) -> bool:
        return self.end_row is None

    @property
    def duration_ms(self) -> int | None:
        if self.started_ms is None or self.finished_ms is None:
            return None
        return max(0, self.finished_ms - self.started_ms)


class ShellState:
    """The prompt cycle and the commands of one screen, fed its OSC 133 marks."""

    __slots__ = (
        "ahead",
        "announced",
        "away",
        "checkpoint",
        "clock",
        "commands",
        "cycle",
        "entered",
        "entered_col",
        "integration",
        "key",
        "no_c",
        "pending",
        "phase",
        "screen",
        "taken",
    )

    def __init__(self, screen: ShellScreen, clock: Callable[[], int] | None = None) -> None:
        self.screen = screen
        self.clock = clock
        # Replaying a checkpoint (Terminal.feed_checkpoint): a mark without phux_at
        # is a cell's mark only (a writer that does not carry the commands).
        self.checkpoint = False
        # The pane's key: only marks signed with it count (None: all marks do).
        self.key: str | None = None
        # "none" (no signed mark yet), "starting" (the integration announced
        # itself, no prompt yet), "ready" (a prompt was marked) or "off".
        self.integration = NONE
        self.phase = NONE
        # The open prompt cycle: ("A" | "S" | "B", row, col) since the last
        # primary prompt ("S": a continuation prompt's A).
        self.cycle: list[tuple[str, int, int]] = []
        self.commands: list[CommandRecord] = []
        # The line feed that ended the open cycle's input (after its last B): when
        # (None: unknown), the absolute row below it and the input read then. A
        # shell with no C mark (dash) starts its command there: the start time and
        # command line of a D without C (whose rows a flood may have pushed out of
        # the history by then).
        self.entered: tuple[int | None, int, str] | None = None
        # The column of ``entered``'s row where that input ended: 0 after a line feed;
        # a B's column when the shell read a line typed ahead there (no line feed).
        self.entered_col = 0
        # A shell without C marks (sh) and its command's start (see ``foreground``):
        # ``pending``: the line feed that ended the input came after the cycle's last
        # mark (what follows is a continuation prompt, or the command runs);
        # ``announced``: CommandStarted was reported for the open cycle's command;
        # ``away``: the client's last foreground report said a job of the shell holds
        # the terminal, and no prompt mark came since.
        self.pending = False
        self.announced = False
        self.away = False
        # The shell prints no C mark: learned from a D that came with no C open (dash
        # prints one at its first prompt; bash, zsh and fish print D only after a C)
        # until a C comes, or from a checkpoint (``I;...;phux_noc=1``).
        self.no_c = False
        # Lines typed ahead (a shell without C): the tty echoed them before the
        # continuation prompt that reads them, so they are not after its B. ``ahead``:
        # echoed, not read yet; ``taken``: the cycle's B marks (by index) whose line
        # the shell read from ``ahead``.
        self.ahead: list[str] = []
        self.taken: dict[int, str] = {}

    # -- rows ----------------------------------------------------------------------

    def first_row(self) -> int:
        """The absolute number of the oldest row still held (history or viewport)."""
        screen = self.screen
        return screen.scrolled_off - len(screen.scrollback)

    def line(self, row: int) -> Line | None:
        """The main screen's row ``row`` (absolute), None when gone or never written."""
        screen = self.screen
        y = row - screen.scrolled_off
        if y >= 0:
            if y >= screen.lines:
                return None
            buffer = screen.main_buffer if screen.alternate else screen.buffer
            return buffer.get(y) if buffer is not None else None
        scrollback = screen.scrollback
        if -y > len(scrollback):
            return None
        return scrollback[y]

    def text(self, row: int, start: int = 0, end: int | None = None) -> str:
        """Cells ``start`` to ``end`` of a row as text (wide characters once; cells
        never written are blanks, so that a soft-wrapped row joins at its width)."""
        line = self.line(row)
        cols = self.screen.columns
        stop = cols if end is None else min(end, cols)
        if not line:
            return " " * max(0, stop - start)
        get = line.get
        out = []
        for x in range(start, stop):
            cell = get(x)
            if cell is None:
                out.append(" ")
                continue
            data = cell[0]
            if data and not data.isascii() and char_width(data[0]) == 2:
                right = get(x + 1)
                if x == cols - 1 or right is None or right[0] != "":
                    data = " "  # half a wide character (a narrowing cut it): a blank
            elif not data:
                left = get(x - 1) if x else None
                if left is None or not left[0] or char_width(left[0][0]) != 2:
                    data = " "  # a stub without its wide character
            out.append(data)
        return "".join(out)

    def _continues(self, row: int) -> bool:
        """Whether ``row`` soft-wraps from the row above (never the oldest row held:
        the row it continued is gone, and checkpoints drop the flag)."""
        if row <= self.first_row():
            return False
        line = self.line(row)
        return line is not None and line.wrapped

    def logical_end(self, row: int) -> int:
        """The last row of the logical line (soft wraps followed) that ``row`` starts."""
        limit = self.screen.scrolled_off + self.screen.lines - 1
        while row < limit and self._continues(row + 1):
            row += 1
        return row

    def input_text(self, row: int, col: int) -> str:
        """What was typed after a B mark at (row, col): to the end of its logical line,
        without a right prompt (an input line the shell accepted, or not at the cursor)."""
        if row < self.first_row():
            return ""  # (its start left the history)
        last = self.logical_end(row)
        parts = [self.text(row, col)]
        parts.extend(self.text(r) for r in range(row + 1, last + 1))
        text = "".join(parts).rstrip(" ")
        if last == row and self._reaches_edge(row):
            # A right prompt (zsh's RPROMPT, fish_right_prompt) ends at the row's right
            # edge, set off from the input by two blanks or more. Shells hide it once
            # the input reaches it, so a wrapped line has none.
            gap = text.rfind("  ")
            if gap >= 0:
                text = text[:gap].rstrip(" ")
        return text

    def _reaches_edge(self, row: int) -> bool:
        """Whether ``row`` holds something in its last three columns (zsh leaves the
        last one blank by default, ZLE_RPROMPT_INDENT)."""
        cols = self.screen.columns
        return self.text(row, max(0, cols - 3)).strip(" ") != ""

    def _at_cursor(self, row: int, col: int) -> str | None:
        """The input of a prompt whose B mark is at (row, col), read up to the cursor
        when the cursor is on the prompt's rows: what lies after the cursor is a right
        prompt, an autosuggestion (fish's, zsh-autosuggestions') or text the cursor was
        moved back over. Only an empty line before the cursor reads on past it (the
        cursor moved home: no suggestion is drawn for an empty line). None: the cursor
        is not on the prompt's rows."""
        screen = self.screen
        if screen.alternate or row < self.first_row():
            return None
        cursor = screen.cursor
        crow, ccol = screen.scrolled_off + cursor.y, min(cursor.x, screen.columns)
        if (crow, ccol) < (row, col):
            return None
        lines: list[str] = []
        r = row
        while r <= crow:
            start = col if r == row else 0
            end = self.logical_end(r)
            if end >= crow:
                parts = [self.text(x, start if x == r else 0) for x in range(r, crow)]
                parts.append(self.text(crow, start if crow == r else 0, ccol))
                lines.append("".join(parts).rstrip(" "))
                break
            lines.append(self.input_text(r, start))
            r = end + 1
        typed = "\n".join(lines)
        if not typed and crow == row:
            return self.input_text(row, col)
        return typed

    def typed(self) -> str:
        """The open cycle's input as the shell accepted it (read at its C or D mark):
        each B's text, continuation lines joined by newlines (a line typed ahead of
        its continuation prompt: as the tty echoed it)."""
        taken = self.taken
        return "\n".join(
            taken[i] if i in taken else self.input_text(r, c)
            for i, (kind, r, c) in enumerate(self.cycle)
            if kind == "B"
        )

    def output(self, rec: CommandRecord) -> tuple[str, bool]:
        """The rendered logical lines of ``rec``'s output range, and whether some of its
        rows left the history."""
        first = self.first_row()
        screen = self.screen
        truncated = rec.start_row < first or rec.erased
        end_row, end_col = rec.end_row, rec.end_col
        if end_row is None:  # running: up to the cursor's row
            end_row = screen.scrolled_off + screen.lines - 1
            end_col = screen.columns
            running = True
        else:
            running = False
            if end_col == 0:
                end_row -= 1
                end_col = screen.columns
            last = screen.scrolled_off + screen.lines - 1
            if end_row > last:  # (a mark placed below the screen by phux_at)
                end_row, end_col = last, screen.columns
        lines: list[str] = []
        for row in range(max(rec.start_row, first), end_row + 1):
            start = rec.start_col if row == rec.start_row else 0
            text = self.text(row, start, end_col if row == end_row else None)
            if lines and row != rec.start_row and self._continues(row):
                lines[-1] += text
            else:
                lines.append(text)
        lines = [line.rstrip(" ") for line in lines]
        if running:
            while lines and not lines[-1]:
                lines.pop()
        return "\n".join(lines), truncated

    def erase(self, row: int, col: int) -> None:
        """The main screen was erased from (row, col) on: finished ranges that ran
        past it are cut there; a running command's output restarts there if it
        started below (``clear; ls`` is the listing)."""
        commands = self.commands
        at = (row, col)
        for i in range(len(commands) - 1, -1, -1):
            rec = commands[i]
            if rec.end_row is None:
                if (rec.start_row, rec.start_col) > at:
                    commands[i] = _replace(rec, start_row=row, start_col=col)
                continue
            if (rec.end_row, rec.end_col) <= at:
                break  # (ranges end in order: the older ones end before)
            start = min((rec.start_row, rec.start_col), at)
            commands[i] = _replace(
                rec, start_row=start[0], start_col=start[1], end_row=row, end_col=col, erased=True
            )

    def positions(self) -> list[tuple[int, int]]:
        """Every position this state holds (absolute row, column): what a reflow
        (``EngineScreen.resize``) moves with the text, through :meth:`remap`."""
        out: list[tuple[int, int]] = []
        for rec in self.commands:
            out.append((rec.start_row, rec.start_col))
            if rec.end_row is not None:
                out.append((rec.end_row, rec.end_col))
        out.extend((row, col) for _kind, row, col in self.cycle)
        if self.entered is not None:
            out.append((self.entered[1], self.entered_col))
        return out

    def remap(self, place: Callable[[int, int], tuple[int, int]]) -> None:
        """Move every position (see :meth:`positions`) to ``place(row, col)``."""
        commands = self.commands
        for i, rec in enumerate(commands):
            start_row, start_col = place(rec.start_row, rec.start_col)
            end_row, end_col = rec.end_row, rec.end_col
            if end_row is not None:
                end_row, end_col = place(end_row, end_col)
            commands[i] = _replace(
                rec, start_row=start_row, start_col=start_col, end_row=end_row, end_col=end_col
            )
        self.cycle = [(kind, *place(row, col)) for kind, row, col in self.cycle]
        if self.entered is not None:
            when, row, typed = self.entered
            row, self.entered_col = place(row, self.entered_col)
            self.entered = (when, row, typed)

    def input_ended(self) -> None:
        """A line feed ends the input a B mark started (``EngineScreen.linefeed``)."""
        if self.phase in (PROMPT, CONTINUATION) and self.cycle and self.cycle[-1][0] == "B":
            clock = None if self.checkpoint else self.clock
            when = clock() if clock is not None else None
            row = self.screen.scrolled_off + self.screen.cursor.y + 1
            self.entered = (when, row, self.typed())
            self.entered_col = 0
            if not self.checkpoint:  # (a checkpoint says it with phux_entered)
                self.pending = True
                if self.away:
                    self._start_inferred()

    def foreground(self, shell_holds: bool) -> None:
        """What holds the terminal, from the server (TERMINAL_STATE: the PTY's
        foreground process group), told by a client of a shell that prints no C mark
        (sh): ``shell_holds`` False when a job the shell started holds it.

        A POSIX shell has no hook before a command, so at the line feed that ends
        its input nothing says whether a continuation prompt follows (the line was
        incomplete) or the command runs. Output after that line feed does not say
        either: it may be the tty's echo of lines typed ahead (an agent types a
        command of several lines at once), which comes before the shell even reads
        the first. The shell gives the terminal to a job only once it has read a
        whole command and runs it, and takes it back before it prints its next
        prompt: a job holding the terminal after the line feed is that command
        running. The report may come before the line feed (the server read the
        echo after it saw the job): it counts then, at the line feed, until the
        shell prints a prompt mark. A command that starts no job (a builtin:
        ``read x``, ``cd``) is reported started at its D mark."""
        self.away = not shell_holds
        if self.away and self.pending:
            self._start_inferred()

    def _start_inferred(self) -> None:
        """Report the start of the command whose input ended (once per command)."""
        entered = self.entered
        if self.announced or entered is None or not _is_command(entered[2]):
            return
        self.announced = True
        self.screen.events.append(CommandStarted(command=entered[2]))

    # -- marks ---------------------------------------------------------------------

    def mark(self, kind: str, args: str) -> None:
        """One OSC 133 mark (``kind`` and the rest of its parameters)."""
        screen = self.screen
        if kind == "I":
            # The integration announces itself (start, off) before any prompt;
            # checkpoints say where it stands (start, ready, off).
            self.integration = _ANNOUNCED.get(args.partition(";")[0], self.integration)
            if "phux_noc=1" in args.split(";"):  # (a checkpoint's: see _write_shell)
                self.no_c = True
            return
        if args == "phux_pen=1":  # (most marks of a checkpoint: no parsing)
            screen.set_semantic(_SEMANTIC[kind])
            return
        code: str | None = None
        params: dict[str, str] = {}
        if args:
            for i, arg in enumerate(args.split(";")):
                key, eq, value = arg.partition("=")
                if eq:
                    params[key] = value
                elif i == 0:
                    code = arg
        if "phux_pen" in params or (self.checkpoint and "phux_at" not in params):
            # In a checkpoint, a mark not placed with phux_at comes from a writer
            # whose checkpoints do not carry the shell's commands (phux before they
            # did, another server): bare marks of the cells, not a prompt cycle.
            screen.set_semantic(_SEMANTIC.get(kind, 0))
            if params.get("phux_spill") == "1":
                _respill(screen)
            return
        at = params.get("phux_at")
        replayed = at is not None
        row = col = 0
        if at is not None:
            y, _, x = at.partition(",")
            try:
                row, col = screen.scrolled_off + int(y), max(0, int(x))
            except ValueError:
                return
        else:
            cursor = screen.cursor
            row, col = screen.scrolled_off + cursor.y, cursor.x
            if col >= screen.columns:  # a pending wrap: what follows starts the next row
                row, col = row + 1, 0
            screen.set_semantic(_SEMANTIC.get(kind, 0))
        stamp = params.get("phux_t")
        when: int | None = None
        if stamp is not None:
            try:
                when = int(stamp)
            except ValueError:
                when = None
        elif not replayed and self.clock is not None and kind in "CD":
            when = self.clock()
        if kind in "AB":
            self.integration = READY
        was_pending = self.pending
        if kind in ("A", "B", "C", "D"):
            # The shell printed a mark: it holds the terminal (a job reported before
            # has ended), and a line feed before the mark ended no command's input.
            self.pending = False
            self.away = False
        if kind == "A":
            continuation = params.get("k") == "s"
            if self.phase == RUNNING:
                self._finish(None, when, row, col)
            if continuation:
                if was_pending and self.no_c and self.entered is not None and not replayed:
                    # The shell read a line and found it incomplete, and printed
                    # nothing of its own since: what lies between that line's end and
                    # this prompt is the tty's echo of lines typed ahead.
                    since = (self.entered[1], self.entered_col)
                    self.ahead.extend(self._lines_between(since, (row, col)))
                self.cycle.append(("S", row, col))
                self.phase = CONTINUATION
                self._ahead(params.get("phux_ahead"))
            else:
                self.cycle = [("A", row, col)]
                self.taken.clear()
                self.ahead.clear()
                self.entered = None
                self.announced = False
                self.phase = PROMPT
                screen.events.append(PromptStarted())
        elif kind == "B":
            if self.phase == RUNNING:
                self._finish(None, when, row, col)
            if self.phase in (NONE, RUNNING):
                self.phase = PROMPT
            self.cycle.append(("B", row, col))
            read = params.get("phux_read")  # (checkpoints': see _write_shell)
            if read is not None:
                self.taken[len(self.cycle) - 1] = percent_decode(read)
            elif self.ahead and self.phase == CONTINUATION and not replayed:
                # The shell reads the next line typed ahead at once: its input ended
                # here, and what follows is the command's output.
                self.taken[len(self.cycle) - 1] = self.ahead.pop(0)
                screen.set_semantic(0)
                clock = None if self.checkpoint else self.clock
                self.entered = (clock() if clock is not None else None, row, self.typed())
                self.entered_col = col
                self.pending = True
            at_end = params.get("phux_entered")  # (a checkpoint's: see _write_shell)
            if at_end is not None:
                y, t, typed_url, *more = at_end.split(",")
                try:
                    when = int(t) if t else None
                    self.entered = (when, screen.scrolled_off + int(y), percent_decode(typed_url))
                    self.entered_col = int(more[0]) if more else 0
                    self.pending = True  # (its input ended after this B)
                except ValueError:
                    self.entered = None
            self._ahead(params.get("phux_ahead"))
        elif kind == "C":
            if not replayed:
                self.no_c = False
            if self.phase == RUNNING:
                return  # (a shell whose hook fires twice for one command line)
            url = params.get("cmdline_url")
            command = percent_decode(url) if url is not None else self.typed()
            if replayed:
                # Without phux_cwd: the cwd of the command before (checkpoints
                # write it only when it changed), unless phux_nocwd says none.
                cwd_url = params.get("phux_cwd")
                if cwd_url is not None:
                    cwd = percent_decode(cwd_url)
                elif "phux_nocwd" in params or not self.commands:
                    cwd = None
                else:
                    cwd = self.commands[-1].cwd
            else:
                cwd = screen.cwd
            self._add(CommandRecord(
                command=command, cwd=cwd, exit_code=None, started_ms=when,
                finished_ms=None, start_row=row, start_col=col,
            ))  # fmt: skip
            self.cycle = []
            self.taken.clear()
            self.ahead.clear()
            self.entered = None
            self.phase = RUNNING
            if not self.announced:
                screen.events.append(CommandStarted(command=command))
            self.announced = False
        elif kind == "D":
            exit_code: int | None = None
            if code:
                try:
                    exit_code = int(code)
                except ValueError:
                    exit_code = None
            if self.phase == RUNNING:
                self._finish(exit_code, when, row, col, "phux_cut" in params)
            else:
                if not replayed:
                    self.no_c = True  # (a D with no C open: this shell prints none)
                # No C since the prompt (dash has no pre-exec hook): a command if
                # something was typed; its output starts below the typed lines,
                # and it started at the line feed that ended them.
                entered = self.entered
                typed = entered[2] if entered is not None else self.typed()
                started = entered[0] if entered is not None else None
                inputs = [(r, c) for k, r, c in self.cycle if k == "B"]
                if inputs and _is_command(typed):
                    if entered is not None:
                        start, start_col = entered[1], self.entered_col
                    else:
                        start, start_col = self.logical_end(inputs[-1][0]) + 1, 0
                    if (start, start_col) >= (row, col):
                        start, start_col = row, col  # no room for output: an empty range
                    rec = CommandRecord(
                        command=typed, cwd=screen.cwd, exit_code=exit_code, started_ms=started,
                        finished_ms=when, start_row=start, start_col=start_col,
                        end_row=row, end_col=col,
                    )  # fmt: skip
                    self._add(rec)
                    if not self.announced:
                        # Reported here at the latest (a builtin starts no job, and a
                        # client that follows no foreground sees none).
                        screen.events.append(CommandStarted(command=typed))
                    screen.events.append(
                        CommandFinished(
                            exit_code=exit_code,
                            command=typed,
                            started_ms=started,
                            finished_ms=when,
                        )
                    )
            self.cycle = []
            self.taken.clear()
            self.ahead.clear()
            self.entered = None
            self.announced = False
            self.phase = PROMPT

    def _add(self, rec: CommandRecord) -> None:
        commands = self.commands
        commands.append(rec)
        if len(commands) > MAX_COMMANDS:
            # A quarter at once, so that a long session does not pay a pass per command.
            del commands[: len(commands) - MAX_COMMANDS * 3 // 4]

    def _finish(
        self, exit_code: int | None, when: int | None, row: int, col: int, erased: bool = False
    ) -> None:
        commands = self.commands
        if not commands or commands[-1].end_row is not None:
            return
        rec = commands[-1]
        if (row, col) < (rec.start_row, rec.start_col):
            row, col = rec.start_row, rec.start_col  # (the screen was cleared)
        done = CommandRecord(
            command=rec.command, cwd=rec.cwd, exit_code=exit_code, started_ms=rec.started_ms,
            finished_ms=when, start_row=rec.start_row, start_col=rec.start_col,
            end_row=row, end_col=col, erased=erased,
        )  # fmt: skip
        commands[-1] = done
        self.screen.events.append(
            CommandFinished(
                exit_code=exit_code, command=rec.command, started_ms=rec.started_ms,
                finished_ms=when,
            )
        )  # fmt: skip

    def _ahead(self, lines: str | None) -> None:
        """A checkpoint's lines typed ahead and not read yet (``phux_ahead``)."""
        if lines is not None:
            self.ahead = percent_decode(lines).split("\n")

    def _lines_between(self, start: tuple[int, int], end: tuple[int, int]) -> list[str]:
        """The logical lines that end (with a line feed) from ``start`` to ``end``."""
        lines = []
        row, col = start
        while row < end[0]:
            last = self.logical_end(row)
            if last >= end[0]:
                break  # (it runs on into the row of ``end``: not ended)
            parts = [self.text(row, col)]
            parts.extend(self.text(r) for r in range(row + 1, last + 1))
            lines.append("".join(parts).rstrip(" "))
            row, col = last + 1, 0
        return lines

    def pending_input(self) -> str:
        if self.phase not in (PROMPT, CONTINUATION) or not self.cycle:
            return ""
        kind, row, col = self.cycle[-1]
        if kind != "B" or len(self.cycle) - 1 in self.taken:
            return ""
        text = self._at_cursor(row, col)
        return self.input_text(row, col) if text is None else text


def _is_command(typed: str) -> bool:
    """Whether a line read without a C mark ran something: not an empty line, nor one
    abandoned with Ctrl-C at the prompt (the tty echoes ``^C``)."""
    return bool(typed.strip()) and not typed.endswith("^C")


def _replace(rec: CommandRecord, **changes: object) -> CommandRecord:
    values = {name: getattr(rec, name) for name in _RECORD_FIELDS}
    values.update(changes)
    return CommandRecord(**values)


_RECORD_FIELDS = (
    "command", "cwd", "exit_code", "started_ms", "finished_ms",
    "start_row", "start_col", "end_row", "end_col", "erased",
)  # fmt: skip
_SEMANTIC = {"A": 1, "B": 2, "C": 0, "D": 0}
_HEX = frozenset("0123456789abcdefABCDEF")
# RFC 3986 unreserved characters, kept as they are by percent_encode.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def percent_decode(value: str) -> str:
    """``%XX`` escapes decoded as UTF-8 (invalid bytes replaced); anything else kept."""
    if "%" not in value:
        return value
    head, *escaped = value.split("%")
    out = [head.encode()]
    for part in escaped:
        if len(part) >= 2 and part[0] in _HEX and part[1] in _HEX:
            out += (bytes.fromhex(part[:2]), part[2:].encode())
        else:
            out += (b"%", part.encode())
    return b"".join(out).decode("utf-8", "replace")


def percent_encode(value: str, safe: str = "") -> str:
    """UTF-8 percent-encoding keeping RFC 3986 unreserved characters (and ``safe``)."""
    keep = _UNRESERVED | frozenset(safe)
    out = []
    for ch in value:
        if ch in keep:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)

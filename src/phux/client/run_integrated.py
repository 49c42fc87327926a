"""``run`` with the shell's own marks (phux's shell integration, OSC 133).

Types only the command and Enter, takes the output from the bytes between the
command's C and D marks (replayed into a fresh engine, so it is whole however far
it scrolled) and the exit code from D, and returns once the next prompt's B mark
is drawn; a continuation prompt after Enter is interrupted with C-c
(``IncompleteCommand``). Only marks signed with the pane's key count
(:mod:`phux.signed_marks`). The per-shell rules are in spec/shell-integration.md.
"""

from __future__ import annotations

import re
import time

from phux.client.deadline import Deadline
from phux.client.errors import (
    DeadlineExceeded,
    PhuxError,
    RunTimedOut,
)
from phux.client.run_base import (
    RunOutcome,
    _check_canonical_lines,
    _died,
    _ms_since,
    _typeahead,
    at_line_editor,
    command_line,
)
from phux.client.run_output import RUN_CAPTURE_BYTES, render_output
from phux.client.typeahead import Typeahead, without_echoes
from phux.record import Record
from phux.signed_marks import unsigned

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from phux.client.core import ClientCore
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.client.shell_scan import ShellView
    from phux.engine import ScreenState
    from phux.wire.frames import Foreground


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


_FISH_GRACE = 1.0
"""fish draws no continuation prompt: no mark, and fish quiet this long after it answered
the Enter (its editor's redraw), means it waits for more."""


_INTERRUPT_GRACE = 1.0
"""How long a shell may show no sign of a C-c (its tty's modes or foreground group
unchanged) before ``run`` presses it again (three times at most). A shell that took it
is waited for however slow its prompt hooks: another C-c would kill a hook's job."""


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
    interrupted_fg: Foreground | None = None  # the foreground when C-c was pressed
    interrupts = 0
    since = 0  # marks before this index came before the last C-c

    def press_c_c() -> None:
        nonlocal interrupted_at, interrupted_fg, interrupts, since
        _type(client, pane, scanner, b"\x03", deadline)
        interrupted_at, interrupted_fg = time.monotonic(), mirror.foreground
        interrupts += 1
        since = len(scanner.marks)

    try:
        scanner.start(mirror.next_seq)
        submitted = time.monotonic()
        try:
            _type(client, pane, scanner, data, deadline)
        except DeadlineExceeded:
            raise RunTimedOut(line, _ms_since(started)) from None
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
                    if time.monotonic() - foreign <= _FOREIGN_GRACE:
                        foreign_wake = Deadline(at=foreign + _FOREIGN_GRACE)
                    elif at_line_editor(pane.pid, mirror.foreground_of(pane)):
                        # No C naming our line came, and the shell reads a new line: it
                        # named ours otherwise (fish's abbreviations), it ran ours.
                        own = ""
                        continue
                    # (Else it took a line, ours, and runs its preexec hooks: C comes.)
            else:
                done = _redrawn(scanner, since)
            reacted = False
            if interrupted_at is not None:
                # The shell left its line editor (the tty's modes changed) or a prompt
                # hook's job took the terminal: it took the C-c and draws its prompt,
                # however slowly (TERMINAL_STATE comes after the output before it).
                reacted = mirror.foreground != interrupted_fg
                unheard = not reacted and time.monotonic() - interrupted_at > _INTERRUPT_GRACE
                if (done == "continuation" or unheard) and interrupts < 3:
                    # The C-c came before the editor read again (the shell asked
                    # anew), or no sign of it came: once more.
                    press_c_c()
                    continue
                if done is not None:
                    raise IncompleteCommand(
                        "the shell asked for more input (an unbalanced quote or bracket?): "
                        "interrupted it with C-c; nothing ran"
                    )
                if unheard:
                    raise IncompleteCommand(
                        "the shell asked for more input (an unbalanced quote or bracket?) "
                        f"and showed no sign of the {interrupts} C-c pressed (does it ignore "
                        "SIGINT?): nothing ran, but it may still wait for the rest"
                    )
            elif done == "continuation":
                press_c_c()
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
            if interrupted_at is not None and not reacted:
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
                    press_c_c()
    finally:
        mirror.bytes_hooks.remove(scanner.feed)
        mirror.resize_hooks.remove(scanner.resize)
        mirror.gap_hooks.remove(scanner.gap)
        if scanner.typeahead is not None:
            client.remove_sink(scanner.typeahead)
    return _integrated_outcome(scanner, line, own, submitted, prompts_needed)


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
    return at_line_editor(pane.pid, fg)


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
"""How long after another command's prompt ``run`` waits for a C naming its own line
before it takes the shell, back at its editor then, for one that named it otherwise."""


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
    return now.alive and at_line_editor(now.pid, now.foreground)


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


def _screen(mirror: Mirror, pane: Pane) -> ScreenState | None:
    engine = mirror.engine
    return engine.project(pane=pane.terminal) if engine is not None else None

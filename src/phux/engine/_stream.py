"""EngineStream: a pyte ``Stream`` subclass with a regex tokenizer.

Stock pyte walks every non-text character through a generator. Here one
compiled regex matches, at the current position, either a whole run of plain
text or a whole control/escape sequence, so escape-heavy output costs one
regex match and one dispatch per sequence. Sequences cut by a chunk boundary
are kept in ``_pending`` (short) or in the string state (OSC/DCS/APC/PM/SOS
payloads) and completed by the next ``feed``.

Nothing raises out of ``feed``: unknown or malformed sequences are consumed,
never printed, and a handler that fails only loses its own sequence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from phux.engine import _replies
from phux.engine._cells import SEM_INPUT, SEM_OUTPUT
from phux.engine._pyte import pyte
from phux.engine._screen import EngineScreen
from phux.engine._sgr import _sgr_run
from phux.engine._widths import narrow_class

ESC = "\x1b"

# Written with the characters themselves, not raw-string escapes (r"\x1b"):
# sre parses them ~25% faster, and compiling this is much of the import.
_TOKEN = re.compile(
    # 1: plain text, and the CR LF that often ends it
    "([^\x00-\x1f\x7f-\x9f]+(?:\r\n)?)"
    # 2: one or more SGR sequences in a row (applied as one)
    "|((?:\x1b\\[[0-9;:]*m)+)"
    # 3: CSI; 4 private prefix, 5 parameters, 6 intermediates, 7 final
    "|(\x1b\\[([\x3c-\x3f]?)([\x30-\x3b]*)([\x20-\x2f]*)([\x40-\x7e]))"
    # 8: C0 controls that do something (CR LF as one)
    "|(\r\n|[\x07-\x0f])"
    # 9: complete OSC; 10 payload
    "|(\x1b\\]([^\x07\x1b\x18\x1a]*)(?:\x07|\x1b\\\\))"
    # 11: ESC with intermediates; 12 intermediates, 13 final
    "|(\x1b([\x20-\x2f]+)([\x30-\x7e]))"
    # 14: two-character ESC sequence (not CSI/OSC/DCS/SOS/PM/APC); 15 final
    "|(\x1b([\x30-\x4f\x51-\x57\x59\x5a\\\\\x60-\x7e]))"
    # 16: complete DCS/SOS/PM/APC: swallowed
    "|(\x1b[PX^_][^\x1b\x18\x1a]*\x1b\\\\)"
    # 17: other controls, and C1 code points (not controls in UTF-8): ignored
    "|([\x00-\x06\x10-\x1a\x1c-\x1f\x7f-\x9f])"
)
# Lines of width-1 characters, each ended by CR LF: a flood drawn in one call.
# Those of printable ASCII are matched first: that class compiles in ~0.1 ms,
# the whole class of width-1 characters (narrow_class) in ~2 ms.
_ASCII_LINES = re.compile("(?:[\x20-\x7e]*\r\n)+")


@cache
def _narrow_lines() -> re.Pattern[str]:
    """``_ASCII_LINES`` for any width-1 characters; compiled on first use."""
    return re.compile(f"(?:{narrow_class()}*\r\n)+")


# _narrow_lines().match, once a feed needed it (see _lines_end).
_narrow_lines_match: Callable[[str, int], re.Match[str] | None] | None = None


def _lines_end(data: str, pos: int) -> int:
    """Where the lines of width-1 characters (each ended by CR LF) from ``pos`` end,
    ``pos`` if none start there; for text that is not all ASCII.

    Printable ASCII lines are matched first. Where they stop, a line with a
    control or a non-ASCII character follows, and only the second kind can be
    width-1 characters: so the whole class is compiled only once such a line
    holds no control before its CR LF, and coloured output or a prompt's OSC
    costs no compilation.
    """
    global _narrow_lines_match
    match = _narrow_lines_match
    if match is None:
        ascii_lines = _ASCII_LINES.match(data, pos)
        if ascii_lines is not None:
            pos = ascii_lines.end()
        text = _TOKEN.match(data, pos)
        if text is None or text.lastindex != 1 or data[text.end() - 1] != "\n":
            return pos
        match = _narrow_lines_match = _narrow_lines().match
    more = match(data, pos)
    return pos if more is None else more.end()


# The rest is needed only by sequences cut by a chunk boundary, interrupted,
# malformed or long: compiled on first use.
@cache
def _csi() -> re.Pattern[str]:
    return re.compile("\x1b\\[([\x3c-\x3f]?)([\x30-\x3b]*)([\x20-\x2f]*)([\x40-\x7e])")


@cache
def _string_end(osc: bool) -> re.Pattern[str]:
    """What ends (or aborts) an OSC string (BEL too), or a DCS/SOS/PM/APC string."""
    return re.compile("[\x07\x1b\x18\x1a]" if osc else "[\x1b\x18\x1a]")


_MAX_SEQUENCE = 1024
_MAX_OSC = 1 << 16
_MAX_DCS = 64  # DCS payloads are kept only to answer DECRQSS, which is short


def _ints(params: str) -> list[int]:
    """CSI parameters as pyte passes them: missing ones are 0, values capped at 9999."""
    if not params:
        return [0]
    if params.isdigit():
        v = int(params)
        return [v if v < 9999 else 9999]
    return [min(int(p), 9999) if p else 0 for p in params.split(";")]


# CRs in a row (no line feed) after which a feed looks for repaints of one row
# (_bulk._repaints), if at least this much text follows.
_REPAINTS = 8
_REPAINTS_MIN = 256
# Shorter feeds never try the bulk path (_bulk): too few rows to skip any.
_BULK_MIN = 2048
# How many times one feed tries the bulk path again further on (each try reads
# the rest of the feed once).
_BULK_RETRIES = 2


class EngineStream(pyte.Stream):
    """Feeds decoded text into an :class:`EngineScreen`."""

    bulk = True
    """Whether a long feed may skip drawing rows that would scroll out of the
    history (``_bulk``); off only to compare with drawing every byte."""

    def __init__(self, screen: EngineScreen) -> None:
        super().__init__(screen)
        self.screen = screen
        self.errors = 0
        self._pending = ""
        self._string_kind: str | None = None
        self._string_parts: list[str] = []
        self._string_len = 0
        self._string_esc = False
        self._retries = 0
        s = screen
        self._controls: dict[str, Callable[[], None]] = {
            "\x07": s.bell,
            "\x08": s.backspace,
            "\x09": s.tab,
            "\x0a": s.linefeed,
            "\x0b": s.linefeed,
            "\x0c": s.linefeed,
            "\x0d": s.carriage_return,
            "\x0e": s.shift_out,
            "\x0f": s.shift_in,
            "\r\n": self._crlf,
        }
        # final -> (handler, number of parameters it takes)
        self._csi_table: dict[str, tuple[Callable[..., None], int]] = {
            "@": (s.insert_characters, 1),
            "A": (s.cursor_up, 1),
            "B": (s.cursor_down, 1),
            "C": (s.cursor_forward, 1),
            "D": (s.cursor_back, 1),
            "E": (s.cursor_down1, 1),
            "F": (s.cursor_up1, 1),
            "G": (s.cursor_to_column, 1),
            "H": (s.cursor_position, 2),
            "I": (s.tab_forward, 1),
            "J": (s.erase_in_display, 1),
            "K": (s.erase_in_line, 1),
            "L": (s.insert_lines, 1),
            "M": (s.delete_lines, 1),
            "P": (s.delete_characters, 1),
            "S": (s.scroll_up, 1),
            "X": (s.erase_characters, 1),
            "Z": (s.tab_backward, 1),
            "`": (s.cursor_to_column, 1),
            "a": (s.cursor_forward, 1),
            "b": (s.repeat_last, 1),
            "d": (s.cursor_to_line, 1),
            "e": (s.cursor_down, 1),
            "f": (s.cursor_position, 2),
            "g": (s.clear_tab_stop, 1),
            "n": (s.report_device_status, 1),
            "r": (s.set_margins, 2),
            "s": (s.save_cursor, 0),
            "u": (s.restore_cursor, 0),
        }
        self._esc_table: dict[str, Callable[[], None]] = {
            "D": s.index,
            "E": s.next_line,
            "M": s.reverse_index,
            "H": s.set_tab_stop,
            "7": s.save_cursor,
            "8": s.restore_cursor,
            "c": s.reset,
            "=": self._keypad_application,
            ">": self._keypad_numeric,
        }

    def _crlf(self) -> None:
        screen = self.screen
        screen.cursor.x = 0
        if screen.semantic == SEM_INPUT:  # (a line feed ends the input: linefeed())
            screen.set_semantic(SEM_OUTPUT)
            screen.shell.input_ended()
        screen.index()  # LNM would only add another CR

    def _keypad_application(self) -> None:
        self.screen.app_keypad = True

    def _keypad_numeric(self) -> None:
        self.screen.app_keypad = False

    # -- feeding ------------------------------------------------------------------

    def feed(self, data: str, raw: bytes | None = None) -> None:
        """Parse ``data``; ``raw``, if given, is ``data`` as ASCII bytes (for the bulk
        path's scans)."""
        if self._pending:
            data = self._pending + data
            self._pending = ""
            raw = None
        pos = 0
        if self._string_kind is not None:
            raw = None
            if self._string_esc:
                self._string_esc = False
                data = ESC + data
            pos = self._continue_string(data, 0)
        n = len(data)
        if n - pos > _BULK_MIN and self.bulk:
            from phux.engine._bulk import skip  # (not imported for short feeds)

            pos, later = skip(self, data, pos, self._retries < _BULK_RETRIES, raw)
            if later:
                # Something near the start does more than scroll (a prompt, the
                # header of a checkpoint): drawn exactly, then the rest tried again.
                self._retries += 1
                try:
                    self.feed(data[pos:later], None if raw is None else raw[pos:later])
                    self.feed(data[later:], None if raw is None else raw[later:])
                finally:
                    self._retries -= 1
                return
        match = _TOKEN.match
        # Floods: printable ASCII lines in ASCII text; in other text the whole
        # class's, or _lines_end until the class is compiled.
        lines = _ASCII_LINES.match if data.isascii() else _narrow_lines_match
        screen = self.screen
        draw_lines = screen.draw_lines
        draw = screen.draw
        sgr = screen.sgr
        crlf = self._crlf
        controls = self._controls
        # CRs without a line feed since: past a few, the row may be repainted over
        # and over (a progress bar), which _bulk._repaints skips.
        crs = 0
        repaint_from = 0 if self.bulk else n
        while pos < n:
            m = match(data, pos)
            if m is None:
                try:
                    pos = self._slow(data, pos)
                except Exception:
                    self.errors += 1
                    pos += 1
                if not self._pending:  # a cut sequence resets nothing until it completes
                    screen.last_char = ""
                continue
            end = m.end()
            kind = m.lastindex
            try:
                if kind == 1:
                    if data[end - 1] == "\n":
                        draw(data[pos : end - 2])
                        crlf()
                        if lines is not None:
                            more = lines(data, end)
                            stop = end if more is None else more.end()
                        else:
                            stop = _lines_end(data, end)
                        if stop == end:
                            screen.last_char = ""
                        else:  # a flood of short lines: the rest in one call
                            draw_lines(data[end : stop - 2].split("\r\n"))
                            end = stop
                    else:
                        draw(data[pos:end])
                elif kind == 2:
                    run = data[pos + 2 : end - 1]
                    if "m\x1b[" not in run:
                        sgr(run)
                    else:
                        _sgr_run(sgr, run)
                elif kind == 3:
                    prefix, params, inter, final = m.group(4, 5, 6, 7)
                    self._csi(prefix, params, inter, final)
                elif kind == 8:
                    control = data[pos:end]
                    controls[control]()
                    if control == "\r" and end >= repaint_from:
                        crs += 1
                        if crs >= _REPAINTS and n - end > _REPAINTS_MIN:
                            crs = 0
                            from phux.engine._bulk import _repaints

                            cut = _repaints(self, data, end, raw)
                            if cut > end:
                                end = cut
                            else:  # not before the next line feed
                                repaint_from = data.find("\n", end) % (n + 1)
                    elif control == "\r\n" or control == "\n":
                        crs = 0
                elif kind == 9:
                    self._osc(m.group(10), data[end - 1] == "\x07")
                elif kind == 16:
                    if data[pos + 1] == "P":
                        self._dcs(data[pos + 2 : end - 2])
                elif kind == 11:
                    self._esc(m.group(12), m.group(13))
                elif kind == 14:
                    self._esc("", m.group(15))
            except Exception:
                self.errors += 1
            if kind != 1:
                # REP repeats a graphic character only right after it (ECMA-48
                # leaves it undefined after a control function; tmux ignores it).
                screen.last_char = ""
            pos = end

    def _slow(self, data: str, pos: int) -> int:
        """Handle a sequence the fast regex could not: cut, interrupted, malformed or long."""
        n = len(data)
        if data[pos] != ESC:
            return pos + 1
        seq = ESC
        i = pos + 1
        while i < n:
            ch = data[i]
            o = ord(ch)
            if ch == "\x18" or ch == "\x1a":
                return i + 1  # CAN/SUB abort the sequence.
            if ch == ESC:
                return i  # A new sequence starts; this one is abandoned.
            if o < 0x20:
                handler = self._controls.get(ch)
                if handler is not None:
                    handler()  # C0 controls inside a sequence are executed.
                i += 1
                continue
            if o >= 0x7F:
                # DEL, and any non-ASCII character (C1 code points included),
                # is skipped and the sequence goes on, as tmux does.
                i += 1
                continue
            i += 1
            if seq == ESC:
                if ch in "]PX^_":
                    return self._start_string(data, i, ch)
                if ch == "[":
                    seq = "\x1b["
                    continue
            if len(seq) < _MAX_SEQUENCE:
                seq += ch
            if seq[1] == "[":
                if 0x40 <= o <= 0x7E:
                    csi = _csi().fullmatch(seq)
                    if csi is not None:
                        self._csi(*csi.groups())
                    return i
            elif o >= 0x30:
                self._esc(seq[1:-1], ch)
                return i
        self._pending = seq
        return n

    def unparsed(self) -> str:
        """What was fed but not acted on yet (a sequence or string cut short), as fed:
        feeding it to a fresh stream leaves the same parse state."""
        if self._string_kind is None:
            return self._pending
        held = "".join(self._string_parts)  # OSC and short DCS payloads: others are dropped
        return ESC + self._string_kind + held + (ESC if self._string_esc else "")

    # -- strings (OSC, DCS, SOS, PM, APC) --------------------------------------------

    def _start_string(self, data: str, pos: int, kind: str) -> int:
        self._string_kind = kind
        self._string_parts = []
        self._string_len = 0
        self._string_esc = False
        return self._continue_string(data, pos)

    def _continue_string(self, data: str, pos: int) -> int:
        kind = self._string_kind
        n = len(data)
        m = _string_end(kind == "]").search(data, pos)
        if m is None:
            self._append_string(data[pos:])
            return n
        j = m.start()
        self._append_string(data[pos:j])
        t = data[j]
        if t == "\x07":
            self._finish_string(bel=True)
            return j + 1
        if t != ESC:
            self._abort_string()  # CAN / SUB
            return j + 1
        if j + 1 >= n:
            self._string_esc = True  # ESC at the end of the chunk: decide next time.
            return n
        if data[j + 1] == "\\":
            self._finish_string()
            return j + 2
        self._abort_string()
        return j

    def _append_string(self, text: str) -> None:
        kind = self._string_kind
        limit = _MAX_OSC if kind == "]" else _MAX_DCS if kind == "P" else 0
        if text and self._string_len < limit:
            self._string_parts.append(text)
            self._string_len += len(text)

    def _finish_string(self, bel: bool = False) -> None:
        kind = self._string_kind
        payload = "".join(self._string_parts)
        self._abort_string()
        try:
            if kind == "]" and len(payload) <= _MAX_OSC:
                self._osc(payload, bel)
            elif kind == "P" and len(payload) <= _MAX_DCS:
                self._dcs(payload)
        except Exception:
            self.errors += 1

    def _osc(self, payload: str, bel: bool) -> None:
        if payload.endswith(";?") and payload[:2] in ("10", "11", "12"):
            reply = _replies.colour_report(payload, bel)
            if reply is not None:
                self.screen.write_process_input(reply)
            return
        self.screen.osc(payload)

    def _dcs(self, payload: str) -> None:
        """DCS strings are swallowed; DECRQSS (``$ q``) is answered."""
        if payload.startswith("$q"):
            self.screen.write_process_input(_replies.decrqss(self.screen, payload[2:]))

    def _abort_string(self) -> None:
        self._string_kind = None
        self._string_parts = []
        self._string_len = 0
        self._string_esc = False

    # -- dispatch ---------------------------------------------------------------------

    def _csi(self, prefix: str, params: str, inter: str, final: str) -> None:
        s = self.screen
        if inter:
            if inter == "!" and final == "p" and not prefix:
                s.soft_reset()
            elif inter == "$" and final == "p" and prefix in ("", "?"):
                answer = _replies.decrqm(s, params, prefix == "?")
                if answer:
                    s.write_process_input(answer)
            elif inter == " " and final == "q" and not prefix:
                style = _ints(params)[0]
                if style <= 6:  # DECSCUSR (xterm: larger values are ignored)
                    s.cursor_style = style
            return  # DECSCA, ...: nothing to track.
        if prefix:
            if ":" in params:
                return
            if prefix == "?":
                if final == "h":
                    s.set_mode(*_ints(params), private=True)
                elif final == "l":
                    s.reset_mode(*_ints(params), private=True)
                elif final == "J":
                    s.erase_in_display(_ints(params)[0])
                elif final == "K":
                    s.erase_in_line(_ints(params)[0])
                elif final == "n":
                    s.report_device_status(_ints(params)[0], private=True)
                elif final == "u":
                    s.kitty_keys(prefix, params)
            elif final == "u":
                s.kitty_keys(prefix, params)
            elif prefix == ">" and final == "c":
                s.report_device_attributes(_ints(params)[0], secondary=True)
            elif prefix == ">" and final == "q" and _ints(params)[0] == 0:
                s.write_process_input(_replies.xtversion())
            return  # CSI > 4;2 m (XTMODKEYS), CSI ? 4 m, CSI = c ...: ignored.
        if final == "m":
            s.sgr(params)
            return
        if ":" in params:
            return
        args = _ints(params)
        entry = self._csi_table.get(final)
        if entry is not None:
            handler, nargs = entry
            handler(*args[:nargs])
        elif final == "h":
            s.set_mode(*args)
        elif final == "l":
            s.reset_mode(*args)
        elif final == "T":
            if len(args) == 1:
                s.scroll_down(args[0])
        elif final == "c":
            s.report_device_attributes(args[0])
        elif final == "t":
            reply = _replies.window_report(s, args[0])
            if reply is not None:
                s.write_process_input(reply)

    def _esc(self, inter: str, final: str) -> None:
        s = self.screen
        if not inter:
            handler = self._esc_table.get(final)
            if handler is not None:
                handler()
        elif inter == "#":
            if final == "8":
                s.alignment_display()
        elif inter in ("(", ")"):
            # Honoured in UTF-8 too (stock pyte ignores it), for DEC line drawing.
            s.define_charset(final, inter)

    def select_other_charset(self, code: str) -> None:
        """ESC % is a no-op: input is always decoded as UTF-8."""

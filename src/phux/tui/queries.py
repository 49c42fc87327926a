"""Strip terminal queries from the output an attached human's terminal sees.

Why: a program asks its terminal questions (device attributes, cursor
position, colours, modes, version ...) by writing escape sequences, and the
terminal answers by *typing* the answer into the program's input. With phux
the program's terminal is the server's PTY; its answers come from the server
(its replica of each terminal), once. If an attached human's terminal saw
the same queries it would answer them too, and those answers would arrive in
the program's input as keystrokes a second time (or, with several humans
attached, a third and a fourth). So ``phux attach`` removes every query from
the bytes it passes through, and nothing else.

:class:`QueryFilter` is an incremental scanner: ``feed(chunk)`` returns the
bytes to show, holding back the tail of a sequence split across chunks until
it is complete. Plain text between escape sequences is passed through in
slices, so the cost is one ``find`` per chunk for text-only output.

Removed (7-bit forms; UTF-8 output makes raw C1 bytes meaningless):

* ``CSI c``, ``CSI 0 c`` (DA1), ``CSI > c`` (DA2), ``CSI = c`` (DA3)
* ``CSI n`` device status reports: ``CSI 5 n``, ``CSI 6 n``, ``CSI ? 6 n`` ...
  (``CSI > n``, which sets xterm's modifyKeys, is kept)
* ``CSI Ps $ p`` / ``CSI ? Ps $ p`` (DECRQM)
* ``CSI > q`` (XTVERSION), ``CSI ? u`` (kitty keyboard flags), ``CSI ? Pp m``
  (XTQMODKEYS), ``CSI 0 x`` / ``CSI 1 x`` (DECREQTPARM)
* ``CSI 11..21 t`` (window state/size reports; 22/23 title stack ops are kept)
* OSC 4/5/10-19 with a ``?`` field (colour queries), OSC 52 with ``?``
  (clipboard read)
* DCS ``$ q`` (DECRQSS) and DCS ``+ q`` (XTGETTCAP)
* ``ESC Z`` (DECID) and ENQ (answerback)

Strings (OSC, DCS, APC, PM, SOS) are held only while they could still be a
query; a string longer than :data:`MAX_HELD` bytes is decided then and the
rest streams through, so a megabyte image or clipboard write is not buffered.
"""

from __future__ import annotations

ESC = 0x1B
BEL = 0x07
CAN = 0x18
SUB = 0x1A
ENQ = 0x05

MAX_HELD = 256
"""Bytes of an escape sequence held back before it is decided."""

_GROUND, _ESC, _CSI, _STRING, _STRING_ESC, _PASS_STRING, _PASS_STRING_ESC = range(7)

_WINDOW_REPORTS = frozenset({11, 13, 14, 15, 16, 18, 19, 20, 21})
_OSC_COLOUR_CODES = frozenset({"4", "5", "10", "11", "12", "13", "14", "15", "16", "17", "19"})


def _int(text: bytes) -> int | None:
    return int(text) if text.isdigit() else None


def is_query_csi(seq: bytes) -> bool:
    """``seq`` is a whole CSI sequence (``ESC [ ... final``)."""
    final = seq[-1:]
    body = seq[2:-1]
    prefix = body[:1] if body[:1] in (b"?", b">", b"=", b"<") else b""
    rest = body[len(prefix) :]
    intermediates = bytes(b for b in rest if 0x20 <= b <= 0x2F)
    params = bytes(b for b in rest if 0x30 <= b <= 0x3F)
    first = _int(params.split(b";")[0]) if params else None
    if final == b"c":
        return not intermediates and prefix in (b"", b">", b"=") and params in (b"", b"0")
    if final == b"n":
        return not intermediates and prefix in (b"", b"?")
    if final == b"p":
        return intermediates == b"$" and prefix in (b"", b"?")
    if final == b"q":
        return prefix == b">" and not intermediates
    if final == b"u":
        return prefix == b"?" and not intermediates
    if final == b"m":
        return prefix == b"?" and not intermediates
    if final == b"x":
        return not prefix and not intermediates and params in (b"", b"0", b"1")
    if final == b"t":
        return not prefix and not intermediates and first in _WINDOW_REPORTS
    return False


def is_query_string(seq: bytes) -> bool:
    """``seq`` is a whole string sequence: ``ESC ]``/``ESC P``/... payload terminator."""
    kind = seq[1:2]
    payload = seq[2:]
    if payload.endswith(b"\x1b\\"):
        payload = payload[:-2]
    elif payload.endswith(b"\x07"):
        payload = payload[:-1]
    if kind == b"]":
        fields = payload.split(b";")
        code = fields[0].decode("ascii", "replace")
        if code in _OSC_COLOUR_CODES or code == "52":
            return b"?" in fields[1:]
        return False
    if kind == b"P":
        return payload.startswith((b"$q", b"+q"))
    return False


class QueryFilter:
    """Incremental: ``feed`` returns what to pass through; state carries over chunks."""

    def __init__(self) -> None:
        self._state = _GROUND
        self._held = bytearray()
        self.removed = 0
        """How many queries were removed (for tests and diagnostics)."""

    def reset(self) -> None:
        """Forget a partial sequence (after a gap in the stream)."""
        self._state = _GROUND
        self._held.clear()

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        i = 0
        n = len(data)
        held = self._held
        while i < n:
            state = self._state
            if state == _GROUND:
                j = data.find(b"\x1b", i)
                k = data.find(b"\x05", i, n if j < 0 else j)
                if k >= 0:  # ENQ: drop it (the answerback is a reply)
                    out += data[i:k]
                    self.removed += 1
                    i = k + 1
                    continue
                if j < 0:
                    out += data[i:]
                    break
                out += data[i:j]
                held.append(ESC)
                self._state = _ESC
                i = j + 1
                continue
            b = data[i]
            i += 1
            if state == _ESC:
                if b == ESC:
                    out += held  # ESC ESC: the first one stands alone
                    held.clear()
                    held.append(ESC)
                    continue
                held.append(b)
                if b == 0x5B:  # [
                    self._state = _CSI
                elif b in (0x5D, 0x50):  # ] P: OSC, DCS (may be queries)
                    self._state = _STRING
                elif b in (0x58, 0x5E, 0x5F):  # X ^ _: SOS, PM, APC (never queries)
                    out += held
                    held.clear()
                    self._state = _PASS_STRING
                elif b == 0x5A:  # Z: DECID
                    held.clear()
                    self.removed += 1
                    self._state = _GROUND
                elif 0x20 <= b <= 0x2F and len(held) < MAX_HELD:
                    pass  # an intermediate: ESC ( B and friends continue
                else:
                    out += held
                    held.clear()
                    self._state = _GROUND
                continue
            if state == _CSI:
                if b == ESC:
                    out += held  # an aborted sequence: as the terminal would see it
                    held.clear()
                    held.append(ESC)
                    self._state = _ESC
                    continue
                held.append(b)
                if 0x40 <= b <= 0x7E:
                    if is_query_csi(bytes(held)):
                        self.removed += 1
                    else:
                        out += held
                    held.clear()
                    self._state = _GROUND
                elif b in (CAN, SUB) or len(held) > MAX_HELD:
                    out += held
                    held.clear()
                    self._state = _GROUND
                continue
            if state in (_STRING, _STRING_ESC):
                if state == _STRING_ESC and b != 0x5C:
                    # ESC not followed by \\ aborted the string and starts a new
                    # sequence: pass the string through, reprocess b after ESC.
                    out += held[:-1]
                    held.clear()
                    held.append(ESC)
                    self._state = _ESC
                    i -= 1
                    continue
                held.append(b)
                if b == BEL or state == _STRING_ESC:  # BEL or ESC \\ ends it
                    if is_query_string(bytes(held)):
                        self.removed += 1
                    else:
                        out += held
                    held.clear()
                    self._state = _GROUND
                elif b in (CAN, SUB):
                    out += held
                    held.clear()
                    self._state = _GROUND
                elif len(held) > MAX_HELD:
                    out += held  # too long to be a query: stream the rest
                    held.clear()
                    self._state = _PASS_STRING_ESC if b == ESC else _PASS_STRING
                else:
                    self._state = _STRING_ESC if b == ESC else _STRING
                continue
            # _PASS_STRING / _PASS_STRING_ESC: copy through to the terminator
            if state == _PASS_STRING_ESC:
                if b == 0x5C:
                    out += b"\x1b\\"
                    self._state = _GROUND
                else:  # ESC that is not ST: it starts a new sequence
                    held.clear()
                    held.append(ESC)
                    self._state = _ESC
                    i -= 1
                continue
            stop = i - 1
            while stop < n and data[stop] not in (BEL, ESC, CAN, SUB):
                stop += 1
            out += data[i - 1 : stop]
            if stop >= n:
                break
            term = data[stop]
            i = stop + 1
            if term == ESC:
                self._state = _PASS_STRING_ESC
            else:
                out.append(term)
                self._state = _GROUND
        return bytes(out)

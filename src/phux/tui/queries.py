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
it is complete. Every ESC starts a new sequence (string payloads hold none but their ST), so
a chunk is scanned with one regex for query *candidates* and everything else
is copied through in slices: tens of MB/s even for colour-heavy output.

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

An incomplete sequence at the end of a chunk is held until the next one; a
string longer than :data:`MAX_HELD` bytes is too long to be a query and
streams through, so a megabyte image or clipboard write is never buffered.
"""

from __future__ import annotations

import re

MAX_HELD = 4096
"""Bytes of an escape sequence held back before it is decided."""


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


# A whole sequence: CSI, a string (OSC, DCS, SOS, PM, APC), or ESC + intermediates + final.
_SEQUENCE = re.compile(
    rb"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    rb"|\x1b[\]P_^X][^\x07\x1b\x18\x1a]*(?:\x07|\x1b\\)"
    rb"|\x1b(?:[\x20-\x2f]+[\x30-\x7e]|[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])"
)
# The start of a sequence that the next chunk may complete.
_PARTIAL = re.compile(
    rb"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*|[\]P_^X][^\x07\x1b\x18\x1a]*\x1b?|[\x20-\x2f]*)"
)
# Where a query may start: everything else passes through in bulk slices.
_CANDIDATE = re.compile(
    rb"\x1b(?:\[[?>=]?[0-9;]*\$?[cnpquxt]|\[\?[0-9;]*m|\](?:[45]|1[0-9]|52);|P[$+]q|Z)"
)


class QueryFilter:
    """Incremental: ``feed`` returns what to pass through; state carries over chunks.

    Every ESC starts a new sequence (string payloads hold none but their ST),
    so a chunk is scanned for query *candidates* only and the rest is copied
    in slices; the one thing carried over is a trailing incomplete sequence.
    """

    def __init__(self) -> None:
        self._held = b""
        self.removed = 0
        """How many queries were removed (for tests and diagnostics)."""

    def reset(self) -> None:
        """Forget a partial sequence (after a gap in the stream)."""
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        if self._held:
            data = self._held + data
            self._held = b""
        k = data.rfind(b"\x1b")
        if k > 0 and k == len(data) - 1:
            # A lone ESC may be the first half of the ST of a string begun earlier.
            k2 = data.rfind(b"\x1b", 0, k)
            if (
                k2 >= 0
                and data[k2 + 1 : k2 + 2] in (b"]", b"P")
                and _PARTIAL.fullmatch(data, k2) is not None
            ):
                k = k2
        if (
            k >= 0
            and len(data) - k <= MAX_HELD
            and _SEQUENCE.match(data, k) is None
            and _PARTIAL.fullmatch(data, k) is not None
        ):
            # An incomplete sequence at the end: the next chunk decides it. (A
            # longer one is a string too long to be a query: it passes.)
            self._held = data[k:]
            data = data[:k]
        pieces: list[bytes] = []
        pos = 0
        for cand in _CANDIDATE.finditer(data):
            begin = cand.start()
            if begin < pos:
                continue
            whole = _SEQUENCE.match(data, begin)
            if whole is None:
                continue  # interrupted: the terminal will not see a query either
            if _is_query(whole.group()):
                pieces.append(data[pos:begin])
                pos = whole.end()
                self.removed += 1
        if pos:
            pieces.append(data[pos:])
            data = b"".join(pieces)
        if b"\x05" in data:  # ENQ asks for the answerback: a query too
            self.removed += data.count(b"\x05")
            data = data.replace(b"\x05", b"")
        return data


def _is_query(seq: bytes) -> bool:
    kind = seq[1]
    if kind == 0x5B:  # [
        return is_query_csi(seq)
    if kind in (0x5D, 0x50):  # ] P
        return is_query_string(seq)
    return seq == b"\x1bZ"

"""Filter the output an attached person's terminal sees, as tmux filters a pane.

Why: a program asks its terminal questions (device attributes, cursor
position, colours, modes, version ...) by writing escape sequences, and the
terminal answers by *typing* the answer into the program's input. With phux
the program's terminal is the server's PTY; its answers come from the server
(its replica of each terminal), once. If an attached person's terminal saw
the same queries it would answer them too, and those answers would arrive in
the program's input as keystrokes a second time (or, with several people
attached, a third and a fourth). So ``phux attach`` removes every query the
server answers (spec/L1.md §5.2), recognised as the engine parses them (any
parameters after a first 0, C0 controls and non-ASCII inside), and the other
well-known queries too: an answer from the person's terminal would come late,
after the server's DA1 answer, as if typed.

And, as tmux does by default, what the program may not do to the person's
terminal: OSC 52 clipboard writes are dropped (unless allowed:
``--allow-clipboard``; clipboard reads never pass), OSC 0/1/2 titles lose
their control characters, and DCS, APC, PM and SOS strings are dropped: tmux
passthrough (``DCS tmux; ... ST``, its doubled ESCs included), kitty graphics
(``APC G ... ST``), sixel, DECRQSS, XTGETTCAP. Of the OSCs only those tmux
keeps pass: titles, hyperlinks (OSC 8: of a web, file, mail or ssh scheme,
without control characters, short enough to hold), the clipboard when allowed, colours
set or reset (OSC 4, 5, 10-19, 104, 105, 110-119); every other OSC is
dropped: notifications (OSC 9, 777, 99), iTerm2's file transfer and user
variables (OSC 1337), the pane's working directory (OSC 7) and prompt marks
(OSC 133), which are the pane's and not the person's terminal's, and any
code unknown here.

:class:`QueryFilter` is an incremental scanner: ``feed(chunk)`` returns the
bytes to show, holding back the tail of a sequence split across chunks until
it is complete. Every ESC starts a new sequence (string payloads hold none
but their ST), so a chunk is scanned with one regex for *candidates* and
everything else is copied through in slices: tens of MB/s even for
colour-heavy output. Where a removed sequence cut short the one before it, a
CAN takes its place, so what follows cannot complete that one.

Removed queries (7-bit forms; UTF-8 output makes raw C1 bytes meaningless):

* ``CSI c`` with any parameters (DA1), ``CSI > c`` (DA2), ``CSI = c`` (DA3)
* ``CSI n`` device status reports: ``CSI 5 n``, ``CSI 6 n``, ``CSI ? 6 n`` ...
  (``CSI > n``, which sets xterm's modifyKeys, is kept)
* ``CSI Ps $ p`` / ``CSI ? Ps $ p`` (DECRQM)
* ``CSI > q`` (XTVERSION), ``CSI ? u`` (kitty keyboard flags), ``CSI ? Pp m``
  (XTQMODKEYS), ``CSI 0 x`` / ``CSI 1 x`` (DECREQTPARM)
* ``CSI Ps t`` but 22/23 (XTWINOPS: window reports, and the operations that
  move, resize, iconify, raise or lower the person's window; the title stack
  passes)
* OSC 4/5/10-19 with a ``?`` field (colour queries)
* ``ESC Z`` (DECID) and ENQ (answerback)

An incomplete sequence at the end of a chunk is held until the next one; an
OSC string longer than :data:`MAX_HELD` bytes is too long to be a query and
streams through (or is dropped as it streams: a long title or clipboard
write), and a DCS/APC/PM/SOS string is dropped as it streams, so a megabyte
image or clipboard write is never buffered.
"""

from __future__ import annotations

import re

MAX_HELD = 4096
"""Bytes of an escape sequence held back before it is decided."""


_TITLE_STACK = frozenset({22, 23})
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
        # Any parameters: the server answers whenever the first is 0 (CSI 0;0 c
        # too), and a terminal would answer or ignore the rest.
        return not intermediates and prefix in (b"", b">", b"=")
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
        # XTWINOPS: reports (11-21), and what moves, resizes, iconifies, raises or
        # lowers the person's own window (1-10, 24 and up): only the title stack
        # (22, 23) passes, as tmux passes none of the rest.
        return not prefix and not intermediates and first not in _TITLE_STACK
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


# Bytes the engine skips inside a CSI (C0 controls, executed on the way, and
# anything not ASCII), as xterm and tmux do: a query with them is a query.
_J = rb"\x00-\x17\x19\x1c-\x1f\x7f-\xff"
_CSI = rb"\x1b\[[\x30-\x3f" + _J + rb"]*[\x20-\x2f" + _J + rb"]*[\x40-\x7e]"
_CSI_WHOLE = re.compile(_CSI)
_SKIPPED = re.compile(rb"[" + _J + rb"]")
# A whole sequence other than a string: CSI, or ESC + intermediates + final.
_SEQUENCE = re.compile(
    _CSI + rb"|\x1b(?:[\x20-\x2f]+[\x30-\x7e]|[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])"
)
# The start of a CSI, an OSC or an ESC sequence that the next chunk may
# complete (other strings are decided where they start).
_PARTIAL = re.compile(
    rb"\x1b(?:\[[\x30-\x3f"
    + _J
    + rb"]*[\x20-\x2f"
    + _J
    + rb"]*|\][^\x07\x1b\x18\x1a]*\x1b?|[\x20-\x2f]*)"
)
# Where something may be removed: everything else passes through in bulk slices.
# OSCs are candidates unless they are titles or hyperlinks (OSC 8), which pass
# in bulk: titles only where they may be removed or cleaned, when they may be
# too long to pass (longer than MAX_HELD, as when one is cut) or hold a control
# character before their end (possessive: a title without one fails at its
# end, with no backtracking).
_CANDIDATE = re.compile(
    rb"\x1b(?:\[[?>=]?[0-9;:"
    + _J
    + rb"]*\$?[cnpquxt]|\[\?[0-9;]*m|[P_^X]|Z"
    + rb"|\](?![012];)"
    + rb"|\][012];(?:[^\x07\x1b\x18\x1a]{%d}" % (MAX_HELD // 2)
    + rb"|[^\x00-\x1f\x7f\xc2]*+(?:\xc2[^\x80-\x9f][^\x00-\x1f\x7f\xc2]*+)*+"
    + rb"(?:[\x00-\x06\x08-\x17\x19\x1c-\x1f\x7f]|\xc2[\x80-\x9f])))"
)
# What ends a string: OSC (BEL too), or DCS/SOS/PM/APC. CAN and SUB abort it;
# an ESC not followed by a backslash aborts it and starts a new sequence.
_STRING_END = {True: re.compile(rb"[\x07\x1b\x18\x1a]"), False: re.compile(rb"[\x1b\x18\x1a]")}
_PASSTHROUGH = b"tmux;"
# A whole OSC ended by BEL or ST, its code (what comes before the first `;`) apart.
_OSC_WHOLE = re.compile(rb"\x1b\]([^;\x07\x1b\x18\x1a]*)[^\x07\x1b\x18\x1a]*(?:\x07|\x1b\\)")
_TITLE_CODES = frozenset((b"0", b"1", b"2"))
# The OSCs that reach the person, as tmux keeps them: titles (cleaned), hyperlinks,
# the clipboard (when allowed), colours set or reset (their queries are removed).
_KEPT_OSC = _TITLE_CODES | {
    b"8", b"52", b"4", b"5", b"104", b"105",
    *(str(n).encode() for n in range(10, 20)),
    *(str(n).encode() for n in range(110, 120)),
}  # fmt: skip
_TITLE_CONTROLS = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0)])


def clean_title(payload: bytes) -> bytes:
    """An OSC 0/1/2 payload without control characters (C0, DEL, C1; tmux drops
    such titles, xterm shows some of them)."""
    text = payload.decode("utf-8", "replace")
    return text.translate(_TITLE_CONTROLS).encode()


class QueryFilter:
    """Incremental: ``feed`` returns what to pass through; state carries over chunks.

    Every ESC starts a new sequence (string payloads hold none but their ST,
    tmux passthrough's doubled ESCs aside), so a chunk is scanned for
    candidates only and the rest is copied in slices. Carried over: a
    trailing incomplete sequence (held), or a string being dropped.
    """

    def __init__(self, *, allow_clipboard: bool = False) -> None:
        self.allow_clipboard = allow_clipboard
        """Let OSC 52 clipboard writes through (never clipboard reads)."""
        self._held = b""
        # A string being dropped across chunks: (osc, passthrough); ESC seen last.
        self._drop: tuple[bool, bool] | None = None
        self._drop_esc = False
        self.removed = 0
        """How many sequences were removed or cleaned (for tests and diagnostics)."""

    def reset(self) -> None:
        """Forget a partial sequence (after a gap in the stream)."""
        self._held = b""
        self._drop = None
        self._drop_esc = False

    def feed(self, data: bytes) -> bytes:
        pieces: list[bytes] = []
        pos = 0
        if self._drop is not None:
            if self._drop_esc:
                data = b"\x1b" + data
                self._drop_esc = False
            end = self._string_end(data, 0, *self._drop)
            if end is None:
                return b""
            self._drop = None
            pos = end
        if self._held:
            data = self._held + data[pos:]
            self._held = b""
            pos = 0
        copied = pos
        n = len(data)
        while True:
            cand = _CANDIDATE.search(data, pos)
            if cand is None:
                break
            begin = cand.start()
            kind = data[begin + 1]
            if kind == 0x5B:  # [
                whole = _CSI_WHOLE.match(data, begin)
                pos = cand.end()
                if whole is None:
                    continue  # interrupted: the terminal will not see a query either
                seq = whole.group()
                if is_query_csi(_SKIPPED.sub(b"", seq)):
                    pieces.append(data[copied:begin])
                    pieces.append(_guard(data, copied, begin))
                    # C0 controls inside it are still executed, as the terminal would.
                    pieces.append(bytes(b for b in seq[2:] if b < 0x20))
                    copied = pos = whole.end()
                    self.removed += 1
                continue
            if kind == 0x5A:  # Z: DECID
                pieces.append(data[copied:begin])
                pieces.append(_guard(data, copied, begin))
                copied = pos = begin + 2
                self.removed += 1
                continue
            # A string: OSC, DCS, SOS, PM, APC.
            osc = kind == 0x5D
            if osc:
                # The common case first: a whole OSC of a code that is dropped (the
                # shell's OSC 133 and 7 at every prompt).
                whole = _OSC_WHOLE.match(data, begin)
                if whole is not None and whole.group(1) not in _KEPT_OSC:
                    pieces.append(data[copied:begin])
                    pieces.append(_guard(data, copied, begin))
                    copied = pos = whole.end()
                    self.removed += 1
                    continue
            payload_at = begin + 2
            passthrough = False
            if not osc:
                head = data[payload_at : payload_at + len(_PASSTHROUGH)]
                if len(head) < len(_PASSTHROUGH) and _PASSTHROUGH.startswith(head):
                    end = self._string_end(data, payload_at, False, False)
                    self._drop_esc = False
                    if end is None:  # too short to tell: the next chunk decides
                        pieces.append(data[copied:begin])
                        self._held = data[begin:]
                        return self._done(pieces)
                passthrough = head == _PASSTHROUGH
            end = self._string_end(data, payload_at, osc, passthrough)
            if end is None:
                # Not complete in this chunk. Dropped kinds are dropped from
                # here on; a short OSC is held; a long one is no query.
                saved_esc = self._drop_esc
                self._drop_esc = False
                if osc and n - begin <= MAX_HELD:
                    pieces.append(data[copied:begin])
                    self._held = data[begin:]
                    return self._done(pieces)
                if osc and not self._drop_osc(data[payload_at:]):
                    pieces.append(data[copied:])  # streams through
                    return self._done(pieces)
                pieces.append(data[copied:begin])
                self._drop = (osc, passthrough)
                self._drop_esc = saved_esc
                self.removed += 1
                return self._done(pieces)
            pos = end
            if not osc:
                pieces.append(data[copied:begin])
                pieces.append(_guard(data, copied, begin))
                copied = end
                self.removed += 1
                continue
            replacement = self._osc(data[begin:end])
            if replacement is not None:
                pieces.append(data[copied:begin])
                pieces.append(_guard(data, copied, begin) if not replacement else b"")
                pieces.append(replacement)
                copied = end
                self.removed += 1
        k = data.rfind(b"\x1b", pos)
        if k > pos and k == n - 1:
            # A lone ESC may be the first half of the ST of an OSC begun earlier.
            k2 = data.rfind(b"\x1b", pos, k)
            if k2 >= 0 and data[k2 + 1 : k2 + 2] == b"]" and _PARTIAL.fullmatch(data, k2):
                k = k2
        if k >= 0 and _SEQUENCE.match(data, k) is None and _PARTIAL.fullmatch(data, k):
            # An incomplete sequence at the end: the next chunk decides it. An
            # OSC too long to hold is no query: it streams, or is dropped.
            if n - k <= MAX_HELD:
                pieces.append(data[copied:k])
                self._held = data[k:]
            elif data[k + 1] == 0x5D and self._drop_osc(data[k + 2 :]):
                pieces.append(data[copied:k])
                self._drop = (True, False)
                self._drop_esc = data.endswith(b"\x1b")
                self.removed += 1
            else:
                pieces.append(data[copied:])
        else:
            pieces.append(data[copied:])
        return self._done(pieces)

    def _done(self, pieces: list[bytes]) -> bytes:
        data = b"".join(pieces)
        if b"\x05" in data:  # ENQ asks for the answerback: a query too
            self.removed += data.count(b"\x05")
            data = data.replace(b"\x05", b"")
        return data

    def _string_end(self, data: bytes, pos: int, osc: bool, passthrough: bool) -> int | None:
        """Where the string whose payload goes on at ``pos`` ends (after its
        terminator, or at the ESC that aborts it); None if not in ``data``
        (``_drop_esc`` then says whether ``data`` ended with an ESC)."""
        find = _STRING_END[osc].search
        n = len(data)
        while True:
            m = find(data, pos)
            if m is None:
                return None
            j = m.start()
            if data[j] != 0x1B:
                return j + 1  # BEL ends an OSC; CAN and SUB abort (and are consumed)
            if j + 1 >= n:
                self._drop_esc = True
                return None
            nxt = data[j + 1]
            if nxt == 0x5C:  # ESC \ (ST)
                return j + 2
            if passthrough and nxt == 0x1B:
                pos = j + 2  # tmux passthrough doubles every ESC it carries
                continue
            return j

    def _drop_osc(self, payload: bytes) -> bool:
        """Whether an OSC beginning with ``payload`` (too long to hold) is dropped."""
        code = payload.split(b";", 1)[0]
        if code == b"52":
            return not self.allow_clipboard
        return code in _TITLE_CODES or code == b"8" or code not in _KEPT_OSC

    def _osc(self, seq: bytes) -> bytes | None:
        """What replaces a whole OSC (``b""`` drops it), None to pass it unchanged."""
        body = seq[2:]
        end = b""
        if body.endswith(b"\x07"):
            body, end = body[:-1], b"\x07"
        elif body.endswith(b"\x1b\\"):
            body, end = body[:-2], b"\x1b\\"
        elif body[-1:] in (b"\x18", b"\x1a"):
            return b""  # aborted by CAN/SUB: a terminal acts on nothing
        code, _, rest = body.partition(b";")
        if code == b"52":
            fields = rest.split(b";", 1)
            write = len(fields) == 2 and fields[1] != b"?" and end != b""
            return None if write and self.allow_clipboard else b""
        if code in _TITLE_CODES:
            if len(seq) > MAX_HELD:
                return b""  # as when it comes in pieces: too long to hold and clean
            clean = clean_title(rest)
            return None if clean == rest else b"\x1b]" + code + b";" + clean + end
        if code == b"8":
            return None if _safe_link(seq, rest) else b""
        if code not in _KEPT_OSC or is_query_string(seq):
            return b""
        return None


LINK_SCHEMES = frozenset((b"http", b"https", b"ftp", b"file", b"mailto", b"ssh", b"sftp"))
"""The URI schemes an OSC 8 hyperlink may have to reach the person (``javascript:``,
``data:`` or a scheme that starts a local program never do)."""
_LINK_CONTROLS = re.compile(rb"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]")


def safe_link(link: str) -> bool:
    """A cell's OSC 8 link (``params;URI``, as the engine keeps it) that may reach the
    person when a pane is painted: the same rule as :func:`_safe_link`."""
    if len(link) > MAX_HELD or _LINK_CONTROLS.search(link.encode("utf-8", "replace")):
        return False
    _, _, uri = link.partition(";")
    scheme, colon, _ = uri.partition(":")
    return bool(colon) and scheme.lower().encode("utf-8", "replace") in LINK_SCHEMES


def _safe_link(seq: bytes, rest: bytes) -> bool:
    """An OSC 8 (``rest``: ``params;URI``) that may pass: short enough to have been
    held whole, no control character in it, and a URI that is empty (the link's
    end) or of a scheme in :data:`LINK_SCHEMES`."""
    if len(seq) > MAX_HELD or _LINK_CONTROLS.search(rest):
        return False
    _, _, uri = rest.partition(b";")
    scheme, colon, _ = uri.partition(b":")
    return not uri or (bool(colon) and scheme.lower() in LINK_SCHEMES)


def _guard(data: bytes, copied: int, begin: int) -> bytes:
    """CAN where a removed sequence aborted the one before it (a string, or a
    sequence cut short), so the bytes after it cannot complete that one."""
    k = data.rfind(b"\x1b", copied, begin)
    if k >= 0 and _PARTIAL.fullmatch(data, k, begin) is not None:
        return b"\x18"
    return b""

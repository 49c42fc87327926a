"""Plain output read as lines, without drawing it: how ``wait`` keeps up with a flood.

Most floods are printable ASCII, SGR colours and CR LF line ends (``cat``, ``ls
--color``, compiler and log output). Of such output the logical lines a screen
ends up with are exactly its text between CR LFs, SGRs removed, the first one
continuing the line the cursor was on: provided the screen only scrolls and
nothing waits to be overwritten at or after the cursor or below it
(``Terminal.plain_line_prefix`` tells, with the text before the cursor; or
``plain_line_at_cr``, with the whole line, where a feed ended after a CR). A
``wait --until`` / ``--regex`` then searches those lines as they come and needs
no look at the engine: its mirror holds the bytes back and feeds them in big
feeds, of which the engine draws only the rows its history keeps, as the
server's replica does in a flood (``phux.server.replica``). Every line the
engine would have shown, in its viewport or scrolling through its history, is
searched: none is missed, however far the engine skips. Anything else (another
control or escape sequence, a lone CR, UTF-8, for a regex an unterminated line
longer than ``MAX_CARRY``) ends the scan, and the wait looks at the engine again;
the lines before it, in the same bytes, are searched first (a flood's end and the
prompt after it come in one batch to a loaded client: the engine has let the
flood's last lines scroll out of its history by then).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from phux.engine import native_strip

_SGR = re.compile(rb"\x1b\[[0-9;:]*m")
# An SGR cut by the end of the bytes seen so far.
_CUT_SGR = re.compile(rb"\x1b(?:\[[0-9;:]*)?\Z")
_PRINTABLE = bytes(range(0x20, 0x7F))
# The longest start of some bytes that is plain: text, whole SGRs, CR LFs (SGRs
# between the two move no cursor). Matched only where the scan stops, and only over
# the whole lines in which ``plain_text`` found what is not (it is 30 times faster).
_PLAIN_START = re.compile(rb"(?:[\x20-\x7e]+|\x1b\[[0-9;:]*m|\r(?:\x1b\[[0-9;:]*m)*\n)*")
_STOP_LINES = 1 << 16
MAX_CARRY = 1 << 16
"""An unterminated line longer than this ends a regex's scan: it is searched again with
every batch until it ends (``base64 -w 0`` never does). A text's scan keeps only its
last characters (as many as the text has, less one)."""
# The commonest SGRs of a sample are removed by ``bytes.replace`` (several times
# faster than the regex's ``sub``, which makes an object per match), each only if
# the sample holds it this often; the regex removes the rest.
_SAMPLE = 1 << 16
_COMMON = 12
_WORTH = 16


def plain_text(data: bytes) -> str | None:
    """``data`` without its SGRs, if all the rest is printable ASCII and CR LFs (every
    CR just before an LF, every LF just after a CR); None otherwise."""
    if b"\x00" in data:
        return None
    if b"\x1b" in data:
        stripped = _without_sgrs(data)
        if stripped is None:
            return None
        data = stripped
    left = data.translate(None, _PRINTABLE)
    pairs = left.count(b"\r\n")
    if pairs * 2 != len(left) or data.count(b"\r\n") != pairs:
        return None
    return data.decode("ascii")


def _without_sgrs(data: bytes) -> bytes | None:
    """``data`` (no NUL in it) without its SGRs; None if another escape sequence, or
    one cut short, is left (or, on the native pass, a bell: plain text has none)."""
    strip = native_strip.strip
    if strip is not None:
        # One native pass (ARCHITECTURE.md, "Keeping up with floods"). It deletes bells,
        # and takes SGRs only: EL, ECH and any other sequence make it None.
        return None if b"\x07" in data else strip(data, b"m")
    # Replaced by NULs first, which no plain text holds, so that no two pieces join
    # into a sequence that was not there; removed last.
    for seq, count in Counter(_SGR.findall(data, 0, _SAMPLE)).most_common(_COMMON):
        if count >= _WORTH:
            data = data.replace(seq, b"\x00" * len(seq))
    if b"\x1b" in data:
        data = _SGR.sub(b"", data)
        if b"\x1b" in data:
            return None
    return data.translate(None, b"\x00")


def _plain_end(data: bytes) -> int:
    """The length of the longest start of ``data`` that is plain (``plain_text``).
    Whole lines are plain or not (no sequence goes past an LF): ``plain_text`` checks
    them a run at a time, the regex reads only the run with the first that is not."""
    start = 0
    while True:
        end = data.find(b"\n", start + _STOP_LINES)
        end = len(data) if end < 0 else end + 1
        if end == len(data) or plain_text(data[start:end]) is None:
            match = _PLAIN_START.match(data, start, end)
            return start if match is None else match.end()
        start = end


class LineScan:
    """Searches the logical lines of plain output with ``found`` (a line, right-trimmed
    as the engine's logical lines are, to whether it matches), from a point where
    ``Terminal.plain_line_prefix`` vouches for the screen (``start``) on. Without
    ``found``, it only tells whether output is plain (``watch``: plain output makes
    no engine events).

    ``needle``: the text ``found`` looks for, if that is all it does (``wait
    --until``): then whole batches are searched at once rather than line by line.
    """

    def __init__(
        self, found: Callable[[str], bool] | None = None, needle: str | None = None
    ) -> None:
        self.found = found
        # A needle with a CR, an LF or a trailing space cannot be found in whole text:
        # no line holds the first two, and lines are right-trimmed.
        self.needle = (
            needle
            if needle is not None and not needle.endswith(" ") and not set("\r\n") & set(needle)
            else None
        )
        self.active = False
        self.prefix = ""
        """The open line's text so far (of it, what a match not found yet may use)."""
        self.carry = b""
        """The bytes at the end that a sequence (or a CR LF) they begin may go on from."""
        self.scanned = 0
        """Bytes searched as lines (the engine did not have to be looked at for them)."""
        self.at_line_start = False
        """Started on an empty line (the cursor in column 0), nothing fed since: an LF
        first is a CR LF's (where the engine's state was taken, a checkpoint's or a
        batch's end, can fall between the two)."""

    def start(self, prefix: str | None) -> None:
        """From here on (the engine has everything so far), if ``prefix`` (from
        ``Terminal.plain_line_prefix``) is not None."""
        self.active = prefix is not None
        self.prefix = prefix or ""
        self.carry = b""
        self.at_line_start = prefix == ""

    def start_at_cr(self, line: str | None) -> None:
        """As ``start``, where a feed ended between a CR and its LF: ``line`` (from
        ``Terminal.plain_line_at_cr``) is the whole line the cursor is on, in column 0.
        The scan goes on as if it had seen the CR: an LF ends that line, anything else
        writes over it (not plain: the scan stops, the line searched as it stood)."""
        self.start(line)
        self.carry = b"\r" if line is not None else b""
        self.at_line_start = False

    def stop(self) -> None:
        self.active = False

    def feed(self, data: bytes) -> bool | None:
        """Search the lines ``data`` (the output after what came before) ends, and the
        one it leaves open: True if one matches, False if none does, None if ``data``
        is not plain (the scan stops: the engine must be looked at)."""
        if not self.active:
            return None
        buf = self.carry + data if self.carry else data
        if self.at_line_start and buf:
            self.at_line_start = False
            if buf.startswith(b"\n"):
                buf = b"\r" + buf
        end = buf.rfind(b"\r\n")
        end = 0 if end < 0 else end + 2  # (0: no line ends here)
        done, rest = buf[:end], buf[end:]
        # The open line but a sequence (or the CR of a CR LF) its last bytes begin.
        cut = _CUT_SGR.search(rest)
        shown = rest[: cut.start()] if cut is not None else rest
        if shown.endswith(b"\r"):
            shown = shown[:-1]
        lines = plain_text(done) if done else ""
        open_line = plain_text(shown)
        if lines is None or open_line is None:
            return self._stop_in(buf)
        self.scanned += len(data)
        self.carry = rest[len(shown) :]  # (what the next bytes may end)
        prefix = self.prefix
        found = False
        if done:
            first, _, others = lines.partition("\r\n")
            found = self._search(prefix + first + "\r\n" + others)
            prefix = ""
        text = prefix + open_line
        found = found or self._search(text + "\r\n")
        # What is searched again with the next bytes: the open line (a CR SGR LF ended
        # lines in it too). Past a needle's length less one, none of it can be part of
        # a match not found yet; a regex may need all of it.
        text = text[text.rfind("\r\n") + 2 :] if "\r\n" in text else text
        if self.found is None:
            text = ""
        elif self.needle is not None:
            # (max: a line shorter than that is kept whole, not cut from its end)
            text = text[max(len(text) - len(self.needle) + 1, 0) :] if len(self.needle) > 1 else ""
        elif len(text) > MAX_CARRY:
            self.active = False
            return found or None
        self.prefix = text
        return found

    def _stop_in(self, buf: bytes) -> bool | None:
        """The scan stops in ``buf`` (the bytes from the open line's carry on), at its
        first byte that is not plain: the lines before it, and the open line up to it
        (it was shown so), are searched first. True if one matches, else None."""
        self.active = False
        text = plain_text(buf[: _plain_end(buf)])
        if text is None:  # (cannot be: that start is plain)
            return None
        return self._search(self.prefix + text + "\r\n") or None

    def _search(self, text: str) -> bool:
        """Whether a line of ``text`` (lines each ended by CR LF) matches."""
        if self.found is None:
            return False
        if self.needle is not None:
            return self.needle in text
        found = self.found
        assert found is not None
        return any(found(line.rstrip(" ")) for line in text.split("\r\n")[:-1])

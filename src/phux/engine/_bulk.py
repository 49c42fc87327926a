"""The bulk path: rows of a flood that would scroll out of the history are not drawn.

A flood (``cat`` of a big file, a build log, ``base64``) fed in large chunks
holds far more rows than the screen plus the history keep. Drawing them only
to push them out again is most of the cost of a flood, so :func:`skip` finds
the longest stretch from the start of the text that only scrolls, and the last
line feed in it after which at least ``lines - 1 + history`` more scrolls
follow. Every row present at that point, drawn or not, is then pushed past the
history's end by those scrolls, so nothing before it needs drawing: only what
outlives it is computed, and the stream draws the rest exactly.

"Only scrolls": text of width-1 characters, CR, LF, HT, BEL, SGR, EL and ECH
(which change cells only) and complete OSC strings (title, working directory,
hyperlinks, colour queries), on the main screen, with autowrap on, no scroll
region, no insert mode and the plain charset. Anything else (cursor
addressing, erasing the display, queries whose answers depend on where the
cursor is, OSC 133 marks, which record where the cursor is, wide or
zero-width characters, cut sequences) ends the stretch:
from there the stream takes its exact path (and a long feed tries again
further on, see ``EngineStream.feed``).

Floods without line feeds: one line longer than the screen and its history
(:func:`_long_line`, cut where autowrap starts a row) and a row repainted
again and again with CR (:func:`_repaints`: only the segments from the last
one that reaches furthest right on are drawn; the stream also looks for them
after a few CRs in a row).

The coloured lines kept after the cut (``ls --color``, logs: printable ASCII
and SGRs, CR LF ended) are then built as rows directly (:func:`_styled_rows`),
not drawn piece by piece.

What outlives the skipped text, all computed as drawing it would leave it:
the cursor's column (wraps, tabs, CR), the rows' count (``scrolled_off`` and
the rendering counter, via ``EngineScreen.skip_scrolls``), the SGR attributes
in force (the SGRs from the last one that resets), and every event and
answer (title, working directory, bells, colour reports) in order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Protocol

from phux.engine import native_strip
from phux.engine._cells import SEM_INPUT
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import modes as mo
from phux.engine._sgr import _sgr_run
from phux.engine._widths import narrow_class

if TYPE_CHECKING:
    from phux.engine._cells import Cell, Runs, _Glyphs
    from phux.engine._screen import EngineScreen


class EngineStream(Protocol):
    """What the bulk path uses of the stream that calls it (``_stream.EngineStream``):
    named here so that the stream imports this module and not the other way round."""

    screen: EngineScreen
    errors: int

    def _osc(self, payload: str, bel: bool) -> None: ...


# An OSC string the stream would take whole, without controls inside; not OSC
# 133, whose marks record where the cursor is (phux.engine._shell).
_OSC = "\x1b\\](?!133)([^\x00-\x1f\x7f-\x9f]*)(\x07|\x1b\\\\)"
_SGR = "\x1b\\[[0-9;:]*m"
# SGR, and EL and ECH, which change cells only: a row not drawn need not be erased.
_CELLS = "\x1b\\[[0-9;:]*[mKX]"
# Feeds shorter than this are first checked to hold enough line feeds.
_COUNT_BELOW = 1 << 18
# What ASCII text that only scrolls holds besides ESC.
_PRINTABLE = bytes(range(0x20, 0x7F))


@cache
def _scrolling(ascii_only: bool) -> re.Pattern[str]:
    """Text that only scrolls, matched from where it starts to where it stops
    (possessive: nothing is tried twice)."""
    chars = "\x20-\x7e" if ascii_only else narrow_class()[1:-1]
    return re.compile(f"(?:[\x07\t\n\r{chars}]++|{_CELLS}|{_OSC})*+")


@cache
def _escapes() -> re.Pattern[str]:
    # One pass: removing one kind first could join what is left into the other.
    return re.compile(f"{_CELLS}|{_OSC}")


@cache
def _events() -> re.Pattern[str]:
    """What changes state (other than SGR) in text that only scrolls: OSC and BEL."""
    return re.compile(f"{_OSC}|\x07")


@cache
def _state() -> re.Pattern[str]:
    """Runs of SGR, OSC strings and BEL."""
    return re.compile(f"((?:{_SGR})+)|{_OSC}|(\x07)")


def skip(
    stream: EngineStream, data: str, pos: int, retry: bool = False, raw: bytes | None = None
) -> tuple[int, int]:
    """Skip the part of ``data[pos:]`` whose drawing no final state shows, leaving the
    state drawing it would: the position the stream goes on from (``pos`` if none),
    and, if nothing was skipped, ``retry`` is true and the text only scrolls again
    from somewhere later for long enough, the position to try again from (else 0).
    ``raw``: ``data`` as ASCII bytes, if the caller has them.
    """
    screen = stream.screen
    lines = screen.lines
    cols = screen.columns
    need = lines - 1 + screen.history_size
    n = len(data)
    # At most one scroll per line feed, plus one per screen width of text
    # (counted only in short feeds: in long ones the split below tells).
    if n - pos <= need or (
        n - pos < _COUNT_BELOW and data.count("\n", pos) + (n - pos) // cols <= need
    ):
        return _repaints(stream, data, pos, raw), 0
    mode = screen.mode
    if not _plain_screen(screen):
        return pos, _later(data, pos, need) if retry else 0
    if data.find("\n", pos) < 0 and _crs(data, pos, n):
        cut = _repaints(stream, data, pos, raw)  # (no line feed: nothing to count first)
        if cut > pos:
            return cut, 0
    x0 = screen.cursor.x
    # What is left of ASCII text once printable ASCII is deleted (in C): a few
    # bytes a line, which tell the common floods apart cheaply.
    text = _ascii(data, pos, len(data), raw)
    left = None if text is None else text.translate(None, _PRINTABLE)
    feeds = _plain_lines(left)
    if feeds:  # printable ASCII lines, each ended by CR LF: nothing to strip or check
        end = n
        visible = data[pos:] if pos else data
        events = False
        found = _crlf_lines(visible, x0, cols, need, feeds)
    else:
        end = _stretch_end(data, pos, left)
        # ``left`` and ``text`` serve from here on only while they are of the region.
        if end < n or text is None or left is None:
            text = left = None
        else:
            # A feed cut inside a sequence (the stream keeps it for the next) ends the
            # stretch there; the region's bytes are then those before it.
            end = _before_cut_csi(data, pos)
            if end < n:
                text, left = text[: end - pos], left[:-1]  # (its ESC: all else is printable)
        region = data[pos:end]
        seen = _visible(region, left, text)
        if seen is None:  # an escape sequence that does more than scroll
            end = _scrolling(True).match(data, pos, end).end()  # type: ignore[union-attr]
            seen = _visible(data[pos:end])
            assert seen is not None
            left = None
        visible, events = seen
        if "\n" not in visible:  # (one line: nothing to split)
            found = None
        elif "\t" not in visible:
            # The line ends, as ``left`` tells them (escapes and bells hold none):
            # if only CR LFs, not counted again.
            checked = 0
            if left is not None:
                checked = _plain_lines(left.translate(None, b"\x1b\x07"))
            found = _crlf_lines(visible, x0, cols, need, checked)
        else:
            found = None
    if found is None and "\n" in visible:
        found = _any_lines(visible, x0, cols, need, sorted(screen.tabstops), mo.LNM in mode)
    if found is not None and found[1] >= 0:
        feeds, j, before, x = found
        scrolls = screen.cursor.y + before - (lines - 1)
        if scrolls >= 1:
            # Where line feed j is in ``data``: count the later ones back from the end.
            cut = end
            for _ in range(feeds - j):
                cut = data.rfind("\n", pos, cut)
            cut += 1
            _apply_state(stream, data, pos, cut, events)
            screen.skip_scrolls(scrolls, x)
            if x == 0 and data.find("\x1b", cut, end) >= 0:
                cut = _styled_rows(stream, data, cut, end)
            return cut, 0
    # Too few line feeds: one long line, or repaints of one row, may still skip.
    last = visible.rfind("\n")
    if last < 0 and visible:
        cut = _long_line(stream, data, pos, end, visible, events)
        if cut == pos:
            cut = _repaints(stream, data, pos, raw)
        if cut > pos:
            return cut, 0
    elif retry and _wraps(len(visible) - last - 1, 0, cols) > need:
        # A long line after the last line feed: drawn up to it, then tried alone.
        return pos, data.rfind("\n", pos, end) + 1
    if retry and end < n and (found is None or found[1] < 0):
        return pos, _later(data, end, need)
    return _repaints(stream, data, pos, raw), 0


def _plain_screen(screen: EngineScreen) -> bool:
    """Whether text on ``screen`` only draws and scrolls the whole main screen: no
    scroll region, autowrap on, no insert mode, the plain charset; and no shell input
    open (after an OSC 133 B: the line feed ending it reads the command line from
    its rows, which must be drawn: dash's, typed before a flood of output)."""
    margins = screen.margins
    mode = screen.mode
    return not (
        screen.alternate
        or screen.semantic == SEM_INPUT
        or (margins is not None and (margins.top != 0 or margins.bottom != screen.lines - 1))
        or mo.IRM in mode
        or mo.DECAWM not in mode
        or (screen.g1_charset if screen.charset else screen.g0_charset) is not cs.LAT1_MAP
    )


# A CSI cut before its final is at most so long, at the end of a feed.
_MAX_CUT = 64


@cache
def _cut_csi() -> re.Pattern[str]:
    return re.compile("\x1b(?:\\[[0-9;:]*)?")


def _before_cut_csi(data: str, pos: int) -> int:
    """Where an ESC, or a CSI of parameter bytes cut before its final, that ``data``
    ends in starts (not before ``pos``); ``len(data)`` if it ends in none."""
    n = len(data)
    at = data.rfind("\x1b", max(pos, n - _MAX_CUT))
    return at if at >= 0 and _cut_csi().fullmatch(data, at) else n


def _wraps(size: int, x0: int, cols: int) -> int:
    """The autowraps drawing ``size`` width-1 characters from column ``x0`` makes."""
    return (size - 1 + x0) // cols if size else 0


def _long_line(
    stream: EngineStream, data: str, pos: int, end: int, visible: str, events: bool
) -> int:
    """Skip most of one line longer than the screen and its history (``cat`` of a file
    with no line feed, ``base64 -w 0``): the text from ``pos`` to ``end`` only
    scrolls and ``visible`` (its text) holds no line feed. Cut where autowrap
    starts a row, with at least a screen and a history's worth of wraps after it;
    returns where the stream goes on (``pos``: nothing skipped)."""
    screen = stream.screen
    cols = screen.columns
    lines = screen.lines
    need = lines - 1 + screen.history_size
    if "\r" in visible or "\t" in visible:
        return pos
    x0 = screen.cursor.x
    total = _wraps(len(visible), x0, cols)
    wraps = total - need  # the wraps before the cut (the cut's own included)
    scrolls = screen.cursor.y + wraps - (lines - 1)
    if wraps < 1 or scrolls < 1:
        return pos
    # The visible character the cut's wrap puts in column 0, and where it is in data.
    at = wraps * cols - x0
    cut = _raw_index(data, pos, end, at, len(visible))
    if cut <= pos:  # (the first character wraps: nothing before it to skip)
        return pos
    _apply_state(stream, data, pos, cut, events)
    screen.skip_scrolls(scrolls, 0)
    screen.buffer[lines - 1].wrapped = True
    return cut


def _raw_index(data: str, pos: int, end: int, at: int, size: int) -> int:
    """Where visible character ``at`` of ``data[pos:end]`` (``size`` visible
    characters: text that only scrolls, without escape sequences and bells) is."""
    if size == end - pos:
        return pos + at
    # Walk back from the end over the escape sequences and bells after it.
    behind = size - at  # visible characters from ``at`` to the end
    cut = end
    for m in reversed(list(_hidden().finditer(data, pos + at, end))):
        start, stop = m.span()
        gap = cut - stop  # visible characters between this sequence and ``cut``
        if gap >= behind:
            return cut - behind
        behind -= gap
        cut = start
    return cut - behind


@cache
def _hidden() -> re.Pattern[str]:
    """What draws nothing in text that only scrolls: escape sequences and bells."""
    return re.compile(f"{_CELLS}|{_OSC}|\x07")


_MIN_REPAINTS = 8
"""Fewer carriage returns than this in a row are not worth looking at as repaints."""


def _repaints(stream: EngineStream, data: str, pos: int, raw: bytes | None = None) -> int:
    """Skip repaints of one row: text from ``pos`` up to the next line feed that
    returns to column 0 with CR again and again without wrapping (a progress bar,
    a spinner, a counter). Of segments drawn over one another from column 0 only
    those from the last one that reaches furthest right (EL reaches the end) on
    show; the ones before it change nothing else but the attributes, the title
    and such, which are applied. Returns where the stream goes on (``pos``:
    nothing skipped)."""
    stop = data.find("\n", pos)
    if stop < 0:
        stop = len(data)
    if not _crs(data, pos, stop):
        return pos
    screen = stream.screen
    if not _plain_screen(screen):
        return pos
    region = data[pos:stop]
    end, osc = _repaint_end(region, _ascii(data, pos, stop, raw))
    if end < len(region):
        region = region[:end]
    cols = screen.columns
    x0 = screen.cursor.x
    segs = region.split("\r")
    if len(segs) <= _MIN_REPAINTS:
        return pos
    # Segments no longer than the row (escapes included) cannot wrap; the others
    # are measured without their escapes.
    sizes = list(map(len, segs))
    sizes[0] += x0
    if max(sizes) > cols:
        hidden = _hidden()
        for i, size in enumerate(sizes):
            if size > cols:
                size = len(hidden.sub("", segs[i])) + (x0 if i == 0 else 0)
                if size > cols:
                    return pos  # a segment that wraps: not one row
                sizes[i] = size
    # Walking back from the last segment: the first that reaches as far as any
    # before it. Segments with an EL reach the end of the row.
    has_el = "\x1b[K" in region or "\x1b[0K" in region
    reach = 0
    k = len(segs) - 1
    best = k
    i = k
    while i > 0 and i > k - _WALK:
        seg = segs[i]
        far = cols if has_el and ("\x1b[K" in seg or "\x1b[0K" in seg) else _seen(seg)
        if far > reach:
            reach, best = far, i
        if reach >= cols:
            break
        i -= 1
    k = best
    if k < 1:
        return pos
    cut = _nth_cr(region, k, len(segs) - 1)  # the CR that starts segment k: drawn exactly
    if reach < cols:
        # Every segment before k must reach no further: by its size, escapes and
        # all, or else measured; none may hold an EL.
        if has_el and (region.find("\x1b[K", 0, cut) >= 0 or region.find("\x1b[0K", 0, cut) >= 0):
            return pos
        if max(sizes[:k]) > reach:
            hidden = _hidden()
            if any(
                sizes[i] > reach and len(hidden.sub("", segs[i])) + (x0 if i == 0 else 0) > reach
                for i in range(k)
            ):
                return pos
    events = region.find("\x07", 0, cut) >= 0 or (osc and region.find("\x1b]", 0, cut) >= 0)
    _apply_state(stream, data, pos, pos + cut, events)
    return pos + cut


# How many segments from the last the search for the furthest-reaching one walks.
_WALK = 64


def _seen(segment: str) -> int:
    """How many columns ``segment`` (text that only scrolls, no EL) draws."""
    if "\x1b" not in segment and "\x07" not in segment:
        return len(segment)
    return len(_hidden().sub("", segment))


def _ascii(data: str, start: int, stop: int, raw: bytes | None) -> bytes | None:
    """``data[start:stop]`` as bytes if ``data`` is ASCII (None if not): a slice of
    ``raw`` (``data`` as bytes) if given, which costs no copy for all of it."""
    if raw is not None:
        return raw if start == 0 and stop == len(raw) else raw[start:stop]
    return data[start:stop].encode() if data.isascii() else None


def _repaint_end(region: str, ascii_region: bytes | None) -> tuple[int, bool]:
    """Where ``region`` (no line feed) stops being text, CRs, bells, SGRs, EL 0s and
    OSC strings (the stuff of repaints), and whether an OSC string may be before;
    ``ascii_region``: ``region`` as bytes if it is ASCII, else None."""
    if ascii_region is not None:
        left = ascii_region.translate(None, _PRINTABLE)
        if left.translate(None, b"\r\x07\x1b"):  # another control: found by the regex
            return _repaint_stretch().match(region).end(), True  # type: ignore[union-attr]
        if b"\x1b" not in left:
            return len(region), False
        # (single characters first: searching for two is slow amid many ESCs)
        bad = _bad_escape(False).search(region)
        if bad is None:
            return len(region), False
        if region[bad.start() + 1 : bad.start() + 2] != "]":
            return bad.start(), False
        if "\\" not in region:  # (an OSC ended by ST: the regex tells)
            bad = _bad_escape(True).search(region, bad.start())
            return (len(region) if bad is None else bad.start()), True
    return _repaint_stretch().match(region).end(), True  # type: ignore[union-attr]


@cache
def _repaint_stretch() -> re.Pattern[str]:
    chars = narrow_class()[1:-1]
    return re.compile(f"(?:[\x07\r{chars}]++|{_SGR}|\x1b\\[0?K|{_OSC})*+")


@cache
def _bad_escape(osc: bool) -> re.Pattern[str]:
    """An ESC that starts no SGR, EL 0 (or OSC string, if ``osc``, with no ST in
    the text)."""
    return re.compile(
        "\x1b(?!\\[[0-9;:]*m|\\[0?K" + ("|\\](?!133)[^\x00-\x1f\x7f-\x9f]*\x07)" if osc else ")")
    )


def _crs(data: str, start: int, stop: int) -> bool:
    """Whether ``data[start:stop]`` holds at least ``_MIN_REPAINTS`` CRs."""
    at = start - 1
    for _ in range(_MIN_REPAINTS):
        at = data.find("\r", at + 1, stop)
        if at < 0:
            return False
    return True


def _nth_cr(region: str, k: int, crs: int) -> int:
    """Where the CR before segment ``k`` (counted from 0) of ``region``, which holds
    ``crs`` CRs, is."""
    at = len(region)
    for _ in range(crs - k + 1):
        at = region.rfind("\r", 0, at)
    return at


def _later(data: str, pos: int, need: int) -> int:
    """Where to try again after something at ``pos`` that does more than scroll:
    after the next line feed, if more than ``need`` follow it (else 0)."""
    feed = data.find("\n", pos)
    if feed < 0 or len(data) - feed <= need or data.count("\n", feed + 1) <= need:
        return 0
    return feed + 1


def _visible(
    region: str, left: bytes | None = None, raw: bytes | None = None
) -> tuple[str, bool] | None:
    """``region`` without its escape sequences and bells, and whether it held OSC
    strings or bells; None if it holds an escape sequence that does more than scroll.
    ``left``: what is left of ``region`` once printable ASCII is deleted, if it is
    ASCII; ``raw``: ``region`` as bytes, if the caller has them."""
    events = False
    visible = region
    if "\x1b" in region:
        # One native pass where pure Python needs one per colour (ARCHITECTURE.md).
        strip = native_strip.strip
        if raw is not None and left is not None and strip is not None:
            stripped = strip(raw)
            if stripped is not None:  # (else an OSC, or a sequence that does more)
                return stripped.decode("ascii"), b"\x07" in left
        # Coloured output (ls --color) is a few SGRs over and over: a plain replace
        # is ~5x faster than the regex. Replaced by NULs, which text that only
        # scrolls never holds, so that no two pieces join into a sequence; removed
        # last. Which ones (each replace reads it all) is told by a sample.
        escapes = region.count("\x1b") if left is None else left.count(b"\x1b")
        dense = escapes > len(region) >> 6
        if dense and raw is not None and left is not None:
            fast = _plain_sgr_text(raw, escapes)
            if fast is not None:
                return fast.decode("ascii"), b"\x07" in left
        if dense:
            sample = region[:_SAMPLE]
            if raw is not None and left is not None:
                # As bytes, each of the sequences commonest in a sample (ls --color's
                # few colours and resets) by as many NULs: a replace (in place) is
                # several times faster than the regex's, which makes a string per
                # match. Two complete sequences never overlap (each starts with the
                # only ESC in it), so this removes what the regex would.
                common = Counter(_cells().findall(sample)).most_common(_COMMON)
                replaced = raw
                for seq, count in common:
                    if count >= _WORTH:
                        replaced = replaced.replace(seq.encode(), b"\x00" * len(seq))
                if b"\x1b" not in replaced:  # (all of them: the regex has nothing to do)
                    visible = replaced.translate(None, b"\x00").decode("ascii")
                    dense = False
                    escapes = 0
                elif replaced is not raw:
                    visible = replaced.decode("ascii")
            else:
                for reset in ("\x1b[0m", "\x1b[m"):
                    if reset in sample:
                        visible = visible.replace(reset, "\x00")
            dense = dense and visible is not region
        if escapes:
            visible = _escapes().sub("", visible)
        if "\x1b" in visible:
            return None
        if dense:
            if left is not None:  # (deleting a byte is ~2x faster than a replace)
                visible = visible.encode("ascii").translate(None, b"\x00").decode("ascii")
            else:
                visible = visible.replace("\x00", "")
        # (the slower two-character search only where a bracket appears at all)
        events = "]" in region and "\x1b]" in region
    if "\x07" in visible:
        visible = visible.replace("\x07", "")
        events = True
    return visible, events


# How much of a region tells which sequences it is full of.
_SAMPLE = 1 << 16
# At most so many of the commonest sequences in the sample are replaced, each only if
# the sample holds it at least so many times (a replace reads the whole region).
_COMMON = 12
_WORTH = 16


@cache
def _cells() -> re.Pattern[str]:
    return re.compile(_CELLS)


# The bytes of a CSI's parameters.
_PARAMS = b"0123456789;:"


def _plain_sgr_text(raw: bytes, escapes: int) -> bytes | None:
    """``raw`` (ASCII) without its escape sequences and bells, if each of its
    ``escapes`` ESCs starts an SGR, EL or ECH and its text holds no parameter
    byte (a digit, ";" or ":") and no "[": ls --color's listing of names without
    digits, coloured text without numbers. Else None.

    In such text every parameter byte is inside a sequence, so deleting them all
    leaves each sequence as ESC, "[" and its final, which a replace of each of
    the three blanks. That is a few passes over the bytes whatever the colours,
    where replacing each distinct sequence (``_visible``) takes one pass per
    colour, each about as dear.
    """
    # Text with numbers is mostly told by its start, cheaply; the whole is read after.
    if _params_in_text(_skeleton(raw[:_SAMPLE])):
        return None
    skeleton = _skeleton(raw)
    if skeleton.count(b"[") != escapes or _params_in_text(skeleton):
        return None
    text = raw.translate(None, _PARAMS)
    for final in (b"m", b"K", b"X"):
        text = text.replace(b"\x1b[" + final, b"\x00\x00\x00")
        if b"\x1b" not in text:
            break
    else:  # another sequence, or parameters and a final around text
        return None
    # Each ESC starts parameter bytes, "[", parameter bytes and a final, and holds
    # the only "[" there is (one per ESC): what _params_in_text said is exact.
    # (Bytes between ESC and "[" make no CSI: they were refused as text's.)
    return text.translate(None, b"\x00\x07")


@cache
def _skeleton_tables() -> tuple[bytes, bytes]:
    table = bytearray(range(256))
    for byte in _PARAMS:
        table[byte] = ord("0")
    for byte in b"KX":
        table[byte] = ord("m")
    keep = b"[" + _PARAMS + b"mKX"
    return bytes(table), bytes(byte for byte in range(256) if byte not in keep)


def _skeleton(raw: bytes) -> bytes:
    """What tells where the parameter bytes of ``raw`` stand: its "["s, parameter
    bytes (as "0") and m, K and X (the finals of SGR, EL and ECH, as "m")."""
    table, delete = _skeleton_tables()
    return raw.translate(table, delete)


def _params_in_text(skeleton: bytes) -> bool:
    """Whether a parameter byte stands outside the parameters of the CSIs of the
    text of that ``skeleton``, given that each of its ESCs starts parameter bytes,
    "[", parameter bytes and an m, K or X, and that no other "[" is in it (else the
    answer means nothing). A CSI's parameters follow its "["; any other parameter
    byte follows an m, K or X (a final, or the text's own), other such bytes, or
    nothing.
    """
    return b"m0" in skeleton or skeleton.startswith(b"0")


def _plain_lines(left: bytes | None) -> int:
    """The number of lines of text that is printable ASCII lines each ended by CR LF
    (the commonest flood), else 0: ``left``, what is left of the text once printable
    ASCII is deleted (None: not ASCII), must be CR LFs only."""
    if left is None:
        return 0
    size = len(left)
    if size & 1 or left.count(b"\r\n") * 2 != size:
        return 0
    return size >> 1


def _stretch_end(data: str, pos: int, left: bytes | None) -> int:
    """Where the text from ``pos`` stops only scrolling, but for escape sequences
    in ASCII text, which the caller checks; ``left`` as for :func:`_plain_lines`."""
    # Deleting what may appear leaves any other control: faster than a match.
    if left is not None and not left.translate(None, b"\x07\t\n\r\x1b"):
        return len(data)
    return _scrolling(left is not None).match(data, pos).end()  # type: ignore[union-attr]


def _crlf_lines(
    visible: str, x0: int, cols: int, need: int, checked: int = 0
) -> tuple[int, int, int, int] | None:
    """:func:`_any_lines` for text whose every CR and LF is a CR LF (the common
    flood): only the lines' lengths matter, and are counted in C. None if the
    text is not like that, or too short. ``checked``: the number of CR LFs, if
    the caller knows there are no other CRs or LFs."""
    feeds = checked or visible.count("\r\n")
    if feeds < 1 or (
        not checked and (visible.count("\n") != feeds or visible.count("\r") != feeds)
    ):
        return None
    # The lines walked back over: at most ``need`` (each is at least one row), and
    # the last. ``parts[j]`` is ``tail[j - offset]``.
    steps = min(feeds, need + 1)
    at = len(visible)
    for _ in range(steps):
        at = visible.rfind("\r\n", 0, at)
    tail = visible[at + 2 :].split("\r\n")
    offset = feeds + 1 - len(tail)
    # Every line but the first starts at column 0: wraps(len) extra rows each.
    last = len(tail[-1])
    acc = (last - 1) // cols if last > cols else 0
    walked = 0  # the wraps of the lines walked over
    j = feeds - 1
    while acc < need and j > 0:
        size = len(tail[j - offset])
        wraps = (size - 1) // cols if size > cols else 0
        walked += wraps
        acc += wraps + 1
        j -= 1
    if acc < need:
        return feeds, -1, 0, 0
    wraps = _wraps_of_lines(visible, cols)
    first = visible.find("\r\n")
    wraps -= (first - 1) // cols if first > cols else 0  # (counted below from x0)
    wraps -= (last - 1) // cols if last > cols else 0  # (after the cut in any case)
    wraps += (x0 + first - 1) // cols if first else 0  # the first line starts at x0
    return feeds, j, j + 1 + wraps - walked, 0


# Lines are counted a block of about this many characters at a time: the pieces
# of one block reuse the memory of the last (one split of a whole 16 MiB feed
# touches as much fresh memory again, ~40% slower).
_BLOCK = 1 << 18


# Past so many lines wider than the screen, the rest are counted all at once.
_FEW_WIDE = 64


@lru_cache(maxsize=8)
def _fitting(cols: int) -> re.Pattern[str]:
    """Lines no wider than ``cols``, each ended by CR LF, from where it starts (in text
    whose every CR is one of a CR LF: "." takes a CR only to give it back)."""
    return re.compile(f"(?:.{{0,{cols}}}\r\n)*+")


def _wraps_of_lines(visible: str, cols: int) -> int:
    """The autowraps the CR LF separated lines of ``visible`` (every CR and LF of it a
    CR LF) make from column 0. A listing fits its screen but for a few lines: the regex
    goes past the lines that fit (several times faster than measuring each line), and
    the lines wider than the screen are measured one by one, or past a few, all the
    rest at once."""
    fit = _fitting(cols).match
    n = len(visible)
    wraps = 0
    at = 0
    for _ in range(_FEW_WIDE):
        at = fit(visible, at).end()  # type: ignore[union-attr]
        if at >= n:
            return wraps
        stop = visible.find("\r\n", at)
        if stop < 0:  # the last line
            stop = n
        size = stop - at
        wraps += (size - 1) // cols if size > cols else 0
        at = stop + 2
    rest = _lengths(visible, at).items()  # (none past the end)
    return wraps + sum(count * ((size - 1) // cols) for size, count in rest if size > cols)


def _lengths(visible: str, start: int = 0) -> Counter[int]:
    """How many of the CR LF separated lines of ``visible[start:]`` have each length."""
    lengths: Counter[int] = Counter()
    update = lengths.update
    n = len(visible)
    while start <= n:
        stop = visible.find("\r\n", start + _BLOCK)
        if stop < 0:
            stop = n
        update(map(len, visible[start:stop].split("\r\n")))
        start = stop + 2
    return lengths


def _any_lines(
    visible: str, x0: int, cols: int, need: int, stops: list[int], lnm: bool
) -> tuple[int, int, int, int] | None:
    """Where to cut ``visible`` (text that only scrolls, without escape sequences):
    ``(feeds, j, before, x)``, the number of line feeds, the last one (``j``,
    counted from 0) after which at least ``need`` scrolls follow, the scrolls up
    to and including it, and the cursor's column after it. None if there is none."""
    parts = visible.split("\n")
    feeds = len(parts) - 1
    if feeds + len(visible) // cols <= need:
        return None
    rows, xs, tail = _simulate(parts, x0, cols, stops, lnm)
    acc = tail
    j = feeds - 1
    while j >= 0 and acc < need:
        acc += rows[j]
        j -= 1
    if j < 0 or acc < need:
        return None
    return feeds, j, sum(rows[: j + 1]), xs[j]


def _simulate(
    parts: list[str], x: int, cols: int, stops: list[int], lnm: bool
) -> tuple[list[int], list[int], int]:
    """Scrolls and columns line by line, for lines with tabs, lone CRs or bare LFs."""
    rows: list[int] = []
    xs: list[int] = []
    wraps = 0
    for i, part in enumerate(parts):
        wraps = 0
        for k, seg in enumerate(part.split("\r")):
            if k:
                x = 0
            for t, piece in enumerate(seg.split("\t")):
                if t:
                    at = bisect_right(stops, x)
                    x = min(stops[at], cols - 1) if at < len(stops) else cols - 1
                size = len(piece)
                if size:
                    wraps += (x + size - 1) // cols
                    x = (x + size - 1) % cols + 1
        if i < len(parts) - 1:
            if lnm:
                x = 0
            rows.append(wraps + 1)
            xs.append(x)
    return rows, xs, wraps


def _last_reset(data: str, start: int, stop: int) -> int:
    """Where the last SGR that resets the attributes (``CSI m``, ``CSI 0 m``,
    ``CSI 0 ; ... m``) in ``data[start:stop]`` starts, ``start`` if none does:
    earlier SGRs cannot matter. Looked for near the end first, where it usually is."""
    size = 4096
    while True:
        lo = max(start, stop - size)
        found = max(
            data.rfind("\x1b[m", lo, stop),
            data.rfind("\x1b[0m", lo, stop),
            data.rfind("\x1b[0;", lo, stop),
        )
        if found >= 0 or lo == start:
            return max(found, start)
        stop = lo + 3  # (a sequence across the window's edge)
        size *= 4


def _apply_state(stream: EngineStream, data: str, start: int, stop: int, events: bool) -> None:
    """Run what in ``data[start:stop]`` (text that only scrolls) changes more than cells:
    OSC strings and bells (if ``events``) in order, and the SGRs that decide the
    attributes in force."""
    screen = stream.screen
    if data.find("\x1b", start, stop) < 0 and not events:
        return
    reset = _last_reset(data, start, stop)
    osc = stream._osc  # (answers colour queries, then hands the rest to the screen)
    bell = screen.bell
    if reset > start and events:
        for m in _events().finditer(data, start, reset):
            try:
                payload, end = m.group(1, 2)
                if payload is None:
                    bell()
                else:
                    osc(payload, end == "\x07")
            except Exception:
                stream.errors += 1
    sgr = screen.sgr
    for m in _state().finditer(data, reset, stop):
        try:
            run = m.group(1)
            if run is not None:
                inner = run[2:-1]
                if "m\x1b[" not in inner:
                    sgr(inner)
                else:
                    _sgr_run(sgr, inner)
            else:
                payload, end = m.group(2, 3)
                if payload is None:
                    bell()
                else:
                    osc(payload, end == "\x07")
        except Exception:
            stream.errors += 1


def _wrapped_rows(
    rows: list[tuple[str, Runs | None, bool]],
    text: str,
    starts: list[int],
    pens: list[Cell],
    glyphs: list[_Glyphs],
    cols: int,
) -> None:
    """Append the rows autowrap cuts a line wider than the screen into (its text,
    and the columns where the pen changes, 0 first, with a cell and the cells of
    each pen): all but the first a continuation. A line of exactly so many screen
    widths fills its last row and wraps no further (the CR LF after it clears the
    pending wrap)."""
    n = len(starts)
    size = len(text)
    for at in range(0, size, cols):
        stop = at + cols
        # The run the row starts in, then the changes within it.
        first = bisect_right(starts, at) - 1
        within = [0]
        row_pens = [glyphs[first][text[at]]]
        i = first + 1
        while i < n and starts[i] < stop:
            within.append(starts[i] - at)
            row_pens.append(pens[i])
            i += 1
        piece = text[at:stop]
        rows.append((piece, (len(piece), (*within,), (*row_pens,)), at > 0))


# The parameter bytes of an SGR, as text.
_PARAM_CHARS = _PARAMS.decode()


@cache
def _text_part() -> re.Pattern[str]:
    return re.compile("[\x20-\x7e]*")


def _styled_rows(stream: EngineStream, data: str, start: int, end: int) -> int:
    """Draw the lines of ``data[start:end]`` that are printable ASCII and SGRs ended
    by CR LF (coloured output: ``ls --color``, logs), from column 0 of the empty
    bottom row the bulk path just left: each row built at once from the pieces
    between SGRs, as ``draw`` and ``sgr`` would leave it, instead of one ``draw``
    and one ``sgr`` per piece; a line wider than the screen as the rows autowrap
    cuts it into. A row is its text and its pens (where the pen changes, and a cell
    of each): ``EngineScreen.scroll_styled_rows`` gives cells only to the rows that
    stay on the screen. Returns where the stream goes on (the first line that is
    not like that, or ``start``).

    Pieces repeat (a colour and a name, the reset and the spaces after it): the
    attributes after each are computed once per attributes before it.
    """
    stop = data.rfind("\r\n", start, end)
    if stop < 0:
        return start
    screen = stream.screen
    cols = screen.columns
    cursor = screen.cursor
    bottom = screen.lines - 1
    if cursor.x or cursor.y != bottom or screen.buffer.get(bottom) or not _plain_screen(screen):
        return start
    sgr = screen.sgr
    select = screen._select_glyphs
    text_part = _text_part().fullmatch
    # Attributes by number, so that keys hash a small int rather than a Cell.
    attrs_of: list[Cell] = [cursor.attrs]  # type: ignore[list-item]
    number: dict[Cell, int] = {attrs_of[0]: 0}
    # [attributes' number][piece] -> (number after, the cells of those attributes,
    # text, its length, its first cell)
    tables: list[dict[str, tuple[int, _Glyphs, str, int, Cell | None]]] = [{}]
    # [attributes' number][an SGR's parameters] -> (number after, its cells): pieces
    # differ by their text (names with numbers), an SGR's effect is computed once.
    moves: list[dict[str, tuple[int, _Glyphs]]] = [{}]
    state = 0
    rows: list[tuple[str, Runs | None, bool]] = []
    at = start
    try:
        for line in data[start:stop].split("\r\n"):
            parts = line.split("\x1b[")
            s = state
            head = parts[0]
            if head and text_part(head) is None:
                break
            texts = [head]
            width = len(head)
            # Where the pen changes, a cell of each pen and its cells (the runs):
            # the pieces' attributes by number tell where it changes.
            if head:
                glyphs = select(attrs_of[s])
                starts = [0]
                pens = [glyphs[head[0]]]
                runs_glyphs = [glyphs]
            else:
                starts, pens, runs_glyphs = [], [], []
            pen = s if head else -1
            for part in parts[1:]:
                got = tables[s].get(part)
                if got is None:
                    m = part.find("m")
                    text = part[m + 1 :]
                    if m < 0 or not (text.isascii() and text.isprintable()):
                        break
                    params = part[:m]
                    move = moves[s].get(params)
                    if move is None:
                        if params.strip(_PARAM_CHARS):  # (another CSI: its final is before)
                            break
                        cursor.attrs = attrs_of[s]  # type: ignore[assignment]
                        try:
                            sgr(params)
                        except Exception:  # (counted as an error by the stream)
                            break
                        after: Cell = cursor.attrs  # type: ignore[assignment]
                        n = number.get(after)
                        if n is None:
                            n = number[after] = len(attrs_of)
                            attrs_of.append(after)
                            tables.append({})
                            moves.append({})
                        move = moves[s][params] = (n, select(after))
                    n, glyphs = move
                    first = glyphs[text[0]] if text else None
                    got = tables[s][part] = (n, glyphs, text, len(text), first)
                s, glyphs, text, size, first = got
                if size:
                    if s != pen:
                        starts.append(width)
                        pens.append(first)  # type: ignore[arg-type]
                        runs_glyphs.append(glyphs)
                        pen = s
                    width += size
                    texts.append(text)
            else:
                if width <= cols:
                    text = "".join(texts) if len(texts) > 1 else head
                    rows.append((text, (width, (*starts,), (*pens,)) if width else None, False))
                else:
                    _wrapped_rows(rows, "".join(texts), starts, pens, runs_glyphs, cols)
                state = s
                at += len(line) + 2
                continue
            break
    finally:
        cursor.attrs = attrs_of[state]  # type: ignore[assignment]
    screen.scroll_styled_rows(rows)
    return at

"""The input modes a key encoding needs, read from raw output without the engine.

``send-keys`` must encode cursor keys for application cursor mode (DECCKM,
``CSI ? 1 h``) and wrap a literal followed by Enter as a paste when the
program asked for bracketed paste (``CSI ? 2004 h``). Replaying a bootstrap into
the engine tells it, but costs the engine's import and a full replay. This
module scans the same bytes (a checkpoint and the journal after it, fed to a
fresh engine) for just the sequences that change those two modes, and gives
the modes the engine would report, or None when it cannot be sure: then the
caller replays the bytes into the engine after all.

It is sure only of well-formed input: every ESC must start a complete
sequence the engine's fast tokenizer would read the same way (CSI, OSC,
DCS/SOS/PM/APC ended by ST, ESC with intermediates, two-character ESC), and
the bytes must hold no C1 code point (U+0080..U+009F: the engine skips those
inside a sequence). Strings (OSC, DCS, ...) are skipped whole, as the engine
skips them. What changes the modes, as in the engine (pyte semantics):

* ``CSI ? Ps ; ... h`` / ``l``: set / reset private modes 1 and 2004;
* ``ESC c`` (RIS): both off;
* ``CSI ! p`` (DECSTR): application cursor keys off;
* a non-private ``CSI ... 32 h`` / ``l`` would also toggle DECCKM in pyte's
  numbering: the scanner declines (None) rather than copy that quirk.
* the kitty keyboard protocol's flags, a stack per screen as the engine keeps
  them: ``CSI > flags u`` pushes (the oldest of more than 16 entries evicted),
  ``CSI < n u`` pops, ``CSI = flags ; mode u`` sets the top; entering or leaving
  the alternate screen (``CSI ? 1049/1047/47 h`` / ``l``) empties its stack, and
  RIS both. (A pane whose program pushed flags is the one send-keys types
  kitty's way into: declining it would cost every such call an engine.)

``tests/client/test_modes.py`` checks it against the engine.
"""

from __future__ import annotations

import re

from phux.client.keys import KeyModes

_C1 = re.compile(rb"\xc2[\x80-\x9f]")
# One literal ESC first, so the search skips text at memchr speed.
_SEQUENCE = re.compile(
    rb"\x1b(?:"
    # 1: CSI; 2 private prefix, 3 parameters, 4 intermediates, 5 final
    rb"(\[([\x3c-\x3f]?)([\x30-\x3b]*)([\x20-\x2f]*)([\x40-\x7e]))"
    # 6: complete OSC (BEL or ST), 7: complete DCS/SOS/PM/APC (ST)
    rb"|(\][^\x07\x1b\x18\x1a]*(?:\x07|\x1b\\))"
    rb"|([PX^_][^\x1b\x18\x1a]*\x1b\\)"
    # 8: ESC with intermediates
    rb"|([\x20-\x2f]+[\x30-\x7e])"
    # 9: the final of a two-character ESC sequence
    rb"|([\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])"
    # 10: any other ESC: cut, interrupted or malformed
    rb"|()"
    rb")"
)
_MAX_CSI = 256


def _ints(params: bytes) -> list[int]:
    """Parameters as the engine reads them: missing ones are 0, values capped at 9999."""
    if not params:
        return [0]
    return [min(int(p), 9999) if p else 0 for p in params.split(b";")]


def scan_modes(data: bytes) -> KeyModes | None:
    """The modes a fresh engine fed ``data`` would end in, or None if unsure."""
    if _C1.search(data) is not None:
        return None
    app_cursor = False
    bracketed_paste = False
    alternate = False
    stacks: dict[bool, list[int]] = {False: [], True: []}
    for m in _SEQUENCE.finditer(data):
        kind = m.lastindex
        if kind == 1:
            if m.end() - m.start() > _MAX_CSI:
                return None
            prefix, params, inter, final = m.group(2, 3, 4, 5)
            if inter:
                if inter == b"!" and final == b"p" and not prefix:
                    app_cursor = False  # DECSTR
                continue
            if final == b"u" and prefix:
                if b":" in params:
                    continue  # the engine ignores these
                _kitty(stacks[alternate], prefix, params)
                continue
            if final != b"h" and final != b"l":
                continue
            if b":" in params:
                continue  # the engine ignores these
            values = _ints(params)
            if not prefix:
                if 32 in values:
                    return None  # pyte's numbering would make this DECCKM
                continue
            if prefix != b"?":
                continue
            on = final == b"h"
            for value in values:
                if value == 1:
                    app_cursor = on
                elif value == 2004:
                    bracketed_paste = on
                elif value in _ALT_SCREEN and alternate != on:
                    alternate = on
                    stacks[True] = []  # (entered fresh; left, its flags go with it)
        elif kind == 9:
            if m.group(9) == b"c":  # RIS
                app_cursor = bracketed_paste = alternate = False
                stacks = {False: [], True: []}
        elif kind == 10:
            return None
    stack = stacks[alternate]
    return KeyModes(
        app_cursor=app_cursor, bracketed_paste=bracketed_paste, kitty=stack[-1] if stack else 0
    )


_ALT_SCREEN = (1049, 1047, 47)
_KITTY_STACK = 16  # (the engine's KITTY_STACK: importing it would import the engine)
_KITTY_FLAGS = 0b11111


def _kitty(stack: list[int], prefix: bytes, params: bytes) -> None:
    """A kitty keyboard request applied to the active screen's ``stack``, as the
    engine applies it (``CSI ? u``, the query, changes nothing)."""
    fields = [int(p) if p.isdigit() else 0 for p in params.split(b";")] if params else [0]
    value = fields[0] & _KITTY_FLAGS
    if prefix == b">":
        stack.append(value)
        del stack[:-_KITTY_STACK]
    elif prefix == b"<":
        del stack[max(0, len(stack) - max(fields[0], 1)) :]
    elif prefix == b"=":
        mode = fields[1] if len(fields) > 1 and fields[1] else 1
        current = stack[-1] if stack else 0
        if mode in (1, 2, 3):
            new = value if mode == 1 else current | value if mode == 2 else current & ~value
            if stack:
                stack[-1] = new
            else:
                stack.append(new)

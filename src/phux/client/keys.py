"""tmux-style key names turned into the bytes a terminal program expects.

Follows xterm. The encoding depends on modes the client's engine saw the
program set: application cursor keys (DECCKM, ``CSI ? 1 h``) switch the
arrows and Home/End from ``CSI A`` to ``SS3 A``; bracketed paste (``CSI ? 2004 h``)
wraps pasted text in ``CSI 200 ~`` ... ``CSI 201 ~``; the kitty keyboard
protocol's "disambiguate escape codes" flag (``CSI > 1 u``, which neovim,
helix, kakoune and fish 4 push) sends Escape, keys with Ctrl or Alt, modified
Enter, Tab, Backspace and Space, and F1-F4 as kitty specifies: ``CSI code ;
modifiers u`` (``C-a`` is ``CSI 97;5u``, Escape ``CSI 27u``), ``CSI 1;m P``,
F3 as ``CSI 13 ~``; plain text, Enter, Tab and Backspace stay as they were,
and so do C-c, C-\\ and C-z (see ``_INTERRUPTS``). "Report all keys as escape
codes" (8) adds shifted characters (``S-a`` is ``CSI 97;2u``), "report alternate
keys" (4) the shifted character (``CSI 97:65;2u``), "report associated text" (16)
the text typed (``CSI 97;2;65u``). Text words, and Enter, Tab, Backspace and
Space without modifiers, are typed as a terminal types them without the
protocol even under flag 8 (as an input method's text reaches the program):
typing a command costs no look at the pane's modes.

A KEYS argument is a named key (``Enter``, ``Up``, ``F5``), a key with
modifiers (``C-c``, ``M-x``, ``C-M-x``, ``S-Up``, ``C-Left``), or anything else,
which is sent literally as UTF-8. Words that look like a key but are not one
(``C-``, ``F13``, ``Foo-x``, ``C-Foo``) raise UnknownKey rather than being typed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from phux.client.errors import UnknownKey
from phux.record import Record

ESC = "\x1b"
CSI = "\x1b["
SS3 = "\x1bO"
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


class KeyModes(Record):
    """The input-relevant modes of a terminal, as its engine last saw them."""

    app_cursor: bool = False
    bracketed_paste: bool = False
    kitty: int = 0
    """The kitty keyboard protocol's flags (``KITTY_DISAMBIGUATE``, ``KITTY_ALTERNATE``,
    ``KITTY_ALL_KEYS`` and ``KITTY_TEXT`` change keys here; event types, 2, do not:
    send-keys types presses only)."""


NO_MODES = KeyModes()
"""Every mode off (the state of a freshly started terminal)."""

KITTY_DISAMBIGUATE = 1
"""The kitty keyboard flag "disambiguate escape codes" (``CSI > 1 u``)."""
KITTY_ALTERNATE = 4
"""The kitty keyboard flag "report alternate keys": a shifted key also says what it
types shifted (``S-a`` is ``CSI 97:65;2u``)."""
KITTY_ALL_KEYS = 8
"""The kitty keyboard flag "report all keys as escape codes", a superset of
disambiguate: a shifted character is a key event too (``S-a`` is ``CSI 97;2u``)."""
KITTY_TEXT = 16
"""The kitty keyboard flag "report associated text" (with ``KITTY_ALL_KEYS``): a key
event that types text carries it (``S-a`` is ``CSI 97;2;65u``)."""

# Kitty's key numbers of the keys it reports as ``CSI number ; modifiers u``.
_KITTY_CODES = {"Escape": 27, "Esc": 27, "Enter": 13, "Tab": 9, "BSpace": 127, "Space": 32}


# Plain keys (no modifier): name -> bytes.
_SIMPLE: dict[str, str] = {
    "Enter": "\r",
    "Tab": "\t",
    "BTab": CSI + "Z",
    "Escape": ESC,
    "Esc": ESC,
    "Space": " ",
    "BSpace": "\x7f",
}

# Cursor-style keys: name -> final byte. Normal mode CSI X, application mode SS3 X,
# with modifiers CSI 1 ; m X.
_CURSOR: dict[str, str] = {
    "Up": "A",
    "Down": "B",
    "Right": "C",
    "Left": "D",
    "Home": "H",
    "End": "F",
}

# Tilde keys: name -> number (CSI n ~, with modifiers CSI n ; m ~).
_TILDE: dict[str, int] = {
    "IC": 2,
    "Insert": 2,
    "DC": 3,
    "Delete": 3,
    "PageUp": 5,
    "PgUp": 5,
    "PPage": 5,
    "PageDown": 6,
    "PgDn": 6,
    "NPage": 6,
    "F5": 15,
    "F6": 17,
    "F7": 18,
    "F8": 19,
    "F9": 20,
    "F10": 21,
    "F11": 23,
    "F12": 24,
}

# F1-F4: SS3 P..S, with modifiers CSI 1 ; m P..S.
_PF: dict[str, str] = {"F1": "P", "F2": "Q", "F3": "R", "F4": "S"}

_CONTROL_PUNCT: dict[str, int] = {
    "@": 0x00,
    " ": 0x00,
    "[": 0x1B,
    "\\": 0x1C,
    "]": 0x1D,
    "^": 0x1E,
    "_": 0x1F,
    "?": 0x7F,
}

_MODIFIER = re.compile(r"^(?:[CMS]-)+")
_LOOKS_LIKE_FKEY = re.compile(r"^F[0-9]+$")
_LOOKS_LIKE_KEY = re.compile(r"^[A-Z][A-Za-z]*-\S$")

KEY_NAMES: tuple[str, ...] = (
    *_SIMPLE,
    *_CURSOR,
    *_TILDE,
    *_PF,
)


def _unknown(token: str, why: str) -> UnknownKey:
    return UnknownKey(f"unknown key {token!r}: {why}")


def _kitty_named(name: str, mod: int) -> str | None:
    """A named key as the kitty protocol's disambiguate flag sends it, or None where
    that is the legacy encoding (arrows, Home/End, the tilde keys, and Enter,
    Tab, Backspace and Space without modifiers)."""
    if name == "BTab":  # Shift-Tab (mod is 1 + the modifier bits, Shift's being 1)
        name, mod = "Tab", mod if (mod - 1) & 1 else mod + 1
    code = _KITTY_CODES.get(name)
    if code is not None:
        if code != 27 and mod == 1:
            return None
        return f"{CSI}{code};{mod}u" if mod > 1 else f"{CSI}{code}u"
    if name in _PF:
        if name == "F3":  # (CSI R is a cursor position report)
            return f"{CSI}13;{mod}~" if mod > 1 else f"{CSI}13~"
        return f"{CSI}1;{mod}{_PF[name]}" if mod > 1 else CSI + _PF[name]
    return None


def _disambiguates(flags: int) -> bool:
    return bool(flags & (KITTY_DISAMBIGUATE | KITTY_ALL_KEYS))


def _kitty_char(char: str, ctrl: bool, meta: bool, shift: bool, flags: int) -> str:
    """A character with modifiers as kitty's protocol sends it: its unshifted key's
    code point and the modifiers (``C-S-i`` is ``CSI 105;6u``); with the alternate
    keys flag, a shifted letter's shifted code point after a colon; with the text
    flag, the text a shifted letter types (Ctrl and Alt type none; what Shift does to
    a digit or a sign depends on a keyboard layout phux does not know)."""
    mod = 1 + (1 if shift else 0) + (2 if meta else 0) + (4 if ctrl else 0)
    key = char.lower() if char.isascii() else char
    code = str(ord(key))
    typed = key.upper() if shift else key
    if shift and flags & KITTY_ALTERNATE and typed != key:
        code += f":{ord(typed)}"
    if flags & KITTY_TEXT and flags & KITTY_ALL_KEYS and not (ctrl or meta) and typed != key:
        return f"{CSI}{code};{mod};{ord(typed)}u"
    return f"{CSI}{code};{mod}u"


def _named(name: str, ctrl: bool, meta: bool, shift: bool, modes: KeyModes) -> str | None:
    """Bytes of a named key with modifiers, or None if ``name`` is not a key name."""
    mod = 1 + (1 if shift else 0) + (2 if meta else 0) + (4 if ctrl else 0)
    if _disambiguates(modes.kitty):
        kitty = _kitty_named(name, mod)
        if kitty is not None:
            return kitty
    if name in _CURSOR:
        final = _CURSOR[name]
        if mod > 1:
            return f"{CSI}1;{mod}{final}"
        return (SS3 if modes.app_cursor else CSI) + final
    if name in _TILDE:
        number = _TILDE[name]
        return f"{CSI}{number};{mod}~" if mod > 1 else f"{CSI}{number}~"
    if name in _PF:
        final = _PF[name]
        return f"{CSI}1;{mod}{final}" if mod > 1 else SS3 + final
    if name in _SIMPLE:
        base = _SIMPLE[name]
        if name == "Tab" and shift:
            base = CSI + "Z"
        elif name == "Space" and ctrl:
            base = "\x00"
        return (ESC + base) if meta else base
    return None


def _control(char: str) -> str | None:
    if char in _CONTROL_PUNCT:
        return chr(_CONTROL_PUNCT[char])
    if char.isascii() and char.isalpha():
        return chr(ord(char.lower()) - ord("a") + 1)
    return None


def key_bytes(token: str, modes: KeyModes = NO_MODES) -> bytes | None:
    """The bytes of one named key, None for a literal, UnknownKey for a bad key name."""
    plain = _named(token, False, False, False, modes)
    if plain is not None:
        return plain.encode()
    match = _MODIFIER.match(token)
    if match and len(token) > match.end():
        prefix = match.group(0)
        rest = token[match.end() :]
        ctrl, meta, shift = "C-" in prefix, "M-" in prefix, "S-" in prefix
        named = _named(rest, ctrl, meta, shift, modes)
        if named is not None:
            return named.encode()
        if len(rest) != 1:
            raise _unknown(token, f"{rest!r} is not a key name")
        char = rest
        flags = modes.kitty
        if (
            (ctrl or meta or (shift and flags & KITTY_ALL_KEYS))
            and _disambiguates(flags)
            and token not in _INTERRUPTS
        ):
            return _kitty_char(char, ctrl, meta, shift, flags).encode()
        if shift:
            char = char.upper()
        if ctrl:
            controlled = _control(char)
            if controlled is None:
                raise _unknown(token, f"there is no control character for {char!r}")
            char = controlled
        return ((ESC if meta else "") + char).encode()
    if match:  # only modifiers, like "C-"
        raise _unknown(token, "a modifier needs a key after it, like C-c")
    if _LOOKS_LIKE_FKEY.match(token):
        raise _unknown(token, "function keys are F1 to F12")
    if _LOOKS_LIKE_KEY.match(token):
        raise _unknown(token, f"{token.split('-')[0]!r} is not a modifier (use C-, M- or S-)")
    return None


def sanitize_paste(data: bytes) -> bytes:
    """Remove bracketed-paste delimiters from text so it cannot end the paste early,
    until none is left: removing one may join the bytes around it into another."""
    while PASTE_END in data or PASTE_START in data:
        data = data.replace(PASTE_END, b"").replace(PASTE_START, b"")
    return data


def paste_bytes(text: str | bytes, modes: KeyModes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    if modes.bracketed_paste:
        return PASTE_START + sanitize_paste(data) + PASTE_END
    return data


def validate_keys(keys: Sequence[str]) -> None:
    """Raise UnknownKey for the first bad key name (mode independent)."""
    for token in keys:
        key_bytes(token)


def needs_modes(keys: Sequence[str]) -> bool:
    """Whether encoding ``keys`` depends on the terminal's modes: application cursor
    keys change the arrows, Home and End; the kitty keyboard protocol changes
    Escape, F1-F4, BTab and keys with modifiers (text, Enter, Tab and Backspace
    alone stay as they are, so typing a command costs no look at the modes)."""
    return any(
        token in _CURSOR
        or token in _KITTY_SENSITIVE
        or (_MODIFIER.match(token) is not None and token not in _INTERRUPTS)
        for token in keys
    )


_KITTY_SENSITIVE = frozenset(("Escape", "Esc", "BTab", *_PF))
# C-c, C-\ and C-z stay the bytes the tty turns into signals, whatever the program
# asked for: an interrupt must not wait for a look at the modes of a flooding pane,
# and programs that take kitty's keys still read these bytes as those keys.
_INTERRUPTS = frozenset(("C-c", "C-\\", "C-z"))


INTERRUPT_BYTES = b"\x03\x1c\x1a"
"""C-c, C-\\ and C-z: the keys a tty turns into SIGINT, SIGQUIT and SIGTSTP."""


def is_interrupt(data: bytes) -> bool:
    """Input made only of interrupt keys: sent urgent, ahead of queued input."""
    return bool(data) and not data.strip(INTERRUPT_BYTES)


def encode_keys(keys: Sequence[str], modes: KeyModes = NO_MODES, *, literal: bool = False) -> bytes:
    """The bytes KEYS type, in order, as one write: key names become their sequences,
    anything else (every word, with ``literal``) is typed as its UTF-8 text, never
    as a bracketed paste: ``':wq' Enter`` must reach vim as typed keys, as tmux's
    send-keys sends them. Pasting is ``paste_bytes``'s job."""
    if literal:
        return "".join(keys).encode()
    out = bytearray()
    for token in keys:
        encoded = key_bytes(token, modes)
        out += token.encode() if encoded is None else encoded
    return bytes(out)

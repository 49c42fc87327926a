"""tmux-style key names turned into the bytes a terminal program expects.

Follows xterm, and the kitty keyboard protocol when the program asked for it
(:mod:`phux.client.kitty_keys`). The encoding depends on modes the client's
engine saw the program set: application cursor keys (DECCKM, ``CSI ? 1 h``)
switch the arrows and Home/End from ``CSI A`` to ``SS3 A``; bracketed paste
(``CSI ? 2004 h``) wraps pasted text in ``CSI 200 ~`` ... ``CSI 201 ~``; the kitty
keyboard flags a program pushed (``CSI > flags u``) change the keys as kitty
changes them. "Disambiguate escape codes" (1, which neovim, helix, kakoune and
fish 4 push) sends Escape, keys with Ctrl or Alt, modified Enter, Tab and
Backspace, and the functional keys as ``CSI code ; modifiers u`` (``C-a`` is
``CSI 97;5u``, Escape ``CSI 27u``), ``CSI 1;m P`` and ``CSI A`` (even in application
cursor mode), F3 as ``CSI 13 ~``. "Report event types" (2) follows each key's
press with its release (``a`` then ``CSI 97;1:3u``). "Report alternate keys"
(4) adds the shifted character (``CSI 97:65;2u``). "Report all keys as escape
codes" (8, which Textual pushes) sends text key by key too (``ls`` is ``CSI 108u
CSI 115u``; ``S-a`` and ``A`` are ``CSI 97;2u``), and Enter, Tab and Backspace
(``CSI 13u``); "report associated text" (16) adds the text a key types
(``CSI 97;;97u``). Text a US keyboard types with neither one key nor Shift and a
letter (``!``, ``é``) is sent as UTF-8, as kitty sends an input method's text.
C-c, C-\\ and C-z stay the bytes a tty turns into signals, under every flag
(see ``_INTERRUPTS``).

Who pays for looking: the modes are read from the pane (one bootstrap, some
10 ms for a one-shot call) only when the keys depend on them (``needs_modes``).
Flags 2 and 8 (and 16 with 8) change every key, so they, and 16, apply only
where a raw program reads the keys: a
foreground whose tty is canonical (the kernel edits the line: ``cat``,
``read``) or keeps ISIG (a line editor: bash's readline, zsh's ZLE, fish, a
Python REPL; also ``less``) is typed to without them
(``for_foreground``). Programs that push those flags put their tty in raw
mode (Textual, crossterm, bubbletea: ISIG off too), and a shell's line editor
does not push them (fish 4 sets 1 and 4); so typing a command into a shell
costs no look at its modes, and a program that left flag 8 behind when it
crashed does not turn the ``reset`` typed at the shell into escape codes.

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

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.client.kitty_keys import Key
    from phux.wire.frames import Foreground

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
    """The kitty keyboard protocol's flags (``phux.client.kitty_keys``: 1, 2, 4, 8, 16)."""


NO_MODES = KeyModes()
"""Every mode off (the state of a freshly started terminal)."""

_RAW_ONLY = 2 | 8 | 16
"""The kitty flags that change text, Enter, Tab and Backspace (``KITTY_EVENTS``,
``KITTY_ALL_KEYS``, ``KITTY_TEXT``): they apply only where a raw program reads the
keys (``for_foreground``). Spelt out: a pane with no flags pushed, the common case,
costs send-keys no import of :mod:`phux.client.kitty_keys`."""


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

# The kitty protocol's number and final byte of the other functional keys.
_KITTY_FUNCTIONAL: dict[str, tuple[int, str]] = {
    "Escape": (27, "u"),
    "Esc": (27, "u"),
    "Enter": (13, "u"),
    "Tab": (9, "u"),
    "BTab": (9, "u"),
    "BSpace": (127, "u"),
    **{name: (1, final) for name, final in _CURSOR.items()},
    **{name: (number, "~") for name, number in _TILDE.items()},
    **{name: (1, final) for name, final in _PF.items()},
    "F3": (13, "~"),  # (CSI R is a cursor position report)
}

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


_SHIFT, _ALT, _CTRL = 1, 2, 4
"""Modifier bits, xterm's and kitty's (the parameter is 1 + their sum)."""


def _mods(ctrl: bool, meta: bool, shift: bool) -> int:
    return (_SHIFT if shift else 0) | (_ALT if meta else 0) | (_CTRL if ctrl else 0)


def _kitty_named(name: str, mods: int) -> Key:
    """A named key as a kitty key event (BTab is Shift and Tab, Space a text key)."""
    from phux.client.kitty_keys import Key

    if name == "BTab":
        mods |= _SHIFT
    if name == "Space":
        return Key(code=32, mods=mods, text="" if mods & (_CTRL | _ALT) else " ")
    code, final = _KITTY_FUNCTIONAL[name]
    return Key(code=code, final=final, mods=mods, functional=True)


def _kitty_char(char: str, ctrl: bool, meta: bool, shift: bool) -> Key:
    """A character with modifiers as a kitty key event: its unshifted key's code point
    (``C-S-i`` is ``CSI 105;6u``), a shifted letter's shifted code point, and the text
    it types (Ctrl and Alt type none; what Shift does to a digit or a sign depends on
    a keyboard layout phux does not know: ``S-1`` types 1)."""
    from phux.client.kitty_keys import Key

    key = char.lower() if char.isascii() else char
    typed = key.upper() if shift else key
    return Key(
        code=ord(key),
        mods=_mods(ctrl, meta, shift),
        shifted=ord(typed) if typed != key else 0,
        text="" if ctrl or meta else typed,
    )


def _named(name: str, ctrl: bool, meta: bool, shift: bool, modes: KeyModes) -> str | None:
    """Legacy bytes of a named key with modifiers, or None if ``name`` is not a key name."""
    mod = 1 + _mods(ctrl, meta, shift)
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


def _legacy_char(token: str, char: str, ctrl: bool, meta: bool, shift: bool) -> str:
    if shift:
        char = char.upper()
    if ctrl:
        controlled = _control(char)
        if controlled is None:
            raise _unknown(token, f"there is no control character for {char!r}")
        char = controlled
    return (ESC if meta else "") + char


def _pressed(key: Key, legacy: str, flags: int) -> str:
    """A key's press (kitty's bytes, else ``legacy``) and, under flag 2, its release."""
    from phux.client import kitty_keys as kitty

    pressed = kitty.press(key, flags)
    return (legacy if pressed is None else pressed) + kitty.release(key, flags)


def _kitty_char_bytes(
    token: str, char: str, ctrl: bool, meta: bool, shift: bool, flags: int
) -> str:
    """A character key with modifiers under kitty ``flags``: its press (the legacy
    bytes only where kitty keeps them) and, under flag 2, its release."""
    from phux.client.kitty_keys import press, release

    key = _kitty_char(char, ctrl, meta, shift)
    pressed = press(key, flags)
    if pressed is None:
        pressed = _legacy_char(token, char, ctrl, meta, shift)
    return pressed + release(key, flags)


def key_bytes(token: str, modes: KeyModes = NO_MODES) -> bytes | None:
    """The bytes of one named key, None for a literal, UnknownKey for a bad key name."""
    flags = modes.kitty
    plain = _named(token, False, False, False, modes)
    if plain is not None:
        return (_pressed(_kitty_named(token, 0), plain, flags) if flags else plain).encode()
    match = _MODIFIER.match(token)
    if match and len(token) > match.end():
        prefix = match.group(0)
        rest = token[match.end() :]
        ctrl, meta, shift = "C-" in prefix, "M-" in prefix, "S-" in prefix
        named = _named(rest, ctrl, meta, shift, modes)
        if named is not None:
            if flags:
                named = _pressed(_kitty_named(rest, _mods(ctrl, meta, shift)), named, flags)
            return named.encode()
        if len(rest) != 1:
            raise _unknown(token, f"{rest!r} is not a key name")
        if token in _INTERRUPTS or not flags:
            return _legacy_char(token, rest, ctrl, meta, shift).encode()
        return _kitty_char_bytes(token, rest, ctrl, meta, shift, flags).encode()
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


def reads_lines(foreground: Foreground | None) -> bool:
    """The pane's foreground reads keys as lines, not as a raw program: its tty is
    canonical (the kernel edits the line) or keeps ISIG (a line editor: readline,
    ZLE, fish; ``less``). Programs that push kitty's flags 2, 8 or 16 run raw."""
    return foreground is not None and (foreground.canonical or foreground.isig)


def for_foreground(modes: KeyModes, foreground: Foreground | None) -> KeyModes:
    """``modes`` as send-keys applies them to ``foreground``: where it reads lines
    (``reads_lines``) without the kitty flags that change text, Enter, Tab and
    Backspace (2, 8, 16), whatever a program left pushed."""
    if modes.kitty & _RAW_ONLY and reads_lines(foreground):
        return KeyModes(
            app_cursor=modes.app_cursor,
            bracketed_paste=modes.bracketed_paste,
            kitty=modes.kitty & ~_RAW_ONLY,
        )
    return modes


def needs_modes(
    keys: Sequence[str], foreground: Foreground | None = None, *, literal: bool = False
) -> bool:
    """Whether encoding ``keys`` for ``foreground`` depends on the terminal's modes:
    application cursor keys change the arrows, Home and End; the kitty keyboard
    protocol changes Escape, the F keys, BTab and keys with modifiers, and, for a raw
    program (not ``reads_lines``), every other key but the interrupts (flags 2 and 8).
    So typing a command at a shell's prompt costs no look at the modes.
    ``literal``: every word is text."""
    if literal:
        return any(keys) and not reads_lines(foreground)
    if any(
        token in _CURSOR
        or token in _KITTY_SENSITIVE
        or (_MODIFIER.match(token) is not None and token not in _INTERRUPTS)
        for token in keys
    ):
        return True
    return not reads_lines(foreground) and any(token not in _INTERRUPTS for token in keys)


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
    anything else (every word, with ``literal``) is typed as its text (key by key
    under kitty's flags 2 and 8), never as a bracketed paste: ``':wq' Enter`` must
    reach vim as typed keys, as tmux's send-keys sends them. Pasting is
    ``paste_bytes``'s job."""
    typed_as_keys = modes.kitty & (2 | 8)  # (KITTY_EVENTS, KITTY_ALL_KEYS)
    out = []
    for token in keys:
        encoded = None if literal else key_bytes(token, modes)
        if encoded is None:
            encoded = _typed(token, modes.kitty) if typed_as_keys else token.encode()
        out.append(encoded)
    return b"".join(out)


def _typed(text: str, flags: int) -> bytes:
    from phux.client.kitty_keys import type_text

    return type_text(text, flags).encode()

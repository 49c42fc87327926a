"""One key event as the kitty keyboard protocol sends it, per the flags a program pushed.

The protocol (kitty's docs/keyboard-protocol.rst) encodes a key as
``CSI code[:shifted] ; modifiers[:event] ; text u`` (``u``, or ``~`` and the
letters of ``CSI 1 ; m A`` for the keys that had those forms), and says per
flag which keys leave their legacy bytes. What kitty sends, key by key:

* a key that types text (a letter, a digit, Space) is sent as that text, unless
  "report all keys as escape codes" (8) is on: then ``CSI 97u`` for ``a``, with
  "report associated text" (16) the text too (``CSI 97;;97u``); Ctrl and Alt
  type no text;
* Escape, keys with Ctrl or Alt, modified Enter/Tab/Backspace and the
  functional keys take the ``CSI`` forms under "disambiguate" (1), 8 or
  "report event types" (2); Escape alone only under 1 or 8, and Enter, Tab and
  Backspace alone only under 8 (so that a person can type ``reset`` Enter at a
  shell a program left its flags to);
* "report alternate keys" (4) adds a shifted key's shifted character (``S-a``
  is ``CSI 97:65;2u``) to an event already sent as a ``CSI`` sequence;
* under 2, a key's release follows its press: ``CSI code ; mods:3 u`` (for a
  letter too, whose press was its text), none for a key sent in its legacy form
  (Enter, Tab, Backspace and Escape alone: kitty itself sends no release for the
  first three; for Escape it sends ESC again, which phux does not copy).

The legacy bytes themselves are :mod:`phux.client.keys`'s: ``press`` answers
None where they apply. send-keys presses every key once: no repeat events (2),
no events for the modifier keys themselves (which 8 reports on a keyboard).
"""

from __future__ import annotations

from phux.record import Record

KITTY_DISAMBIGUATE = 1
"""The kitty keyboard flag "disambiguate escape codes" (``CSI > 1 u``)."""
KITTY_EVENTS = 2
"""The kitty keyboard flag "report event types": a key's release follows its press."""
KITTY_ALTERNATE = 4
"""The kitty keyboard flag "report alternate keys": a shifted key also says what it
types shifted (``S-a`` is ``CSI 97:65;2u``)."""
KITTY_ALL_KEYS = 8
"""The kitty keyboard flag "report all keys as escape codes", a superset of
disambiguate: text, Enter, Tab and Backspace are key events too (``a`` is ``CSI 97u``)."""
KITTY_TEXT = 16
"""The kitty keyboard flag "report associated text" (with ``KITTY_ALL_KEYS``): a key
event that types text carries it (``S-a`` is ``CSI 97;2;65u``)."""

SHIFT, ALT, CTRL = 1, 2, 4
_PRESS, _RELEASE = 1, 3
_CSI = "\x1b["
_ESCAPE = (27, "u")
# Enter, Tab and Backspace: their legacy bytes alone unless every key is reported.
_LINE_KEYS = frozenset(((13, "u"), (9, "u"), (127, "u")))


class Key(Record):
    """A key event: ``code`` is the unshifted key's code point or a functional key's
    number, ``final`` the byte its ``CSI`` form ends with, ``mods`` Shift (1), Alt (2)
    and Ctrl (4), ``shifted`` the shifted key's code point (0: none), ``text`` what
    it types ("" for functional keys and with Ctrl or Alt)."""

    code: int
    final: str = "u"
    mods: int = 0
    shifted: int = 0
    text: str = ""
    functional: bool = False


def text_key(char: str) -> Key | None:
    """The key a US (PC-101, the protocol's base layout) keyboard types ``char`` with:
    a letter, digit or sign typed without Shift, or Shift and a letter; None for
    anything else (a shifted sign, whose key depends on the layout; text beyond ASCII),
    which reaches a program as an input method's text does: as plain UTF-8."""
    if char in _UNSHIFTED:
        return Key(code=ord(char), text=char)
    if "A" <= char <= "Z":
        return Key(code=ord(char.lower()), mods=SHIFT, shifted=ord(char), text=char)
    return None


_UNSHIFTED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789`-=[]\\;',./ ")


def _csi(key: Key, event: int, alternates: bool, text: str) -> str:
    """``CSI code[:shifted] ; mods[:event] ; text final``, each part only when needed
    (a press's event is omitted, as is the code 1 of ``CSI A``)."""
    second = bool(key.mods) or event != _PRESS
    out = _CSI
    if key.code != 1 or alternates or second or text:
        out += str(key.code)
    if alternates:
        out += f":{key.shifted}"
    if second or text:
        out += ";"
        if second:
            out += str(key.mods + 1) + (f":{event}" if event != _PRESS else "")
    if text:
        out += ";" + ":".join(str(ord(c)) for c in text)
    return out + key.final


def _legacy_alone(key: Key, flags: int) -> bool:
    """A functional key without modifiers that keeps its legacy bytes under ``flags``."""
    if key.mods:
        return False
    if (key.code, key.final) == _ESCAPE:
        return not flags & (KITTY_DISAMBIGUATE | KITTY_ALL_KEYS)
    return (key.code, key.final) in _LINE_KEYS and not flags & KITTY_ALL_KEYS


def press(key: Key, flags: int) -> str | None:
    """The bytes of ``key``'s press under ``flags``, None where the legacy encoding
    applies."""
    alternates = bool(flags & KITTY_ALTERNATE and key.mods & SHIFT and key.shifted)
    if key.functional:
        if not flags & (KITTY_DISAMBIGUATE | KITTY_EVENTS | KITTY_ALL_KEYS):
            return None
        return None if _legacy_alone(key, flags) else _csi(key, _PRESS, False, "")
    if key.text and not flags & KITTY_ALL_KEYS:
        return key.text
    text = key.text if flags & KITTY_TEXT else ""
    if not (alternates or text or flags & (KITTY_DISAMBIGUATE | KITTY_ALL_KEYS)):
        return None  # a key with Ctrl or Alt, the legacy way
    return _csi(key, _PRESS, alternates, text)


def release(key: Key, flags: int) -> str:
    """The bytes of ``key``'s release under ``flags`` ("" when none is reported)."""
    if not flags & KITTY_EVENTS or (key.functional and _legacy_alone(key, flags)):
        return ""
    alternates = bool(flags & KITTY_ALTERNATE and key.mods & SHIFT and key.shifted)
    return _csi(key, _RELEASE, alternates and not key.functional, "")


def type_text(text: str, flags: int) -> str:
    """``text`` typed key by key under ``flags`` (8 or 2 change it; see ``text_key``)."""
    if not flags & (KITTY_ALL_KEYS | KITTY_EVENTS):
        return text
    out = []
    for char in text:
        key = text_key(char)
        if key is None:
            out.append(char)
        else:
            out.append(press(key, flags) or char)
            out.append(release(key, flags))
    return "".join(out)

"""The prefix and the keys after it: tmux's defaults, and the detach key.

The prefix (default ``C-b``) followed by a key of ``PREFIX_TABLE`` is a
command of the multiplexer (``C-b %`` splits...); followed by the detach key
(default ``d``) it detaches; ``C-b C-b`` sends one ``C-b`` to the program;
followed by anything else it sends both bytes. The arrows and the resize keys
repeat as tmux's do: pressed again within REPEAT_TIME they need no prefix. The
prefix and the detach key are configured with ``--detach-key`` or
``$PHUX_DETACH_KEY`` as ``C-a`` (prefix, then ``d``), ``C-a x`` (prefix, then
``x``), ``^A``, or ``none`` (no prefix: every byte goes to the program).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

DEFAULT_DETACH_KEY = "C-b d"

_CONTROL_NAMES = {"@": 0, "space": 0, "[": 27, "\\": 28, "]": 29, "^": 30, "_": 31, "?": 127}


class DetachKeyError(ValueError):
    pass


def _control(name: str, spec: str) -> int:
    text = name.lower()
    if text in _CONTROL_NAMES:
        return _CONTROL_NAMES[text]
    if len(text) == 1 and "a" <= text <= "z":
        return ord(text) - ord("a") + 1
    raise DetachKeyError(f"bad detach key {spec!r}: C- takes a letter or one of @ [ \\ ] ^ _ ?")


def _key(word: str, spec: str) -> int:
    if word.startswith(("C-", "c-")) and len(word) > 2:
        return _control(word[2:], spec)
    if word.startswith("^") and len(word) == 2:
        return _control(word[1:], spec)
    if len(word) == 1 and 0x20 < ord(word) < 0x7F:
        return ord(word)
    raise DetachKeyError(
        f"bad detach key {spec!r}: use C-x or ^X for the prefix, then one printable key"
    )


@dataclass(frozen=True)
class DetachKey:
    prefix: int | None  # None: detaching by key is disabled
    key: int = ord("d")

    @property
    def label(self) -> str:
        if self.prefix is None:
            return "none"
        if self.prefix == 0:
            p = "C-@"
        elif self.prefix < 27:
            p = "C-" + chr(self.prefix + ord("a") - 1)
        else:
            p = "C-" + {27: "[", 28: "\\", 29: "]", 30: "^", 31: "_", 127: "?"}[self.prefix]
        k = self.key
        if k < 32 or k == 127:
            return f"{p} {DetachKey(k).label.split()[0]}"
        return f"{p} {chr(k)}"


def parse_detach_key(spec: str | None) -> DetachKey:
    text = (DEFAULT_DETACH_KEY if spec is None or not spec.strip() else spec).strip()
    if text.lower() == "none":
        return DetachKey(None)
    words = text.split()
    if len(words) > 2:
        raise DetachKeyError(f"bad detach key {spec!r}: a prefix and at most one key")
    prefix = _key(words[0], text)
    if not (prefix < 32 or prefix == 127):
        raise DetachKeyError(f"bad detach key {spec!r}: the prefix must be a control key")
    key = _key(words[1], text) if len(words) == 2 else ord("d")
    return DetachKey(prefix, key)


# ---------------------------------------------------------------- the prefix table

PREFIX_TABLE: dict[bytes, str] = {
    b"c": "new-window",
    b"n": "next-window",
    b"p": "previous-window",
    b"%": "split-h",
    b'"': "split-v",
    b"o": "next-pane",
    b"z": "zoom",
    b"x": "kill-pane",
    b",": "rename-window",
    b"w": "tree",
    b"?": "help",
    b"[": "copy-mode",
    b"\x1b[A": "pane-up",
    b"\x1b[B": "pane-down",
    b"\x1b[C": "pane-right",
    b"\x1b[D": "pane-left",
    b"\x1bOA": "pane-up",
    b"\x1bOB": "pane-down",
    b"\x1bOC": "pane-right",
    b"\x1bOD": "pane-left",
    **{str(i).encode(): f"select-window-{i}" for i in range(10)},
    # C-arrow resizes the pane by a cell, M-arrow by five (xterm's modified arrows:
    # CSI 1 ; 5 X is Ctrl, CSI 1 ; 3 X is Alt); M-1 .. M-5 the preset layouts.
    **{
        f"\x1b[1;{mod}{final}".encode(): f"resize-{way}-{cells}"
        for mod, cells in ((5, 1), (3, 5))
        for final, way in (("A", "up"), ("B", "down"), ("C", "right"), ("D", "left"))
    },
    **{f"\x1b{i}".encode(): f"layout-{i}" for i in range(1, 6)},
}
"""tmux's default keys after the prefix (the detach key, ``d`` unless configured,
is added by ``KeyReader``): what ``phux attach`` does with them."""

REPEATABLE = ("pane-", "resize-")
"""Commands whose key may be pressed again without the prefix within REPEAT_TIME
(tmux binds the arrows and the resize keys with ``-r``)."""
REPEAT_TIME = 0.5
"""tmux's ``repeat-time``: 500 ms."""

HELP: list[tuple[str, str]] = [
    ("d", "detach (the session keeps running)"),
    ("c", "new window"),
    ("n / p", "next / previous window"),
    ("0-9", "select window by index"),
    ("%", "split the pane left/right"),
    ('"', "split the pane top/bottom"),
    ("o", "next pane"),
    ("arrows", "select the pane in that direction (repeats)"),
    ("C-arrows", "resize the pane by 1 cell (repeats)"),
    ("M-arrows", "resize the pane by 5 cells (repeats)"),
    ("", "(repeats: again within 0.5 s needs no prefix)"),
    ("M-1 .. M-5", "even-horizontal/-vertical, main-horizontal/-vertical, tiled"),
    ("z", "zoom the active pane (again: unzoom)"),
    ("x", "kill the active pane (asks y/n)"),
    (",", "rename the window"),
    ("w", "choose a session, window or pane (Enter)"),
    ("[", "copy mode: scroll the pane's history (q leaves)"),
    ("?", "this list"),
    ("prefix prefix", "send the prefix key itself"),
]
"""The key list ``?`` shows (the prefix's own label is put before each)."""


@dataclass(frozen=True)
class Command:
    """A key bound after the prefix (``name`` from PREFIX_TABLE, or ``detach``), or a
    mouse report (``mouse``: button, column, row from 0, pressed)."""

    name: str
    mouse: tuple[int, int, int, bool] | None = None


_MOUSE_START = b"\x1b[<"


class KeyReader:
    """Keyboard bytes -> bytes for the active pane and Commands, in order.

    The prefix followed by a key of the table is that command; the prefix twice
    sends one prefix; the prefix followed by anything else sends both (as the
    detach key always did). ``mouse``: SGR mouse reports (``ESC [ < b ; x ; y M``,
    which the multiplexer turns on) become Commands instead of input.
    """

    def __init__(self, key: DetachKey, *, mouse: bool = False) -> None:
        self.key = key
        self.mouse = mouse
        self.table = dict(PREFIX_TABLE)
        if key.prefix is not None:
            self.table[bytes([key.key])] = "detach"
        self.held = b""  # an incomplete prefix sequence or mouse report
        self.repeat_until = 0.0
        """Until then a repeatable key (REPEATABLE) needs no prefix: tmux's ``bind -r``."""

    def feed(self, data: bytes, now: float | None = None) -> list[bytes | Command]:
        """``now``: the time.monotonic() the keys arrived at (for repeated keys)."""
        if now is None:
            now = time.monotonic()
        data = self.held + data
        self.held = b""
        out: list[bytes | Command] = []
        plain = bytearray()
        prefix = self.key.prefix
        i = 0
        n = len(data)
        while i < n:
            b = data[i]
            if self.repeat_until:
                if now >= self.repeat_until or b != 0x1B:
                    self.repeat_until = 0.0  # any other key ends the repeat, as in tmux
                else:
                    end = _escape_end(data, i)
                    if end is None:
                        self.held = data[i:]
                        break
                    name = self.table.get(bytes(data[i:end]))
                    if name is not None and name.startswith(REPEATABLE):
                        _flush(plain, out)
                        out.append(Command(name))
                        self.repeat_until = now + REPEAT_TIME
                        i = end
                        continue
                    self.repeat_until = 0.0
            if prefix is not None and b == prefix:
                if i + 1 >= n:
                    self.held = data[i:]
                    break
                nxt = data[i + 1]
                if nxt == prefix:
                    plain.append(prefix)
                    i += 2
                    continue
                if nxt == 0x1B:
                    end = _escape_end(data, i + 1)
                    if end is None:
                        self.held = data[i:]  # a key's sequence cut by the read
                        break
                    name = self.table.get(bytes(data[i + 1 : end]))
                    if name is not None:
                        _flush(plain, out)
                        out.append(Command(name))
                        if name.startswith(REPEATABLE):
                            self.repeat_until = now + REPEAT_TIME
                        i = end
                        continue
                name = self.table.get(bytes([nxt]))
                if name is not None:
                    _flush(plain, out)
                    out.append(Command(name))
                    i += 2
                    continue
                plain += data[i : i + 2]
                i += 2
                continue
            if self.mouse and b == 0x1B and data.startswith(_MOUSE_START, i):
                end = i + 3
                while end < n and data[end] in b"0123456789;":
                    end += 1
                if end >= n:
                    if n - i < 32:
                        self.held = data[i:]
                        break
                    plain += data[i:]
                    break
                report = _mouse(data[i + 3 : end], data[end])
                if report is not None:
                    _flush(plain, out)
                    out.append(Command("mouse", report))
                    i = end + 1
                    continue
            plain.append(b)
            i += 1
        _flush(plain, out)
        return out


def _escape_end(data: bytes, at: int) -> int | None:
    """Where the key sequence starting with the ESC at ``at`` ends: ``ESC [`` params
    final (CSI), ``ESC O`` x (SS3), or ``ESC`` x (Alt-x); None while it is cut short
    by the read (a CSI longer than 16 bytes is taken as it is)."""
    n = len(data)
    if at + 1 >= n:
        return None
    second = data[at + 1]
    if second == ord("O"):
        return at + 3 if at + 2 < n else None
    if second != ord("["):
        return at + 2
    end = at + 2
    while end < n and end - at < 16:
        if 0x40 <= data[end] <= 0x7E:
            return end + 1
        end += 1
    return end if end - at >= 16 else None


def _flush(plain: bytearray, out: list[bytes | Command]) -> None:
    if plain:
        out.append(bytes(plain))
        plain.clear()


def _mouse(params: bytes, final: int) -> tuple[int, int, int, bool] | None:
    if final not in (ord("M"), ord("m")):
        return None
    parts = params.split(b";")
    if len(parts) != 3 or not all(parts):
        return None
    button, x, y = (int(p) for p in parts)
    return button, x - 1, y - 1, final == ord("M")

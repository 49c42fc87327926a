"""The detach key: a prefix (default ``C-b``) followed by a key (default ``d``).

``C-b d`` detaches; ``C-b C-b`` sends one ``C-b`` to the program; ``C-b``
followed by anything else sends both bytes. The key is configured with
``--detach-key`` or ``$PHUX_DETACH_KEY`` as ``C-a`` (prefix, then ``d``),
``C-a x`` (prefix, then ``x``), ``^A``, or ``none`` (never detach).
"""

from __future__ import annotations

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


class InputSplitter:
    """Feed keyboard bytes; get back what to send and whether to detach.

    ``commands``: keys that, after the prefix, are commands for attach (``[``,
    copy mode): ``feed`` stops there and ``take_command`` gives the key and the
    bytes typed after it."""

    def __init__(self, key: DetachKey, commands: frozenset[int] = frozenset()) -> None:
        self.key = key
        self.commands = frozenset(c for c in commands if c not in (key.key, key.prefix))
        self.pending = False  # the prefix was the last byte seen
        self.command: tuple[int, bytes] | None = None

    def take_command(self) -> tuple[int, bytes] | None:
        """The command key the last ``feed`` stopped at, and the bytes after it."""
        command, self.command = self.command, None
        return command

    def feed(self, data: bytes) -> tuple[bytes, bool]:
        """(bytes for the program, detach?). Bytes after a detach are dropped."""
        prefix = self.key.prefix
        if prefix is None:
            return data, False
        out = bytearray()
        i = 0
        n = len(data)
        if self.pending and n:
            self.pending = False
            i = 1
            b = data[0]
            if b == self.key.key:
                return b"", True
            if b in self.commands:
                self.command = (b, bytes(data[1:]))
                return b"", False
            if b == prefix:
                out.append(prefix)
            else:
                out.append(prefix)
                out.append(b)
        while i < n:
            j = data.find(prefix, i)
            if j < 0:
                out += data[i:]
                break
            out += data[i:j]
            if j + 1 >= n:
                self.pending = True
                break
            b = data[j + 1]
            if b == self.key.key:
                return bytes(out), True
            if b in self.commands:
                self.command = (b, bytes(data[j + 2 :]))
                return bytes(out), False
            out.append(prefix)
            if b != prefix:
                out.append(b)
            i = j + 2
        return bytes(out), False

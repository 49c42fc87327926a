"""Signed OSC 133 marks: which marks a client may act on.

Anything a program prints reaches the engine, so a mark anyone can print (a
file holding ``ESC]133;D;0 BEL``, a terminal log, a web page) would forge a
command's result. phux's shell integration therefore ends every mark it
prints with ``phux_k=<key>``, the pane's key: a secret the server gives the
shell when it starts it and publishes to clients as the terminal's
``phux.shell_key`` metadata (spec/shell-integration.md, "Signed marks"). A
client acts only on marks that carry its pane's key; one that knows no key
for a pane (``""``) acts on none.

A leaf module (ARCHITECTURE.md): the engine, the server (which publishes the
key, and never imports the engine on its loop) and the raw-byte scanners of
the one-shot verbs all use it.
"""

from __future__ import annotations

KEY_PARAM = "phux_k="
KEY_METADATA = "phux.shell_key"
"""The terminal metadata key under which the server publishes a pane's key."""
SHELL_METADATA = "phux.shell"
"""The terminal metadata key naming the shell the server integrated (bash, zsh, fish, sh)."""


def unsigned(args: str, key: str | None) -> str | None:
    """A mark's parameters (after its kind) without its signature, or None when it
    is not signed with ``key``. ``key`` None: every mark is taken as it is (an
    engine used on its own); ``""``: no mark is."""
    if key is None:
        return args
    if not key:
        return None
    head, sep, last = args.rpartition(";")
    if last != KEY_PARAM + key:
        return None
    return head if sep else ""


def signature(key: str) -> bytes:
    """How a mark signed with ``key`` ends, before its terminator (raw-byte scans)."""
    return (";" + KEY_PARAM + key).encode()


def pane_key(metadata: object) -> str:
    """The key a pane's listing publishes (``""`` when none): ``metadata`` is the
    terminal's metadata mapping (str to bytes)."""
    return _text(metadata, KEY_METADATA)


def pane_shell(metadata: object) -> str:
    """The shell the server integrated in a pane (``""``: none), from its metadata."""
    return _text(metadata, SHELL_METADATA)


def _text(metadata: object, name: str) -> str:
    get = getattr(metadata, "get", None)
    value = get(name) if get is not None else None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("ascii", "replace")
    return ""

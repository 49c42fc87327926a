"""Turning client results into text: the boxed screen view, watch lines, JSON, errors.

Pure functions returning strings (plus two writers that turn a closed stdout
into :class:`StdoutClosed`), so they are easy to test and cheap to import.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Protocol

ERROR_SCHEMA_VERSION = 1


class StdoutClosed(BrokenPipeError):
    """The reader of stdout went away; the verb ends quietly (click exits 1 on EPIPE)."""

    def __init__(self) -> None:
        super().__init__(errno.EPIPE, "stdout closed")


# ---------------------------------------------------------------- writing


def write_out(text: str, *, flush: bool = False) -> None:
    """Write to stdout; a closed pipe becomes :class:`StdoutClosed`."""
    try:
        sys.stdout.write(text)
        if flush:
            sys.stdout.flush()
    except BrokenPipeError:
        raise StdoutClosed from None


def write_err(text: str) -> None:
    """Write one diagnostic to stderr; a closed stderr is ignored."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


# ---------------------------------------------------------------- JSON


def to_json(value: Any) -> str:
    """One compact JSON document (a msgspec Struct or plain data), no newline."""
    if isinstance(value, dict | list | str | int | float | bool) or value is None:
        import json  # pyte imports it too; send-keys and run print no JSON without --json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    import msgspec

    return msgspec.json.encode(value).decode("utf-8")


def screen_json(screen: Mapping[str, Any]) -> str:
    """ScreenState JSON from its plain data, the bytes ``msgspec.json.encode`` writes
    for the Struct (a test holds the two to it).

    Without cells the stdlib's encoder does it, saving the ~20 ms msgspec's import
    costs a one-shot ``phux snapshot``; with cells msgspec does, as it encodes
    thousands of style dicts about ten times faster.
    """
    if "cells" not in screen:
        return to_json(screen)
    import msgspec

    return msgspec.json.encode(screen).decode("utf-8")


# ---------------------------------------------------------------- errors


def error_document(code: str, message: str, exit_code: int, remedy: str) -> dict[str, Any]:
    """The ErrorReport shape, keys in the contract's order."""
    return {
        "error": {"code": code, "message": message},
        "exit_code": exit_code,
        "remedy": remedy,
        "schema_version": ERROR_SCHEMA_VERSION,
    }


def error_line(
    verb: str, code: str, message: str, exit_code: int, remedy: str, *, as_json: bool
) -> str:
    """The one stderr line of a failed verb: JSON under --json, else readable."""
    if as_json:
        return to_json(error_document(code, message, exit_code, remedy)) + "\n"
    prefix = f"phux {verb}" if verb else "phux"
    text = f"{prefix}: {_one_line(message)}"
    if remedy:
        text += f" ({_one_line(remedy)})"
    return text + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- boxed view


def char_width(ch: str) -> int:
    """Columns a character occupies on a terminal (0 for combining marks, 2 for wide)."""
    if ch < "\u0300":  # fast path: ASCII and Latin
        return 1 if ch >= " " else 0
    import unicodedata  # only the boxed view of a non-Latin screen needs it

    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    if text.isascii():
        return sum(1 for ch in text if ch >= " ")
    return sum(char_width(ch) for ch in text)


def _joiner(ch: str) -> bool:
    """Invisible format characters that only join emoji sequences: ZWNJ, ZWJ and the
    tag characters of flag sequences. Other format characters (bidi overrides) could
    reorder the box's borders and stay replaced."""
    return ch in "\u200c\u200d" or "\U000e0020" <= ch <= "\U000e007f"


def _sanitize(text: str) -> str:
    """Control characters would move the cursor of whoever reads the view."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " or _joiner(ch) else "\ufffd" for ch in text)


def _cut(text: str, width: int) -> tuple[str, int]:
    """The longest prefix of ``text`` within ``width`` columns, and its width."""
    text = _sanitize(text)
    used = 0
    out: list[str] = []
    for ch in text:
        w = char_width(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out), used


def _fit(text: str, width: int) -> str:
    """``text`` cut or padded to exactly ``width`` columns (never half a wide glyph)."""
    cut, used = _cut(text, width)
    return cut + " " * (width - used)


def _rule(left: str, label: str, right: str, width: int) -> str:
    """A horizontal border of ``width`` inner columns carrying ``label``."""
    body, used = _cut(f"─ {label} " if label else "", width)
    return left + body + "─" * (width - used) + right


def box_screen(screen: Mapping[str, Any]) -> str:
    """The text view of a ScreenState's plain data (``Terminal.project_data``): the
    viewport framed, scrollback above it.

    The header names the pane, the size and the title; the footer gives the
    cursor (1-based, as a human reads it). Wide glyphs keep the frame aligned.
    """
    cols, rows = screen["cols"], screen["rows"]
    width = max(cols, 1)
    head = f"@{screen['pane']} {cols}x{rows}"
    if screen["title"]:
        head += f" {screen['title']}"
    lines = [_rule("┌", head, "┐", width)]
    scrollback = screen["scrollback"]
    if scrollback:
        for row in scrollback:
            lines.append("│" + _fit(row, width) + "│")
        lines.append(_rule("├", f"scrollback {len(scrollback)}", "┤", width))
    cursor = screen["cursor"]
    for row in screen["lines"]:
        lines.append("│" + _fit(row, width) + "│")
    for _ in range(len(screen["lines"]), rows):
        lines.append("│" + " " * width + "│")
    if cursor is None:
        foot = "cursor off-screen"
    else:
        foot = f"cursor {cursor['y'] + 1},{cursor['x'] + 1}"
        if not cursor["visible"]:
            foot += " hidden"
    if "cells" in screen:
        foot += f" · {len(screen['cells'])} styled cells"
    lines.append(_rule("└", foot, "┘", width))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- ls


if TYPE_CHECKING:

    class _SessionRow(Protocol):
        @property
        def name(self) -> str: ...
        @property
        def window_count(self) -> int: ...
        @property
        def attached_client_count(self) -> int: ...
        @property
        def exited(self) -> bool: ...


def session_lines(sessions: Iterable[_SessionRow]) -> str:
    """tmux-like listing: ``name: N windows (attached)``, or ``(exited)`` for a session
    whose panes all exited and that the server still keeps."""
    out = []
    for s in sessions:
        plural = "window" if s.window_count == 1 else "windows"
        suffix = " (exited)" if s.exited else " (attached)" if s.attached_client_count > 0 else ""
        out.append(f"{s.name}: {s.window_count} {plural}{suffix}\n")
    return "".join(out)


# ---------------------------------------------------------------- watch


def _field_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # Keep one event per line and the columns tab-separated.
        if value.isprintable():
            return value
        import json

        return json.dumps(value, ensure_ascii=False)[1:-1]
    return str(value)


def watch_line(event: Mapping[str, Any]) -> str:
    """The human form of one event: ``event<TAB>@N[<TAB>key=value...]``."""
    name = event.get("event", "?")
    terminal = event.get("terminal", "-")
    parts = [str(name), str(terminal)]
    for key, value in event.items():
        if key in ("event", "terminal"):
            continue
        parts.append(f"{key}={_field_text(value)}")
    return "\t".join(parts) + "\n"

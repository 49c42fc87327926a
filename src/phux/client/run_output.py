"""What ``run`` returns as output: the command's bytes rendered as a terminal shows
them (plain text without an engine when it is that simple), its logical lines
including all that scrolled into history, bounded by :data:`RUN_HISTORY_ROWS` rows."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.engine import Terminal


# Rows of rendered output kept in memory at most (the "history limit" of run).
RUN_HISTORY_ROWS = 5_000_000


# Bytes of output kept at most before the oldest are dropped (marks truncated).
RUN_CAPTURE_BYTES = 256 * 1024 * 1024


_ENGINE_HISTORY = 4_000


_FEED_SLICE = 2_048


def _join_logical(rows: list[str], wrapped: list[bool]) -> list[str]:
    out: list[str] = []
    for text, cont in zip(rows, wrapped, strict=True):
        if cont and out:
            out[-1] += text
        else:
            out.append(text)
    return [line.rstrip(" ") for line in out]


# Plain output up to this size is rendered without the engine (see _render_plain).
_PLAIN_LIMIT = 256 * 1024


_PLAIN_ROW = re.compile(rb"[\x20-\x7e]*")


def _render_plain(data: bytes, cols: int) -> str | None:
    """The rendering of printable-ASCII rows separated by CR LF, each narrower than the
    terminal, without the engine (and without importing it); None for anything else.

    Such bytes draw each row at the left margin and never wrap, so the engine would
    produce exactly these rows, right-trimmed, minus an empty last row the cursor
    sits at the start of (``render_output`` keeps rows up to the cursor's).
    """
    if len(data) > _PLAIN_LIMIT:
        return None
    pieces = data.split(b"\r\n")
    fullmatch = _PLAIN_ROW.fullmatch
    for piece in pieces:
        if len(piece) >= cols or fullmatch(piece) is None:
            return None
    if not pieces[-1]:
        pieces.pop()
    return "\n".join(piece.decode("ascii").rstrip(" ") for piece in pieces)


def render_output(
    data: bytes,
    cols: int,
    rows: int,
    resizes: list[tuple[int, int, int]] | None = None,
) -> tuple[str, bool]:
    """Replay captured bytes into a fresh engine; return (logical text, rows were dropped)."""
    if not resizes:
        plain = _render_plain(data, max(cols, 1))
        if plain is not None:
            return plain, False
    return _render_engine(data, cols, rows, resizes)


def _render_engine(
    data: bytes,
    cols: int,
    rows: int,
    resizes: list[tuple[int, int, int]] | None = None,
) -> tuple[str, bool]:
    from phux.engine import Terminal

    engine = Terminal(max(cols, 1), max(rows, 1), history=_ENGINE_HISTORY)
    all_rows: list[str] = []
    all_wrapped: list[bool] = []
    dropped = False
    points = sorted(resizes or [])
    pos = 0
    bounds = [o for o, _, _ in points] + [len(data)]
    clears = [m.start() for m in _CLEAR.finditer(data)]
    for index, stop in enumerate(bounds):
        while pos < stop:
            end = min(stop, pos + _FEED_SLICE)
            if clears and clears[0] < end:
                end = max(clears.pop(0), pos)
                # The screen is about to be erased (`clear`): what it shows now is
                # output too, kept as if it had scrolled off.
                engine.feed(data[pos:end])
                pos = end
                _keep_screen(engine, all_rows, all_wrapped)
                continue
            engine.feed(data[pos:end])
            pos = end
            if engine.history_size >= _ENGINE_HISTORY // 2:
                h_rows, h_wrapped = engine.drain_history()
                all_rows += h_rows
                all_wrapped += h_wrapped
                if len(all_rows) > RUN_HISTORY_ROWS:
                    cut = len(all_rows) - RUN_HISTORY_ROWS
                    del all_rows[:cut]
                    del all_wrapped[:cut]
                    dropped = True
        if index < len(points):
            _, new_cols, new_rows = points[index]
            engine.resize(max(new_cols, 1), max(new_rows, 1))
    _keep_screen(engine, all_rows, all_wrapped)
    if len(all_rows) > RUN_HISTORY_ROWS:
        cut = len(all_rows) - RUN_HISTORY_ROWS
        del all_rows[:cut]
        del all_wrapped[:cut]
        dropped = True
    lines = _join_logical(all_rows, all_wrapped)
    return "\n".join(lines), dropped


_CLEAR = re.compile(rb"\x1b\[[23]J|\x1bc")
"""Erase the whole display (ED 2, ED 3: `clear`) or reset the terminal (RIS)."""


def _keep_screen(engine: Terminal, all_rows: list[str], all_wrapped: list[bool]) -> None:
    """Append the engine's history, then its screen's rows down to the last one written
    (or the cursor's, when it is past the row's start)."""
    h_rows, h_wrapped = engine.drain_history()
    all_rows += h_rows
    all_wrapped += h_wrapped
    state = engine.project_data()
    screen_rows = [engine.screen.row_text(y) for y in range(engine.rows)]
    wrapped_set = set(state["wrapped"])
    last = -1
    for y, text in enumerate(screen_rows):
        if text.strip():
            last = y
    cursor = engine.screen.cursor
    last = max(last, cursor.y if cursor.x > 0 else cursor.y - 1)
    all_rows += screen_rows[: last + 1]
    all_wrapped += [y in wrapped_set for y in range(last + 1)]

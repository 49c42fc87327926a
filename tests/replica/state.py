"""The engine state a checkpoint must carry, as comparable plain data."""

from __future__ import annotations

from typing import Any

from pyte import modes as mo

from phux.engine import Terminal
from phux.engine._cells import ALT_SCREEN_MODES, BLANK, SYNCHRONIZED, Line
from phux.engine._widths import char_width
from phux.engine.checkpoint import plain

_ALT = {m << 5 for m in ALT_SCREEN_MODES}


def _row(line: Line | None, cols: int, pad_ok: bool = False) -> tuple[Any, ...]:
    if not line:
        return tuple(BLANK for _ in range(cols))
    cells = []
    for x in range(cols):
        cell = line.get(x, BLANK)
        if cell.data == "":
            left = line.get(x - 1) if x else None
            orphan = left is None or not left.data or char_width(left.data[0]) != 2
            if orphan and not (pad_ok and x == cols - 1):
                cell = BLANK  # a stub without its wide character: drawn as a blank
        elif char_width(cell.data[0]) == 2:
            right = line.get(x + 1)
            if x == cols - 1 or right is None or right.data != "":
                # Half a wide character (cut by a narrowing, or shifted apart by
                # ICH/DCH): a checkpoint draws it as the blank overwriting leaves.
                cell = cell._replace(data=" ")
        cells.append(cell)
    return tuple(cells)


def _rows(lines: list[Line | None], cols: int, first_wrap: bool) -> list[tuple[Any, ...]]:
    out = []
    for i, line in enumerate(lines):
        wrapped = bool(line is not None and line.wrapped) and (i > 0 or first_wrap)
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        first = nxt.get(0) if nxt is not None and nxt.wrapped else None
        # A pad (a wide character did not fit in the last column) survives when the
        # wide character that wrapped is there to recreate it.
        pad_ok = first is not None and bool(first.data) and char_width(first.data[0]) == 2
        out.append((_row(line, cols, pad_ok), wrapped))
    return out


def _frame_mode(t: Terminal) -> set[int]:
    return set() if t.frame_deadline is not None else {SYNCHRONIZED << 5}


def engine_state(t: Terminal) -> dict[str, Any]:
    s = t.screen
    cols, rows = s.columns, s.lines
    history = list(s.scrollback)
    main = s.main_buffer if s.alternate and s.main_buffer is not None else s.buffer
    viewport: list[Line | None] = [main.get(y) for y in range(rows)]
    main_rows = _rows([*history, *viewport], cols, first_wrap=False)
    state: dict[str, Any] = {
        "size": (cols, rows),
        "history": main_rows[: len(history)],
        "main": main_rows[len(history) :],
        "alternate": s.alternate,
        "cursor": (s.cursor.x, s.cursor.y, s.cursor.attrs[1:], s.cursor.hidden),
        # An open 2026 frame travels while it holds the screen; one past its bound or
        # dropped by a resize is left out (the live screen shows either way).
        "modes": sorted(s.mode - _ALT - {mo.DECSCNM} - _frame_mode(t)),
        "margins": s.margins,
        "tabstops": sorted(x for x in s.tabstops if x < cols),
        "charsets": (s.g0_charset, s.g1_charset, s.charset),
        "keypad": s.app_keypad,
        "title": (plain(s.title), plain(s.icon_name)),
        "cwd": s.cwd,
        "semantic": s.semantic,
        "hyperlink": plain(s.hyperlink) if s.hyperlink else s.hyperlink,
        "link": plain(s.link),
        "cursor_style": s.cursor_style,
        "kitty_keys": {alt: list(stack) for alt, stack in s.kitty_stacks.items()},
        "saved": {
            alt: (
                min(sp.cursor.x, cols - 1),
                sp.cursor.y,
                sp.cursor.attrs[1:14],
                sp.g0_charset,
                sp.g1_charset,
                sp.charset,
                sp.origin,
                sp.wrap,
            )
            for alt, sp in s.saved_cursors.items()
        },
    }
    state["shell"] = (t.shell_phase, t.pending_input)
    state["commands"] = [
        (
            r.command,
            r.cwd,
            r.exit_code,
            r.started_ms,
            r.finished_ms,
            r.running,
            *t.command_output(r),
        )
        for r in t.commands
    ]
    if s.alternate:
        state["alt"] = _rows([s.buffer.get(y) for y in range(rows)], cols, first_wrap=True)
    return state


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in a:
        if a[key] != b.get(key):
            va, vb = a[key], b.get(key)
            if isinstance(va, list) and isinstance(vb, list):
                if len(va) != len(vb):
                    out.append(f"{key}: {len(va)} rows vs {len(vb)}")
                for i, (x, y) in enumerate(zip(va, vb, strict=False)):
                    if x != y:
                        out.append(f"{key}[{i}]: {x!r}\n   vs {y!r}"[:3000])
                        break
            else:
                out.append(f"{key}: {_short(va)} vs {_short(vb)}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 400 else text[:200] + " ... " + text[-200:]

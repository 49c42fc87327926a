"""The text forms: boxed screen, ls lines, watch lines, error lines."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from phux.cli.render import (
    box_screen,
    display_width,
    error_line,
    session_lines,
    to_json,
    watch_line,
)
from phux.client.selectors import Session
from phux.engine.screen_state import Cursor, ScreenState


def screen(**overrides: object) -> dict[str, Any]:
    """The plain data ``phux snapshot`` renders, made from the Struct it stands for."""
    fields: dict[str, object] = {
        "schema_version": 4,
        "pane": 7,
        "cols": 12,
        "rows": 3,
        "cursor": Cursor(x=2, y=1, visible=True),
        "lines": ["$ echo hi", "hi"],
        "scrollback": [],
        "title": "",
        "wrapped": [],
        "alternate": False,
    }
    fields.update(overrides)
    data: dict[str, Any] = msgspec.to_builtins(ScreenState(**fields))  # type: ignore[arg-type]
    return data


def test_box_frames_the_viewport_and_pads_missing_rows() -> None:
    text = box_screen(screen())
    assert text.splitlines() == [
        "┌─ @7 12x3 ──┐",
        "│$ echo hi   │",
        "│hi          │",
        "│            │",
        "└─ cursor 2,3┘",
    ]


def test_box_shows_title_scrollback_and_hidden_cursor() -> None:
    text = box_screen(
        screen(cols=24, title="vim", scrollback=["old"], cursor=Cursor(x=0, y=0, visible=False))
    )
    rows = text.splitlines()
    assert rows[0] == "┌" + "─ @7 24x3 vim ".ljust(24, "─") + "┐"
    assert rows[1] == "│" + "old".ljust(24) + "│"
    assert rows[2] == "├" + "─ scrollback 1 ".ljust(24, "─") + "┤"
    assert rows[-1] == "└" + "─ cursor 1,1 hidden ".ljust(24, "─") + "┘"
    assert box_screen(screen(cursor=None)).splitlines()[-1].startswith("└─ cursor off")


def test_box_keeps_alignment_with_wide_glyphs_and_control_chars() -> None:
    text = box_screen(screen(lines=["日本語テキスト", "a\x1bb"]))
    rows = text.splitlines()
    widths = {display_width(row) for row in rows}
    assert widths == {14}, rows
    assert "\x1b" not in text


def test_session_lines() -> None:
    out = session_lines(
        [
            Session(name="a", window_count=1, attached_client_count=0, terminals=[1]),
            Session(name="b", window_count=3, attached_client_count=2, terminals=[2, 3, 4]),
        ]
    )
    assert out == "a: 1 window\nb: 3 windows (attached)\n"


def test_watch_line_is_tab_separated_and_one_line() -> None:
    line = watch_line({"event": "title_changed", "terminal": "@3", "title": "a\tb\nc"})
    assert line == "title_changed\t@3\ttitle=a\\tb\\nc\n"
    assert (
        watch_line({"event": "pane_closed", "terminal": "@3", "exit_status": 0, "signal": None})
        == "pane_closed\t@3\texit_status=0\tsignal=-\n"
    )


def test_error_line_json_and_text() -> None:
    doc = json.loads(error_line("ls", "no_server", "no server on /x", 1, "start one", as_json=True))
    assert doc == {
        "error": {"code": "no_server", "message": "no server on /x"},
        "exit_code": 1,
        "remedy": "start one",
        "schema_version": 1,
    }
    text = error_line("ls", "no_server", "no server\non /x", 1, "start one", as_json=False)
    assert text == "phux ls: no server on /x (start one)\n"


def test_to_json_is_compact_and_keeps_unicode() -> None:
    assert to_json({"a": "é"}) == '{"a":"é"}'
    doc = json.loads(to_json(screen()))
    assert doc["schema_version"] == 4 and "cells" not in doc and "styles" not in doc


def test_box_keeps_emoji_joiners_but_not_bidi_overrides() -> None:
    family = "\U0001f468\u200d\U0001f4bb"
    text = box_screen(screen(lines=[family, "a\u202eb"]))
    assert family in text and "\ufffd" in text.splitlines()[2]
    assert "\u202e" not in text
    assert {display_width(row) for row in text.splitlines()} == {14}

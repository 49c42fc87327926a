"""Behaviour of the engine where stock pyte is wrong or silent (issue 4's list)."""

from __future__ import annotations

import msgspec
import pytest

from phux.engine import (
    Bell,
    CommandFinished,
    CommandStarted,
    CwdChanged,
    PaletteColor,
    PromptStarted,
    RgbColor,
    ScreenState,
    Terminal,
    TitleChanged,
)


def term(data: bytes = b"", cols: int = 20, rows: int = 5, history: int = 100) -> Terminal:
    t = Terminal(cols, rows, history=history)
    t.feed(data)
    return t


def lines(t: Terminal) -> list[str]:
    return t.project().lines


def test_plain_text_and_newlines() -> None:
    t = term(b"hello\r\nworld")
    assert lines(t) == ["hello", "world", "", "", ""]
    state = t.project()
    assert state.cursor is not None
    assert (state.cursor.x, state.cursor.y) == (5, 1)


def test_any_chunking_of_utf8_and_escapes() -> None:
    data = "a\x1b[31mé中\x1b]0;tïtle\x07❤️ b\x1b[0m\x1b[2;3Hx".encode()
    whole = term(data).project(cells=True)
    for size in (1, 2, 3, 5):
        t = Terminal(20, 5, history=100)
        for i in range(0, len(data), size):
            t.feed(data[i : i + size])
        assert t.project(cells=True) == whole


def test_invalid_utf8_becomes_replacement_character() -> None:
    assert lines(term(b"a\xffb"))[0] == "a\ufffdb"


def test_zero_width_does_not_drop_the_rest_of_the_run() -> None:
    t = term('echo "❤️ done"'.encode())
    assert lines(t)[0] == 'echo "❤️ done"'


def test_control_characters_inside_text_do_not_drop_text() -> None:
    assert lines(term(b"ab\x00\x01cd\x7fe"))[0] == "abcde"


def test_private_sgr_is_consumed_not_raised() -> None:
    t = term(b"\x1b[?4mA\x1b[>4;2mB")
    assert lines(t)[0] == "AB"
    cells = t.project(cells=True, version=3).cells
    assert cells == []  # CSI > 4;2 m must not underline


def test_colon_sgr_truecolor_and_palette_index() -> None:
    t = term(b"\x1b[38:2::10:20:30mA\x1b[0;48;5;200mB\x1b[0;38:5:9mC\x1b[0;31mD\x1b[0;94mE")
    cells = {c.col: c.style for c in t.project(cells=True, version=3).cells or []}
    assert cells[0].fg == RgbColor(r=10, g=20, b=30)
    assert cells[1].bg == PaletteColor(index=200)
    assert cells[2].fg == PaletteColor(index=9)
    assert cells[3].fg == PaletteColor(index=1)
    assert cells[4].fg == PaletteColor(index=12)
    assert lines(t)[0] == "ABCDE"


def test_all_nine_sgr_flags() -> None:
    t = term(b"\x1b[1;2;3;4;5;7;8;9;53mX")
    (cell,) = t.project(cells=True, version=3).cells or []
    s = cell.style
    flags = (s.bold, s.faint, s.italic, s.underline, s.blink, s.inverse, s.invisible)
    assert all(flags) and s.strikethrough and s.overline
    t.feed(b"\x1b[22;23;24;25;27;28;29;55mY")
    assert [c.col for c in t.project(cells=True, version=3).cells or []] == [0]


def test_osc_dispatch_events_and_marks() -> None:
    t = term(
        b"\x1b]2;my title\x1b\\\x1b]7;file://host/tmp/a%20b\x07\x07"
        b"\x1b]133;A\x07$ \x1b]133;B\x07ls\x1b]133;C\x07\r\nout\r\n\x1b]133;D;2\x07"
        b"\x1b]52;c;aGVsbG8=\x07\x1b]8;;http://x\x07link\x1b]8;;\x07"
    )
    assert t.title == "my title"
    assert t.cwd == "/tmp/a b"
    assert t.bell_count == 1
    assert t.take_events() == [
        TitleChanged(title="my title"),
        CwdChanged(cwd="/tmp/a b"),
        Bell(),
        PromptStarted(),
        CommandStarted(command="ls"),
        CommandFinished(exit_code=2, command="ls"),
    ]
    assert t.take_events() == []
    state = t.project(cells=True, version=3)
    assert state.lines[:3] == ["$ ls", "out", "link"]
    marks = {(c.col, c.row): c.semantic for c in state.cells or []}
    assert marks == {(0, 0): "prompt", (1, 0): "prompt", (2, 0): "input", (3, 0): "input"}
    assert state.title == "my title"


def test_command_finished_without_code() -> None:
    t = term(b"\x1b]133;C\x07\x1b]133;D\x07\x1b]133;C\x07\x1b]133;D;aid=3\x07")
    assert [e for e in t.take_events() if isinstance(e, CommandFinished)] == [
        CommandFinished(exit_code=None),
        CommandFinished(exit_code=None),
    ]


def test_dcs_apc_pm_sos_are_swallowed() -> None:
    data = b"a\x1bP1$r0m\x1b\\b\x1b_Gi=1;AAAA\x1b\\c\x1b^pm\x1b\\d\x1bXsos\x1b\\e"
    assert lines(term(data))[0] == "abcde"
    t = Terminal(20, 5)
    for byte in data:
        t.feed(bytes([byte]))
    assert lines(t)[0] == "abcde"


def test_unterminated_osc_then_new_sequence() -> None:
    t = term(b"\x1b]0;abc\x1b[31mX")
    assert lines(t)[0] == "X"
    assert t.title == ""


def test_alternate_screen_1049() -> None:
    t = term(b"main1\r\nmain2", history=100)
    t.feed(b"\x1b[?1049h\x1b[H\x1b[2Jtui")
    assert t.alternate
    assert lines(t)[0] == "tui"
    for _ in range(10):
        t.feed(b"\r\nframe")
    t.feed(b"\x1b[?1049l")
    assert not t.alternate
    assert lines(t)[:2] == ["main1", "main2"]
    state = t.project()
    assert state.cursor is not None and (state.cursor.x, state.cursor.y) == (5, 1)
    assert t.project(scrollback=0).scrollback == []


@pytest.mark.parametrize("mode", [b"1047", b"47"])
def test_alternate_screen_other_modes(mode: bytes) -> None:
    t = term(b"main")
    t.feed(b"\x1b[?" + mode + b"h\r\nalt\x1b[?" + mode + b"l")
    assert lines(t)[:2] == ["main", ""]


def test_scrollback_only_from_full_screen_scrolls() -> None:
    t = term(b"\x1b[2;4r\x1b[4;1H" + b"x\n" * 10, rows=5)
    assert t.project(scrollback=0).scrollback == []
    t.feed(b"\x1b[r\x1b[5;1H" + b"\r\ny" * 3)
    assert len(t.project(scrollback=0).scrollback) == 3


def test_scrollback_tristate_and_logical_lines() -> None:
    t = term(b"".join(b"line%d\r\n" % i for i in range(12)), rows=5)
    assert t.project().scrollback == []
    assert t.project(scrollback=0).scrollback == [f"line{i}" for i in range(8)]
    assert t.project(scrollback=2).scrollback == ["line6", "line7"]
    assert t.logical_lines(0)[:12] == [f"line{i}" for i in range(12)]


def test_soft_wrap_is_reported_and_joined() -> None:
    t = term(b"A" * 25 + b"\r\nB", cols=10)
    state = t.project()
    assert state.lines[:4] == ["A" * 10, "A" * 10, "A" * 5, "B"]
    assert state.wrapped == [1, 2]
    assert t.logical_lines()[:2] == ["A" * 25, "B"]


def test_wrapped_rows_keep_joining_through_scrollback() -> None:
    t = term(b"Z" * 45, cols=10, rows=2)
    assert t.logical_lines(0) == ["Z" * 45, ""] or t.logical_lines(0) == ["Z" * 45]


def test_wide_char_at_last_column_wraps() -> None:
    t = term("abcdefghi中".encode(), cols=10)
    assert lines(t)[:2] == ["abcdefghi", "中"]


def test_overwriting_half_a_wide_char_blanks_the_other_half() -> None:
    t = term("中文\x1b[1;2Hx".encode(), cols=10)
    assert lines(t)[0] == " x文"


def test_rep_su_sd_cbt_hpa_scosc() -> None:
    assert lines(term(b"ab\x1b[3b"))[0] == "abbbb"
    assert lines(term(b"ab\x1b[31m\x1b[3b\x1b[b"))[0] == "ab"  # only right after text
    cut = Terminal(20, 5)
    for piece in (b"ab\x1b[", b"2", b"b"):
        cut.feed(piece)
    assert lines(cut)[0] == "abbb"
    t = term(b"1\r\n2\r\n3\x1b[S")
    assert lines(t)[:3] == ["2", "3", ""]
    t.feed(b"\x1b[2T")
    assert lines(t)[:4] == ["", "", "2", "3"]
    assert lines(term(b"\tx\x1b[2Zy"))[0] == "y       x"
    assert lines(term(b"abc\x1b[6`z"))[0] == "abc  z"
    assert lines(term(b"ab\x1b[sXY\x1b[uZ"))[0] == "abZY"


def test_decsc_decrc_restore_twice() -> None:
    t = term(b"\x1b[2;3H\x1b7\x1b[5;5H\x1b8a\x1b[1;1H\x1b8b")
    assert lines(t)[1] == "  b"


def test_dec_special_graphics_in_utf8() -> None:
    assert lines(term(b"\x1b(0lqqk\x1b(Bx"))[0] == "┌──┐x"
    assert lines(term(b"\x1b)0a\x0eq\x0fq"))[0] == "a─q"


def test_delete_lines_leaves_no_stale_line() -> None:
    t = term(b"1\r\n2\r\n3\x1b[1;1H\x1b[3M", rows=5)
    assert lines(t) == ["", "", "", "", ""]


def test_modes_tracked() -> None:
    t = term(b"\x1b[?1h\x1b=\x1b[?2004h\x1b[?1002h\x1b[?25l\x1b[?7l")
    m = t.modes
    assert (m.app_cursor, m.app_keypad, m.bracketed_paste, m.mouse) == (True, True, True, True)
    assert not m.cursor_visible and not m.autowrap
    assert t.project().cursor is None
    t.feed(b"\x1b[?1l\x1b>\x1b[?2004l\x1b[?1002l\x1b[?25h\x1b[?7h")
    m = t.modes
    assert not (m.app_cursor or m.app_keypad or m.bracketed_paste or m.mouse)
    assert m.cursor_visible and m.autowrap


def test_decstr_soft_reset() -> None:
    t = term(b"\x1b[?25l\x1b[4h\x1b[31m\x1b[!pA")
    assert t.modes.cursor_visible and not t.modes.insert
    assert t.project(cells=True, version=3).cells == []


def test_replies_are_collected_not_written() -> None:
    t = term(b"ab\x1b[c\x1b[>c\x1b[5n\x1b[6n")
    assert t.take_replies() == b"\x1b[?1;2c\x1b[>1;10;0c\x1b[0n\x1b[1;3R"
    assert t.take_replies() == b""


def test_cursor_report_clamps_pending_wrap() -> None:
    t = term(b"x" * 10 + b"\x1b[6n", cols=10)
    assert t.take_replies() == b"\x1b[1;10R"


def test_generation_changes_on_feed_and_resize() -> None:
    t = term()
    g0 = t.generation
    t.feed(b"x")
    g1 = t.generation
    t.resize(30, 6)
    assert g0 < g1 < t.generation
    assert (t.cols, t.rows) == (30, 6)


def test_resize_shrink_pushes_rows_to_scrollback() -> None:
    t = term(b"1\r\n2\r\n3\r\n4\r\n5", rows=5)
    t.resize(20, 3)
    assert lines(t) == ["3", "4", "5"]
    assert t.project(scrollback=0).scrollback == ["1", "2"]


def test_resize_shrink_drops_blank_rows_below_cursor_first() -> None:
    t = term(b"1\r\n2", rows=5)
    t.resize(20, 3)
    assert lines(t) == ["1", "2", ""]


def test_screen_state_json_shape() -> None:
    t = term(b"\x1b[1mhi")
    raw = msgspec.json.decode(msgspec.json.encode(t.project()))
    assert list(raw) == [
        "schema_version",
        "pane",
        "cols",
        "rows",
        "cursor",
        "lines",
        "scrollback",
        "title",
        "wrapped",
        "alternate",
    ]
    assert raw["schema_version"] == 4
    assert raw["cursor"] == {"x": 2, "y": 0, "visible": True}
    with_cells = msgspec.json.decode(msgspec.json.encode(t.project(pane=7, cells=True, version=3)))
    assert with_cells["pane"] == 7
    assert with_cells["cells"][0] == {
        "col": 0,
        "row": 0,
        "style": {
            "bold": True,
            "faint": False,
            "italic": False,
            "underline": False,
            "blink": False,
            "inverse": False,
            "invisible": False,
            "strikethrough": False,
            "overline": False,
            "fg": {"kind": "default"},
            "bg": {"kind": "default"},
        },
    }
    assert msgspec.json.decode(msgspec.json.encode(t.project()), type=ScreenState) == t.project()


def test_erase_uses_background_colour_only() -> None:
    t = term(b"\x1b[1;44m\x1b[2J", cols=4, rows=2)
    cells = t.project(cells=True, version=3).cells or []
    assert len(cells) == 8
    assert all(c.style.bg == PaletteColor(index=4) and not c.style.bold for c in cells)


def test_ris_keeps_title_and_scrollback_but_resets_the_rest() -> None:
    t = term(b"\x1b]2;kept\x07" + b"x\r\n" * 8 + b"\x1b[?1049h\x1b[?25l\x1b[31m\x1bc")
    assert t.title == "kept"
    assert not t.alternate and t.modes.cursor_visible
    assert lines(t) == ["", "", "", "", ""]
    assert len(t.project(scrollback=0).scrollback) == 4


def test_pending_replies_and_events_are_bounded() -> None:
    t = term(b"\x07\x1b[5n" * 10_000)
    assert len(t.take_events()) <= 4096
    assert len(t.take_replies()) <= 4096 * len(b"\x1b[0n")
    assert t.bell_count == 10_000


def test_feed_accepts_bytearray_and_memoryview() -> None:
    t = term()
    t.feed(bytearray(b"ab"))
    t.feed(memoryview(b"cd"))
    assert lines(t)[0] == "abcd"


@pytest.mark.parametrize("every", [1, 2, 3, 7, 1000])
def test_scrollback_text_stays_aligned_when_history_overflows(every: int) -> None:
    t = Terminal(10, 2, history=5)
    for i in range(40):
        t.feed(b"r%d\r\n" % i)  # the screen shows r{i} and a blank row
        if i % every == 0 or i == 39:
            assert t.project(scrollback=0).scrollback == [f"r{j}" for j in range(i)][-5:]


def test_scrollback_text_heals_after_outside_changes() -> None:
    t = term(b"".join(b"x%d\r\n" % i for i in range(10)), rows=2)
    t.project(scrollback=0)
    t.screen.scrollback.clear()
    t.feed(b"y\r\n")
    assert t.project(scrollback=0).scrollback == ["x9"]


def test_drain_history() -> None:
    t = term(b"A" * 25 + b"\r\n" + b"".join(b"z%d\r\n" % i for i in range(6)), cols=10, rows=2)
    rows, wrapped = t.drain_history()
    assert [r.rstrip() for r in rows][:3] == ["A" * 10, "A" * 10, "A" * 5]
    assert wrapped[:3] == [False, True, True]
    assert t.project(scrollback=0).scrollback == []
    t.feed(b"w\r\n")
    assert t.project(scrollback=0).scrollback == ["z5"]


def test_display_never_raises_on_orphan_stubs() -> None:
    t = term("中文\x1b[1;2H\x1b[@".encode(), cols=6)  # ICH shifts a stub away from its glyph
    assert len(t.screen.display) == 5
    t.project(cells=True)


def test_truecolor_components_are_clamped() -> None:
    t = term(b"\x1b[38;2;300;0;255;48;2;1;2;3mA")
    (cell,) = t.project(cells=True, version=3).cells or []
    assert cell.style.fg == RgbColor(r=255, g=0, b=255)
    assert cell.style.bg == RgbColor(r=1, g=2, b=3)


def test_insert_characters_drop_what_falls_off_the_edge() -> None:
    t = term(b"abcdefghij\x1b[1;1H\x1b[3@", cols=10)
    assert lines(t)[0] == "   abcdefg"
    assert max(t.screen.buffer[0]) < 10
    t = term("abcdefgh中\x1b[1;1H\x1b[@".encode(), cols=10)
    assert lines(t)[0] == " abcdefgh"  # the wide glyph lost its right half


def test_named_tuples_are_what_typing_makes() -> None:
    # Cell and Modes come from a cheaper stand-in for typing.NamedTuple.
    import pickle
    import typing

    from phux.engine import Modes
    from phux.engine._cells import Cell, NamedTuple

    class Typing(typing.NamedTuple):
        """Doc."""

        x: int
        y: str = "y"

        def twice(self) -> int:
            return 2 * self.x

    class Cheap(NamedTuple):
        """Doc."""

        x: int
        y: str = "y"

        def twice(self) -> int:
            return 2 * self.x

    assert set(vars(Typing)) - {"__orig_bases__"} == set(vars(Cheap))
    assert Cheap.__bases__ == Typing.__bases__ == (tuple,)
    assert (Cheap._fields, Cheap._field_defaults) == (Typing._fields, Typing._field_defaults)
    assert (Cheap.__doc__, Cheap.__module__) == (Typing.__doc__, Typing.__module__)
    assert typing.get_type_hints(Cheap) == typing.get_type_hints(Typing) == {"x": int, "y": str}
    assert repr(Cheap(1)).replace("Cheap", "") == repr(Typing(1)).replace("Typing", "")
    assert Cheap(3)._replace(y="z") == (3, "z") and Cheap(3).twice() == 6
    for cls in (Cell, Modes):
        assert cls.__bases__ == (tuple,) and cls._fields == tuple(cls.__annotations__)
        assert cls.__module__.startswith("phux.engine.") and cls.__doc__
    assert Cell("a", bold=True).fg == "default" and Cell("a", bold=True)[3] is True
    assert pickle.loads(pickle.dumps(Cell("a"))) == Cell("a")
    assert typing.get_type_hints(Modes)["app_cursor"] is bool

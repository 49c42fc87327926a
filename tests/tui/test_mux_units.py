"""The multiplexer's pure parts: layout math, damage drawing, the key table, the status line."""

from __future__ import annotations

import pytest

from phux.tui import layout as lay
from phux.tui.compose import RESET, Canvas, Damage
from phux.tui.keys import Command, KeyReader, parse_detach_key
from phux.tui.layout import Rect, Split
from phux.tui.status import PaneFacts, StatusLine, WindowTab, segments

# ---------------------------------------------------------------- layout


@pytest.mark.parametrize("text", ["0", "h(0,1)", "v(0,h(1,2))", "h(3,v(1,2),0)"])
def test_layout_text_round_trips(text: str) -> None:
    node = lay.parse(text)
    assert node is not None
    assert lay.format_layout(node) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "h(0)",
        "h(0,0)",
        "x(0,1)",
        "h(0,1",
        "h(0,1))",
        "h(0,,1)",
        "0 ",
        "-1",
        "h(0,1)2",
        "9" * 10,
    ],
)
def test_a_malformed_layout_is_none(text: str) -> None:
    assert lay.parse(text) is None


def test_a_layout_too_long_is_malformed() -> None:
    text = "h(" + ",".join(str(i) for i in range(2000)) + ")"
    assert len(text) > lay.MAX_TEXT
    assert lay.parse(text) is None


def test_side_by_side_shares_the_width_less_one_border() -> None:
    node = lay.parse("h(0,1)")
    assert node is not None
    geo = lay.geometry(node, Rect(0, 0, 80, 23))
    assert geo == {0: Rect(0, 0, 40, 23), 1: Rect(41, 0, 39, 23)}
    assert lay.borders(node, Rect(0, 0, 80, 23)) == [("|", Rect(40, 0, 1, 23))]


def test_splitting_halves_the_pane() -> None:
    node: lay.Node = 0
    node = lay.split(node, 0, 1, "h")
    node = lay.split(node, 1, 2, "v")
    assert node == Split("h", (0, Split("v", (1, 2))))
    geo = lay.geometry(node, Rect(0, 0, 81, 21))
    assert geo[0] == Rect(0, 0, 40, 21)
    assert geo[1] == Rect(41, 0, 40, 10)
    assert geo[2] == Rect(41, 11, 40, 10)
    assert lay.remove(node, 1) == Split("h", (0, 2))
    assert lay.remove(lay.remove(node, 1) or 0, 2) == 0
    assert lay.remove(0, 0) is None


def test_reconcile_adds_new_panes_and_drops_gone_ones() -> None:
    area = Rect(0, 0, 100, 30)
    # New panes halve the largest pane along its longer side.
    node = lay.reconcile(None, [0, 1, 2], area)
    assert node == Split("h", (Split("v", (0, 2)), 1))
    node = lay.reconcile(node, [1, 2, 5], area)
    assert node is not None
    assert sorted(lay.panes(node)) == [1, 2, 5]
    assert lay.reconcile(node, [], area) is None


def test_neighbours_and_clicks() -> None:
    node = lay.parse("h(0,v(1,2))")
    assert node is not None
    geo = lay.geometry(node, Rect(0, 0, 81, 21))
    assert lay.neighbour(geo, 0, "right") == 1  # the most overlapping, then the top one
    assert lay.neighbour(geo, 2, "left") == 0
    assert lay.neighbour(geo, 1, "down") == 2
    assert lay.neighbour(geo, 2, "up") == 1
    assert lay.neighbour(geo, 0, "left") is None
    assert lay.pane_at(geo, 60, 15) == 2
    assert lay.pane_at(geo, 40, 5) is None  # the border
    assert lay.next_pane(lay.panes(node), 2) == 0


def test_a_tiny_window_never_gives_negative_sizes() -> None:
    node = lay.parse("h(0,1,2,3)")
    assert node is not None
    geo = lay.geometry(node, Rect(0, 0, 2, 1))
    assert all(r.w >= 0 and r.h >= 0 for r in geo.values())


# ---------------------------------------------------------------- damage


def test_damage_draws_only_what_changed() -> None:
    canvas = Canvas(10, 3)
    damage = Damage(10, 3)
    canvas.text(0, 0, "hello", RESET)
    first = damage.frame(canvas)
    assert "\x1b[2J" in first and "hello" in first
    assert damage.frame(canvas) == ""  # nothing changed: nothing written
    canvas.text(7, 2, "x", "\x1b[0;31m")
    second = damage.frame(canvas)
    assert "hello" not in second and "\x1b[2J" not in second
    assert "\x1b[3;8H\x1b[0;31mx" in second
    assert second.startswith("\x1b[?2026h") and second.endswith("\x1b[?2026l")


def test_damage_merges_near_changes_and_redraws_wide_glyphs_whole() -> None:
    canvas = Canvas(12, 1)
    damage = Damage(12, 1)
    damage.frame(canvas)
    canvas.text(0, 0, "a", RESET)
    canvas.text(2, 0, "b", RESET)
    out = damage.frame(canvas)
    assert out.count("\x1b[1;") == 1  # one cursor move for both
    canvas.text(5, 0, "界", RESET)
    out = damage.frame(canvas)
    assert "界" in out
    canvas.cells[0][6] = ("", "\x1b[0;1m")  # only the right half's style changed
    out = damage.frame(canvas)
    assert "\x1b[1;6H" in out and "界" in out
    damage.invalidate()
    assert "\x1b[2J" in damage.frame(canvas)


def test_canvas_text_clips_and_skips_unprintables() -> None:
    canvas = Canvas(5, 1)
    end = canvas.text(0, 0, "ab\x07界界", RESET, 5)
    assert end == 4
    assert [c[0] for c in canvas.cells[0]] == ["a", "b", "界", "", " "]


# ---------------------------------------------------------------- keys


def test_key_reader_turns_prefixed_keys_into_commands() -> None:
    reader = KeyReader(parse_detach_key(None))
    assert reader.feed(b"ls\x02%x") == [b"ls", Command("split-h"), b"x"]
    assert reader.feed(b"\x02\x02") == [b"\x02"]
    assert reader.feed(b"\x02X") == [b"\x02X"]  # not bound: both bytes go through
    assert reader.feed(b"\x02") == []  # the prefix alone waits for the next read
    assert reader.feed(b"d") == [Command("detach")]
    assert reader.feed(b"\x02\x1b[D") == [Command("pane-left")]
    assert reader.feed(b"\x02\x1b") == []  # an arrow cut by the read
    assert reader.feed(b"[A") == [Command("pane-up")]
    assert reader.feed(b"\x027") == [Command("select-window-7")]


def test_key_reader_detach_key_follows_the_configuration() -> None:
    reader = KeyReader(parse_detach_key("C-a q"))
    assert reader.feed(b"\x01q") == [Command("detach")]
    assert reader.feed(b"\x01c") == [Command("new-window")]
    assert reader.feed(b"\x02%") == [b"\x02%"]
    assert KeyReader(parse_detach_key("none")).feed(b"\x02d") == [b"\x02d"]


def test_key_reader_mouse_reports() -> None:
    reader = KeyReader(parse_detach_key(None), mouse=True)
    assert reader.feed(b"a\x1b[<0;12;3Mb") == [b"a", Command("mouse", (0, 11, 2, True)), b"b"]
    assert reader.feed(b"\x1b[<0;1") == []
    assert reader.feed(b";1m") == [Command("mouse", (0, 0, 0, False))]
    # Without mouse reporting on, the bytes are input like any other.
    assert KeyReader(parse_detach_key(None)).feed(b"\x1b[<0;1;1M") == [b"\x1b[<0;1;1M"]


# ---------------------------------------------------------------- status line


def _text(line: StatusLine, width: int) -> str:
    return "".join(t for t, _ in segments(line, width))


def test_status_line_fills_the_width_with_windows_and_the_pane_state() -> None:
    line = StatusLine(
        "work",
        [WindowTab(0, "bash", active=True), WindowTab(1, "logs", alert=True)],
        PaneFacts(program="make", state="running", running_s=12, last_exit=2, typed_by="agent"),
    )
    text = _text(line, 80)
    assert len(text) == 80
    assert text.startswith("[work] 0:bash* 1:logs! ")
    assert text.rstrip().endswith("make running 12s | last exit 2 | typed: agent")
    # Too narrow for the right part: the windows stay.
    assert _text(line, 30).startswith("[work] 0:bash*")
    assert len(_text(line, 30)) == 30
    exited = StatusLine("w", [], PaneFacts(state="exited", exit_code=1))
    assert "exited 1" in _text(exited, 40)
    asked = StatusLine("w", [], PaneFacts(), message="kill-pane @3? (y/n)")
    assert _text(asked, 30) == "kill-pane @3? (y/n)".ljust(30)


# ---------------------------------------------------------------- overlays


def test_the_tree_lists_sessions_windows_and_panes_with_the_person_selected() -> None:
    from phux.client.selectors import Pane
    from phux.tui.overlay import key_tokens, tree_overlay

    def pane(tid: int, session: str, window: int, index: int, alive: bool = True) -> Pane:
        return Pane(
            terminal=tid, alive=alive, cols=80, rows=24, pid=1, session=session,
            window=window, pane=index, window_name="logs" if window else None,
        )  # fmt: skip

    panes = [pane(1, "b", 0, 0), pane(2, "a", 0, 0), pane(3, "b", 1, 0), pane(4, "b", 1, 1)]
    panes.append(pane(5, "b", 2, 0, alive=False))  # exited: not listed
    tree = tree_overlay(panes, lambda p: f"state{p.terminal}", current=("b", 1, 4))
    assert tree.lines == [
        "a", "  0:", "    @2 0: state2",
        "b", "  0:", "    @1 0: state1", "  1:logs", "    @3 0: state3", "    @4 1: state4 *",
    ]  # fmt: skip
    assert tree.selected == 8 and tree.targets[8] == ("b", 1, 4)
    assert tree.preview_target() == 4
    tree.move(-2)  # the window line previews its first pane
    assert tree.targets[tree.selected] == ("b", 1, None) and tree.preview_target() == 3
    tree.move(-100)
    assert tree.selected == 0 and tree.preview_target() == 2
    assert key_tokens(b"\x1b[B\x1bOAjq\r") == [b"\x1b[B", b"\x1bOA", b"j", b"q", b"\r"]


def test_an_overlay_draws_its_list_and_a_preview_under_it() -> None:
    from phux.engine import Terminal
    from phux.tui.overlay import Overlay, draw, help_overlay
    from phux.tui.paint import Painter

    canvas = Canvas(30, 10)
    term = Terminal(30, 10)
    term.feed(b"preview-text")
    tree = Overlay("tree", ["a", "  0:", "    @1 0: bash"], [("a", None, None)] * 3, 2)
    draw(tree, canvas, Rect(0, 0, 30, 10), term, Painter())
    rows = ["".join(c[0] for c in row).rstrip() for row in canvas.cells]
    assert rows[:4] == ["  a", "    0:", "> " + "    @1 0: bash", "─" * 30]
    assert rows[4] == "preview-text"
    draw(help_overlay("C-b"), canvas, Rect(0, 0, 30, 10), None, Painter())
    assert "".join(c[0] for c in canvas.cells[0]).startswith("  keys, after the prefix C-b")


def test_sizes_in_the_layout_text_round_trip_and_place_panes() -> None:
    node = lay.parse("h(0:30,v(1:5,2:13):49)")
    assert node == Split("h", (0, Split("v", (1, 2), (5, 13))), (30, 49))
    assert lay.format_layout(node) == "h(0:30,v(1:5,2:13):49)"
    geo = lay.geometry(node, Rect(0, 0, 80, 19))
    assert geo[0] == Rect(0, 0, 30, 19) and geo[1] == Rect(31, 0, 49, 5)
    assert geo[2] == Rect(31, 6, 49, 13)
    # Another size of window: the same proportions, every cell used.
    small = lay.geometry(node, Rect(0, 0, 40, 10))
    assert small[0].w + 1 + small[1].w == 40 and small[0].w == 14  # 30 / 79 of 39
    for bad in ("h(0:30,1)", "h(0:0,1:5)", "h(0:3:4,1)", "3:4", "h(0,1):5"):
        assert lay.parse(bad) is None, bad


def test_resize_moves_the_nearest_border_as_tmux() -> None:
    area = Rect(0, 0, 80, 19)
    node = lay.parse("h(0,v(1,2))")
    assert node is not None
    grown = lay.resize(node, area, 0, "right", 5)  # the left pane's right border
    assert lay.format_layout(grown) == "h(0:45,v(1,2):34)"
    # The last pane of a split moves the border before it.
    assert lay.format_layout(lay.resize(node, area, 1, "left", 1)) == "h(0:39,v(1,2):40)"
    assert lay.format_layout(lay.resize(node, area, 2, "up", 1)) == "h(0,v(1:8,2:10))"
    # Never below one cell; nothing to move across the axis: the same layout.
    assert lay.geometry(lay.resize(node, area, 0, "left", 500), area)[0].w == 1
    assert lay.resize(node, area, 0, "up", 1) == node
    # Removing a sized pane gives its cells (and border) to its neighbour.
    three = lay.parse("h(0:20,1:30,2:28)")
    assert three is not None
    assert lay.remove(three, 1) == lay.parse("h(0:51,2:28)")


def test_preset_layouts() -> None:
    area = Rect(0, 0, 120, 40)
    order = [0, 1, 2, 3, 4]
    for name, text in (
        ("even-horizontal", "h(0,1,2,3,4)"),
        ("even-vertical", "v(0,1,2,3,4)"),
        ("main-horizontal", "v(0:24,h(1,2,3,4):15)"),
        ("main-vertical", "h(0:80,v(1,2,3,4):39)"),
        ("tiled", "v(h(0,1,2),h(3,4))"),
    ):
        assert lay.preset(name, order, area) == lay.parse(text), name
    assert lay.preset("tiled", [7], area) == 7


def test_prefix_then_modified_arrows_and_alt_digits() -> None:
    reader = KeyReader(parse_detach_key(None))
    assert reader.feed(b"\x02\x1b[1;5C\x02\x1b[1;3D\x02\x1b4") == [
        Command("resize-right-1"),
        Command("resize-left-5"),
        Command("layout-4"),
    ]
    # A sequence cut by the read waits for its end.
    assert reader.feed(b"\x02\x1b[1;") == []
    assert reader.feed(b"5A") == [Command("resize-up-1")]
    # Unbound after the prefix: both go to the program, as before.
    assert reader.feed(b"\x02\x1b[1;2A") == [b"\x02\x1b[1;2A"]


def test_arrows_and_resize_keys_repeat_without_the_prefix_for_a_while() -> None:
    reader = KeyReader(parse_detach_key(None))
    assert reader.feed(b"\x02\x1b[1;5D", now=10.0) == [Command("resize-left-1")]
    # Within 500 ms of the last one: no prefix needed, and each extends the window.
    assert reader.feed(b"\x1b[1;5D\x1b[D", now=10.4) == [
        Command("resize-left-1"),
        Command("pane-left"),
    ]
    assert reader.feed(b"\x1b[1;3C", now=10.8) == [Command("resize-right-5")]
    # Later, or after any other key, the arrow goes to the program.
    assert reader.feed(b"\x1b[D", now=11.5) == [b"\x1b[D"]
    assert reader.feed(b"\x02\x1b[A", now=20.0) == [Command("pane-up")]
    assert reader.feed(b"x\x1b[A", now=20.1) == [b"x\x1b[A"]
    # A key that does not repeat (a split) opens no window.
    assert reader.feed(b"\x02%", now=30.0) == [Command("split-h")]
    assert reader.feed(b"\x1b[A", now=30.1) == [b"\x1b[A"]

"""``phux attach`` as a multiplexer, end to end: a person (tmux) and agents (the CLI)
sharing a session's windows and panes on a real server. One server for the module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import PhuxServer, Tmux, needs_tmux, running_server

pytestmark = needs_tmux

COLS, ROWS = 80, 20


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    yield from running_server()


@pytest.fixture
def person(server: PhuxServer) -> Iterator[Tmux]:
    t = Tmux(server.dir, server)
    try:
        yield t
    finally:
        t.kill()


def where(screen: str, text: str) -> tuple[int, int]:
    """(column, row) of ``text`` on the screen (the last occurrence's row)."""
    found = None
    for y, line in enumerate(screen.splitlines()):
        x = line.find(text)
        if x >= 0:
            found = (x, y)
    assert found is not None, f"{text!r} is not on the screen:\n{screen}"
    return found


def status(screen: str) -> str:
    return screen.splitlines()[ROWS - 1] if len(screen.splitlines()) >= ROWS else ""


def run(server: PhuxServer, *args: str) -> str:
    result = server.phux(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_two_panes_side_by_side_with_agents_typing_into_one(
    server: PhuxServer, person: Tmux
) -> None:
    server.new("duo")
    run(server, "split", "duo")
    run(server, "run", "duo:0.0", "echo LEFT-$((1+1))")
    run(server, "run", "duo:0.1", "echo RIGHT-$((2+2))")
    person.attach("duo", cols=COLS, rows=ROWS)
    screen = person.wait_for(lambda s: "LEFT-2" in s and "RIGHT-4" in s and "│" in s)
    border = where(screen, "│")[0]
    assert where(screen, "LEFT-2")[0] < border < where(screen, "RIGHT-4")[0]
    assert status(screen).startswith("[duo] 0:")
    # An agent types into the right pane: it shows in the right region.
    run(server, "send-keys", "duo:0.1", "echo agent-$((3*3))", "Enter")
    screen = person.wait_for("agent-9")
    assert where(screen, "agent-9")[0] > border
    # The person types into the active pane (the last one an agent ran in: right),
    # sized to its region (status line excluded).
    person.literal("stty size")
    person.keys("Enter")
    screen = person.wait_for(f"{ROWS - 1} {COLS - border - 1}")
    assert "typed: you" in status(screen)
    # A click selects the left pane (tmux passes the mouse report on as typed).
    person.literal("\x1b[<0;3;3M")
    person.literal("stty size")
    person.keys("Enter")
    screen = person.wait_for(f"{ROWS - 1} {border}")
    assert where(screen, f"{ROWS - 1} {border}")[0] < border
    # The person's window shrinks: the panes shrink with it (side by side: 30 + 1 + 29).
    person.cmd("resize-window", "-x", "60", "-y", "16")
    person.literal("clear; stty size")
    person.keys("Enter")
    person.wait_for(lambda s: s.startswith("15 30") and s.splitlines()[0].find("│") == 30)
    person.cmd("resize-window", "-x", str(COLS), "-y", str(ROWS))
    person.wait_for(lambda s: len(s.splitlines()) >= ROWS and "[duo]" in status(s))
    # C-b [: copy mode in the active pane (its indicator at the pane's top right);
    # / searches its history; q leaves.
    person.keys("C-b", "[")
    screen = person.wait_for(lambda s: "/" in s.splitlines()[0] and "[0/" in s)
    assert where(screen, "[0/")[0] < border
    person.literal("?LEFT")
    person.keys("Enter")
    person.keys("q")
    person.wait_for(lambda s: "[0/" not in s)
    # The wheel over the right pane scrolls it into copy mode there.
    person.literal(f"\x1b[<64;{COLS - 5};3M")
    screen = person.wait_for("[0/")
    assert where(screen, "[0/")[0] > border
    person.keys("q")
    person.wait_for(lambda s: "[0/" not in s)
    person.literal("\x1b[<0;3;3M")  # back to the left pane
    # The program's own exit status shows, once every pane has exited.
    run(server, "send-keys", "duo:0.1", "exit 4", "Enter")
    screen = person.wait_for(lambda s: "exited 4" in s)
    person.literal("exit 3")
    person.keys("Enter")
    screen = person.wait_for("EXITED 0")
    assert "[duo: exited with status 3]" in screen


def test_prefix_keys_split_select_zoom_windows_rename_kill(
    server: PhuxServer, person: Tmux
) -> None:
    server.new("keys")
    person.attach("keys", cols=COLS, rows=ROWS)
    person.wait_for(lambda s: any(line.rstrip() == "$" for line in s.splitlines()))
    # One pane: today's attach. C-b % splits it and the multiplexer takes over.
    person.keys("C-b", "%")
    screen = person.wait_for(lambda s: "│" in s and "[keys]" in s)
    border = where(screen, "│")[0]
    person.literal("echo in-new")
    person.keys("Enter")
    screen = person.wait_for(lambda s: s.count("in-new") == 2)
    assert where(screen, "in-new")[0] > border
    # o: the next pane (left); " splits it top/bottom.
    person.keys("C-b", "o")
    person.keys("C-b", '"')
    screen = person.wait_for("─")
    _, bottom_row = where(screen, "─")
    person.literal("echo in-bottom")
    person.keys("Enter")
    screen = person.wait_for(lambda s: s.count("in-bottom") == 2)
    x, y = where(screen, "in-bottom")
    assert x < border and y > bottom_row
    # Arrows: up, then right.
    person.keys("C-b", "Up")
    person.literal("echo went-up")
    person.keys("Enter")
    screen = person.wait_for(lambda s: s.count("went-up") == 2)
    assert where(screen, "went-up")[1] < bottom_row
    person.keys("C-b", "Right")
    person.literal("echo went-right")
    person.keys("Enter")
    screen = person.wait_for(lambda s: s.count("went-right") == 2)
    assert where(screen, "went-right")[0] > border
    # z zooms the active pane (no borders, Z on the status line), z again unzooms.
    person.keys("C-b", "z")
    screen = person.wait_for(lambda s: "│" not in s and " Z " in status(s))
    person.keys("C-b", "z")
    person.wait_for(lambda s: "│" in s and " Z " not in status(s))
    # , renames the window.
    person.keys("C-b", ",")
    person.wait_for("(rename-window)")
    person.keys("C-u")
    person.literal("edits")
    person.keys("Enter")
    person.wait_for(lambda s: "0:edits*" in status(s))
    # c: a new window; p / n / digits select windows.
    person.keys("C-b", "c")
    screen = person.wait_for(lambda s: "1:" in status(s) and "│" not in s)
    assert "0:edits " in status(screen)
    person.keys("C-b", "p")
    person.wait_for(lambda s: "0:edits*" in status(s) and "│" in s)
    person.keys("C-b", "n")
    person.wait_for(lambda s: "0:edits " in status(s) and "│" not in s)
    # A command failing in a window not shown marks it (!) until the person looks.
    assert server.phux("run", "keys:0.0", "false").returncode == 1
    person.wait_for(lambda s: "0:edits!" in status(s))
    person.keys("C-b", "0")
    person.wait_for(lambda s: "0:edits*" in status(s) and "│" in s)
    # x asks first; n keeps the pane, y kills it.
    person.keys("C-b", "x")
    person.wait_for(lambda s: "kill-pane @" in status(s) and "(y/n)" in status(s))
    person.keys("n")
    person.wait_for(lambda s: "kill-pane" not in s)
    before = len(run(server, "ls", "--json", "--panes"))
    person.keys("C-b", "x")
    person.wait_for("(y/n)")
    person.keys("y")
    person.wait_for(lambda s: "─" in s and "│" not in s)  # the right pane was active
    assert len(run(server, "ls", "--json", "--panes")) < before
    # ? lists the keys; any key closes the list.
    person.keys("C-b", "?")
    person.wait_for("split the pane left/right")
    person.keys("q")
    person.wait_for(lambda s: "split the pane" not in s)
    # d detaches; attaching again shows the same layout.
    screen = person.screen()
    person.keys("C-b", "d")
    person.wait_for("EXITED 0")
    person.kill()
    person.attach("keys", cols=COLS, rows=ROWS)
    again = person.wait_for(lambda s: "─" in s and "[keys]" in s)
    assert where(again, "─")[1] == where(screen, "─")[1]
    # w: the tree of every session; Enter switches to the one selected.
    server.new("other")
    run(server, "run", "other", "echo OTHER-$((6*7))")
    person.keys("C-b", "w")
    screen = person.wait_for(lambda s: "other" in s and "keys" in s and "bash prompt" in s)
    assert "OTHER-42" not in screen
    person.keys("Down", "Down", "Down", "Down", "Down", "Down", "Down", "Down", "Down")
    person.wait_for("OTHER-42")  # the live preview of the pane selected
    person.keys("Enter")
    person.wait_for(lambda s: status(s).startswith("[other]"))
    person.keys("C-b", "d")
    person.wait_for("EXITED 0")


def test_two_people_see_the_same_layout(server: PhuxServer, person: Tmux) -> None:
    server.new("pair")
    run(server, "split", "pair")
    person.attach("pair", cols=COLS, rows=ROWS)
    person.cmd("new-window", "-d", "-t", "0:1", person.attach_line("pair"))
    for window in ("0:0", "0:1"):
        person.wait_for(lambda s: "│" in s and "[pair]" in s, target=window)
    run(server, "send-keys", "pair:0.0", "echo both-see-$((5+5))", "Enter")
    for window in ("0:0", "0:1"):
        screen = person.wait_for(lambda s: s.count("both-see-10") == 1, target=window)
        assert where(screen, "both-see-10")[0] < where(screen, "│")[0]


def layout_value(server: PhuxServer, session: str) -> str:
    """The stored layout of the session's window 0 (spec/L3.md §2)."""
    from phux.client import Deadline
    from phux.wire.frames import ListTerminals, TerminalList

    with server.client() as c:
        reply = c.connection(Deadline.after(10)).call_expect(
            lambda r: ListTerminals(request_id=r), TerminalList, Deadline.after(10)
        )
    values = {e.key: e.value for e in reply.global_metadata}
    return values.get(f"phux.layout.{session}.0", b"").decode()


def test_resize_keys_presets_and_new_panes_in_the_pane_directory(
    server: PhuxServer, person: Tmux
) -> None:
    server.new("sizes")
    run(server, "split", "sizes")
    here = server.dir / "cwd-here"
    here.mkdir()
    person.attach("sizes", cols=COLS, rows=ROWS)
    person.wait_for(lambda s: "│" in s and "[sizes]" in s)
    person.keys("C-b", "Left")  # the left pane (40 columns of 80, a border, 39)
    person.literal(f"cd {here}; clear; stty size")
    person.keys("Enter")
    person.wait_for(lambda s: s.startswith(f"{ROWS - 1} 40"))
    # C-b C-Right moves its border right by a cell, C-b M-Left left by five.
    person.keys("C-b", "C-Right")
    person.literal("clear; stty size")
    person.keys("Enter")
    person.wait_for(lambda s: s.startswith(f"{ROWS - 1} 41"))
    person.keys("C-b", "M-Left")
    person.literal("clear; stty size")
    person.keys("Enter")
    screen = person.wait_for(lambda s: s.startswith(f"{ROWS - 1} 36"))
    assert where(screen, "│")[0] == 36
    assert layout_value(server, "sizes") == "h(0:36,1:43)"  # kept for the next attach
    # C-b % and C-b ": the new pane starts where the active one is (its cd).
    person.keys("C-b", "%")
    person.wait_for(lambda s: s.splitlines()[0].count("│") == 2)
    same = f'[ "$PWD" = {here} ] && echo IN-$((40+2))'
    person.literal(same)
    person.keys("Enter")
    person.wait_for("IN-42")
    # M-2: even-vertical (stacked, no side by side); M-1: even-horizontal.
    person.keys("C-b", "M-2")
    person.wait_for(lambda s: "│" not in s and s.count("─") >= 2 * COLS)
    assert layout_value(server, "sizes") == "v(0,1,2)"
    person.keys("C-b", "M-1")
    person.wait_for(lambda s: "─" not in s and s.splitlines()[0].count("│") == 2)
    # C-b c: a new window, in the active pane's directory too.
    person.keys("C-b", "c")
    person.wait_for(lambda s: "1:" in status(s) and "│" not in s)
    person.literal(same)
    person.keys("Enter")
    person.wait_for("IN-42")
    # ? lists the new keys.
    person.keys("C-b", "?")
    person.wait_for(lambda s: "resize the pane by 5 cells" in s and "tiled" in s)
    person.keys("q")
    person.keys("C-b", "d")
    person.wait_for("EXITED 0")

"""Copy mode in a real ``phux attach`` inside a real tmux (the person's terminal).

One phux server and one tmux server for the module; each test attaches its own
session in its own tmux session (windows share one size, the person's).
Most cases are unit tests of the state machine (test_copy_mode.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from .conftest import PhuxServer, Tmux, needs_tmux, running_server

pytestmark = needs_tmux

MARKS = "for i in $(seq 1 300); do echo mark-$i; done"
INDICATOR = re.compile(r"\[(\d+)/(\d+)\]")


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    yield from running_server()


@pytest.fixture(scope="module")
def person(server: PhuxServer) -> Iterator[Tmux]:
    tmux = Tmux(server.dir, server)
    try:
        yield tmux
    finally:
        tmux.kill()


def attach(tmux: Tmux, session: str, *args: str) -> str:
    """Attach ``session`` in a tmux session of its own; its target."""
    line = tmux.attach_line(*args, session)
    if not tmux.started:
        tmux.start(line, cols=60, rows=15)
        tmux.cmd("rename-session", session)
    else:
        tmux.cmd("new-session", "-d", "-s", session, "-x", "60", "-y", "15", line)
    tmux.cmd("set-option", "-g", "set-clipboard", "on")
    return session


def top_row(screen: str) -> str:
    return screen.splitlines()[0].split()[0]


def offset(screen: str) -> tuple[int, int] | None:
    found = INDICATOR.search(screen.splitlines()[0]) if screen else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def test_scroll_search_copy_and_back_to_the_live_screen(server: PhuxServer, person: Tmux) -> None:
    """Prefix [ enters; PageUp scrolls back 200 lines and more; / finds a line; output keeps
    coming while the view stays; Space..Enter copies through OSC 52 (tmux's
    buffer) and leaves; the pane is live again."""
    server.new("copy")
    assert server.phux("run", "copy", MARKS).returncode == 0
    pane = attach(person, "copy", "--allow-clipboard", "--mouse")
    person.wait_for(lambda s: s.rstrip().endswith("$"), target=pane)
    person.keys("C-b", "[", target=pane)
    person.wait_for(lambda s: (offset(s) or (1, 0))[0] == 0, target=pane)

    person.keys(*["PPage"] * 14, target=pane)  # 14 pages of 15 rows back
    screen = person.wait_for(lambda s: (offset(s) or (0, 0))[0] == 14 * 15, target=pane)
    assert top_row(screen) == "mark-77"  # printed 223 lines before the prompt
    person.literal("G/mark-100", target=pane)  # down from the bottom: wraps to the top
    person.keys("Enter", target=pane)
    screen = person.wait_for(
        lambda s: "mark-100\n" in s and (offset(s) or (0, 0))[0] > 0, target=pane
    )
    shown, history = top_row(screen), (offset(screen) or (0, 0))[1]

    # Output arrives (the indicator counts it); the rows shown stay put.
    assert server.phux("send-keys", "copy", "echo live-while-copying", "Enter").returncode == 0
    screen = person.wait_for(lambda s: (offset(s) or (0, 0))[1] > history, target=pane)
    assert top_row(screen) == shown
    assert "live-while-copying" not in screen

    person.keys("Space", target=pane)
    person.literal("$", target=pane)
    person.keys("Enter", target=pane)
    person.wait_for(lambda s: "live-while-copying\n$" in s and offset(s) is None, target=pane)
    assert person.cmd("show-buffer") == "mark-100"

    person.literal("echo still-live", target=pane)
    person.keys("Enter", target=pane)
    person.wait_for("\nstill-live", target=pane)

    # The wheel (the shell asked for no mouse reports) scrolls into copy mode;
    # back down at the bottom it leaves.
    person.cmd("send-keys", "-t", pane, "-H", *b"\x1b[<64;5;5M".hex(" ").split())
    person.wait_for(lambda s: (offset(s) or (0, 0))[0] == 5, target=pane)
    person.cmd("send-keys", "-t", pane, "-H", *b"\x1b[<65;5;5M".hex(" ").split())
    person.wait_for(lambda s: offset(s) is None and s.rstrip().endswith("$"), target=pane)


def test_without_allow_clipboard_nothing_is_copied(server: PhuxServer, person: Tmux) -> None:
    server.new("noclip")
    assert server.phux("run", "noclip", "echo secret-text").returncode == 0
    pane = attach(person, "noclip")
    person.wait_for(lambda s: s.rstrip().endswith("$"), target=pane)
    buffers = person.cmd("list-buffers")
    person.keys("C-b", "[", target=pane)
    person.wait_for("clipboard off", target=pane)
    person.literal("?secret\r $\r", target=pane)
    person.wait_for("attach with --allow-clipboard", target=pane)
    person.literal("q", target=pane)
    person.wait_for(lambda s: "clipboard" not in s and s.rstrip().endswith("$"), target=pane)
    assert person.cmd("list-buffers") == buffers  # no OSC 52 reached tmux

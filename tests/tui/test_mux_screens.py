"""What the multiplexer passes of a modern screen (issue 29), end to end: a real
``phux attach`` in a PTY whose output a phux engine reads as the person's
terminal would. A curly coloured underline stays curly and coloured, an OSC 8
link stays a link (and a ``javascript:`` one does not reach the person), the
program's cursor shape is the person's, and a synchronized-output frame left
open is drawn live once its 150 ms bound passes, with no more output to wake
the multiplexer."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from phux.client.deadline import Deadline
from phux.engine import Terminal

from .conftest import PhuxServer, clean_env, running_server

COLS, ROWS = 80, 20
WAIT = 15.0

PROGRAM = r"""
import os, time, tty
tty.setraw(0)
os.write(1, b"\x1b[4:3;58:2::255:0:0mcurly\x1b[0m "
            b"\x1b]8;id=a;https://example.com/x\x1b\\link\x1b]8;;\x1b\\ "
            b"\x1b]8;;javascript:alert(1)\x1b\\js\x1b]8;;\x1b\\"
            b"\x1b[5 q\r\nbefore")
os.read(0, 1)  # the person's key: the multiplexer is drawing now
os.write(1, b"\x1b[?2026h\rduring")
time.sleep(120)
"""


class Person:
    """``phux attach`` in a PTY, its output read into an engine: the person's screen."""

    def __init__(
        self, server: PhuxServer, session: str, cols: int = COLS, rows: int = ROWS
    ) -> None:
        argv = [sys.executable, "-m", "phux", "attach", session]
        env = clean_env(PHUX_SOCKET=str(server.socket), TERM="xterm-256color")
        pid, fd = pty.fork()
        if pid == 0:  # the child: the PTY's size first, then attach
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.screen = Terminal(cols, rows, history=0)

    def until(self, done: Callable[[Terminal], bool]) -> Terminal:
        deadline = time.monotonic() + WAIT
        while not done(self.screen):
            left = deadline - time.monotonic()
            assert left > 0, "timed out; the person sees:\n" + "\n".join(
                self.screen.project().lines
            )
            if select.select([self.fd], [], [], min(left, 0.2))[0]:
                self.screen.feed(os.read(self.fd, 65536))
                answers = self.screen.take_replies()
                if answers:
                    os.write(self.fd, answers)
        return self.screen

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    # No replicas: no ``replica_behind`` fact published after the pane's output, so
    # nothing but the frame's bound can wake the multiplexer.
    yield from running_server(PHUX_REPLICAS="off")


def _style(data: dict[str, Any], text: str) -> dict[str, Any]:
    for run in data["styles"]:
        if run["text"] == text:
            found: dict[str, Any] = run["style"]
            return found
    raise AssertionError(f"no run {text!r} in {data['styles']}")


def test_underline_styles_links_the_cursor_shape_and_a_frame_past_its_bound(
    server: PhuxServer,
) -> None:
    server.new("modern", ["python3", "-c", PROGRAM])
    # A second pane, quiet (cat), makes it the multiplexer's screen.
    assert server.phux("split", "modern", "--", "cat").returncode == 0
    person = Person(server, "modern")
    try:
        person.until(lambda t: "before" in "".join(t.project().lines))
        os.write(person.fd, b"g")
        # The frame holds "before" for 150 ms; then "during" shows, with no more
        # output from any pane to wake the multiplexer.
        seen = person.until(lambda t: "during" in "".join(t.project().lines))
    finally:
        person.close()
    data = seen.project_data(cells=True)
    curly = _style(data, "curly")
    assert curly["underline_style"] == "curly"
    assert curly["underline_color"] == {"kind": "rgb", "r": 255, "g": 0, "b": 0}
    assert [(link["uri"], link["id"], link["width"]) for link in data["links"]] == [
        ("https://example.com/x", "a", 4)
    ]
    # Where the program left it, shown (a redraw that moves no cursor still puts it
    # back: the update hides it while drawing), in the program's shape.
    assert data["cursor"] == {"x": 6, "y": 1, "visible": True, "shape": "bar", "blink": True}
    assert "before" not in "".join(data["lines"])


FRAME_ON_KEY = r"""
import os, time, tty
tty.setraw(0)
os.write(1, b"before")
os.read(0, 1)
os.write(1, b"\x1b[?2026h\rduring")
time.sleep(120)
"""


def _shows(text: str) -> Callable[[Terminal], bool]:
    return lambda t: any(text in line for line in t.project().lines)


def test_a_one_pane_attach_of_another_size_repaints_when_a_frame_passes_its_bound(
    server: PhuxServer,
) -> None:
    """Two people on a one-pane session, at two sizes: one passes the program's output
    through (its terminal holds the frame itself), the other paints views of the
    pane, which show the screen from before the frame and, once the frame is older
    than 150 ms, the live one, with no more output."""
    server.new("single", ["python3", "-c", FRAME_ON_KEY])
    people = [Person(server, "single"), Person(server, "single", 60, 15)]
    try:
        for person in people:
            person.until(_shows("before"))
        assert server.phux("send-keys", "single", "g").returncode == 0
        for person in people:
            person.until(_shows("during"))
    finally:
        for person in people:
            person.close()
    # An agent's wait replays the frame's opening (no replicas here: the journal),
    # so its engine holds the screen before it, and looks again at the bound.
    with server.client() as client:
        start = time.monotonic()
        result = client.wait("single", until="during", timeout=30, deadline=Deadline.after(35))
        assert result.met and time.monotonic() - start < 10

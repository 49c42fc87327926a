"""A real program that uses synchronized output and the kitty keyboard protocol:
an app of Textual (a PyPI framework), in a pane of a real server.

Textual asks the terminal (DECRQM) whether it has mode 2026 and, told yes by
the replica, frames its redraws with it; it pushes kitty's keyboard flags
(8.x: disambiguate, all keys as escape codes, associated text). So: its
output holds frames, every snapshot shows one whole page (never half of one,
whatever the moment), and send-keys reaches it kitty's way: C-i, which the
legacy encoding cannot tell from Tab, arrives as ctrl+i, and Escape arrives at
once as escape.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from phux.client import Client
from phux.client.deadline import Deadline

from .helpers import read_bootstrap, replica_server, unsubscribe

ROWS = 20
APP = f"""
from textual.app import App
from textual.widgets import Static


def page(n):
    return "\\n".join(f"page {{n}} row {{r}} " + "=" * 40 for r in range({ROWS}))


class Pages(App):
    BINDINGS = [("ctrl+i", "flip"), ("escape", "quit")]
    n = 0

    def compose(self):
        yield Static(page(0), id="page")

    def action_flip(self):
        self.n += 1
        self.query_one("#page", Static).update(page(self.n))


Pages().run()
"""

_PAGE = re.compile(r"page (\d+) row (\d+)")


def _pages(lines: list[str]) -> set[int]:
    """The page numbers the screen's rows show (one: a whole page)."""
    rows = [m for line in lines if (m := _PAGE.search(line))]
    assert len(rows) == ROWS, lines
    return {int(m.group(1)) for m in rows}


def test_a_textual_app_frames_its_redraws_and_takes_kitty_keys(tmp_path: Path) -> None:
    with replica_server(tmp_path) as server, Client(server.socket, env={}) as client:
        env = {"TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
        client.new(
            "tx",
            command=[sys.executable, "-c", APP],
            env=env,
            cols=80,
            rows=24,
            shell_integration=False,
            deadline=Deadline.after(10),
        )
        assert client.wait(
            "tx", until=f"page 0 row {ROWS - 1}", timeout=30, deadline=Deadline.after(35)
        ).met
        pane = client.resolve("tx", Deadline.after(5))
        framed = False
        n = 0
        deadline = Deadline.after(30)
        while not framed:
            # Textual frames its redraws once it has the answer to its DECRQM, which
            # comes late when the replica helper process is still starting.
            n += 1
            assert not deadline.expired(), "Textual never framed a redraw"
            client.send_keys("tx", ["C-i"], Deadline.after(10))
            # Read while Textual redraws: a whole page each time, never two halves.
            while (shown := _pages(client.snapshot("tx", deadline=Deadline.after(10)).lines)) != {
                n
            }:
                assert len(shown) == 1 and shown <= {n - 1}, shown
                assert not deadline.expired(), f"page {n} never showed"
            with server.connect() as conn:
                boot = read_bootstrap(conn, pane.terminal)
                unsubscribe(conn, pane.terminal)
            framed = b"\x1b[?2026h" in (boot.checkpoint or b"") + bytes(boot.journal)
        # It pushed disambiguate (1), all keys as escape codes (8) and their text (16).
        assert boot.engine(100).modes.kitty_keys & 1
        client.send_keys("tx", ["Escape"], Deadline.after(10))
        result = client.wait("tx", exit=True, timeout=20, deadline=Deadline.after(25))
        assert result.exit_code == 0

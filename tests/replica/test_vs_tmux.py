"""A full-screen program through compaction: a new client sees what tmux shows."""

from __future__ import annotations

import shutil
import time
import unicodedata
from pathlib import Path

import pytest

from engine.tmux import TmuxScreen
from phux.engine import Terminal
from server.harness import Stream, read_until, spawn, subscribe

from .helpers import read_bootstrap, replica_server

BOUND = 32 * 1024
COLS, ROWS = 80, 24


def _nfc(lines: list[str]) -> list[str]:
    return [unicodedata.normalize("NFC", line) for line in lines]


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("top") is None, reason="tmux, top")
def test_top_through_compaction_matches_tmux(tmp_path: Path) -> None:
    with (
        replica_server(tmp_path, "--journal-bytes", str(BOUND), history=500) as server,
        server.connect() as conn,
    ):
        tid = spawn(conn, ["top", "-d", "0.05"], cols=COLS, rows=ROWS)
        whole = Stream(tid)
        subscribe(conn, tid)
        # Well past four journal bounds, so the bootstrap must come from a checkpoint.
        read_until(conn, whole, lambda s: s.next_seq > 5 * BOUND, timeout=60)
        # Compaction is bounded once the replica has caught up: until then (a loaded
        # machine can starve it) the journal after the newest checkpoint is as long as
        # the replica is behind.
        deadline = time.monotonic() + 30
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if boot.checkpoint is not None and boot.size < 2 * BOUND + 16 * 1024:
                break
            assert time.monotonic() < deadline, f"no compacted bootstrap in time ({boot.size} B)"
        assert boot.ready is not None
        # The same bytes, up to where the new client's bootstrap ends.
        read_until(conn, whole, lambda s: s.next_seq >= boot.ready.next_seq, timeout=30)  # type: ignore[union-attr]
        stream = bytes(whole.data[: boot.ready.next_seq])
        mine = boot.engine(history=500)
    with TmuxScreen(COLS, ROWS) as tmux:
        state = tmux.show(stream)
    styled = Terminal(COLS, ROWS, history=0)
    styled.feed("\r\n".join(state.styled.split("\n")[:ROWS]).encode())
    assert _nfc(mine.project().lines) == _nfc(styled.project().lines)
    assert mine.alternate == state.alternate
    cursor = mine.project().cursor
    if state.cursor_visible:
        assert cursor is not None
        assert (cursor.x, cursor.y) == (min(state.cursor_x, COLS - 1), state.cursor_y)
    else:
        assert cursor is None
    # The whole stream replayed locally agrees with the bootstrap, history included.
    full = Terminal(COLS, ROWS, history=500)
    full.feed(stream)
    assert mine.project(scrollback=0) == full.project(scrollback=0)

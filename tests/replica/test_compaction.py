"""Journal compaction: a new client's bootstrap is small and exact whatever was printed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from phux.engine import Terminal
from server.harness import ServerProcess, Stream, read_until, spawn, subscribe

from .helpers import Boot, program, read_bootstrap, read_live, replica_server, send, unsubscribe
from .state import diff, engine_state

HISTORY = 300
BOUND = 64 * 1024

STYLED = """
os.read(0, 1)
for i in range(16000):
    w(b"\\x1b[3%dm%d line %d %s\\x1b[0m tail\\r\\n" % (i % 8, i % 3, i, b"x" * (i % 150)))
w(b"\\x1b]2;phase one\\x07\\x1b]7;file:///tmp/some%20where\\x07\\x1b]133;A\\x07$ \\x1b]133;B\\x07")
w(b"\\x1b[?1049h\\x1b[2;5Hin the alternate screen\\x1b[?1h\\x1b[?2004h\\x1b[3;20r")
w(b"\\x1b[5;7H\\x1b[1;4;38;2;10;20;30mstyled\\x1b[?25l")
os.read(0, 1)
w(b"after")
os.read(0, 1)
"""


def _settled_bootstrap(server: ServerProcess, tid: int, timeout: float = 30.0) -> Boot:
    """Bootstraps until one has a checkpoint and at most the bound of journal."""
    deadline = time.monotonic() + timeout
    while True:
        with server.connect() as conn:
            boot = read_bootstrap(conn, tid)
        if boot.checkpoint is not None and len(boot.journal) <= BOUND:
            return boot
        assert time.monotonic() < deadline, "no compacted bootstrap in time"
        time.sleep(0.1)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_bootstrap_is_small_exact_and_continues_at_next_seq(tmp_path: Path, mode: str) -> None:
    with (
        replica_server(
            tmp_path, "--journal-bytes", str(BOUND), mode=mode, history=HISTORY
        ) as server,
        server.connect() as conn,
    ):
        tid = spawn(conn, program(STYLED), cols=100, rows=30)
        whole = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, whole, lambda s: b"R" in s.data)  # raw mode is on
        send(conn, tid, b"g")
        read_until(conn, whole, lambda s: b"styled\x1b[?25l" in s.data[-64:], timeout=60)
        printed = whole.next_seq
        assert printed > 16 * BOUND

        boot = _settled_bootstrap(server, tid)
        assert boot.ready is not None and boot.ready.next_seq == printed
        # Bounded: a checkpoint (history rows and screens) plus a short tail.
        assert boot.size < 4 * BOUND, boot.size
        # The program is no shell phux integrated: its marks are output, which the
        # replica (and so the checkpoint) ignores, as a client's engine does.
        full = Terminal(100, 30, history=HISTORY, mark_key="")
        full.feed(bytes(whole.data))
        replayed = boot.engine(history=HISTORY, mark_key="")
        assert not diff(engine_state(full), engine_state(replayed))
        assert replayed.project(scrollback=0) == full.project(scrollback=0)
        assert replayed.title == "phase one" and replayed.cwd == "/tmp/some where"
        assert replayed.modes.app_cursor and replayed.modes.bracketed_paste

        # Live output continues at exactly READY's next_seq.
        with server.connect() as late:
            boot = read_bootstrap(late, tid)
            assert boot.ready is not None
            send(conn, tid, b"g")
            read_until(conn, whole, lambda s: s.data.endswith(b"after"))
            read_live(late, tid, boot, whole.next_seq)
            assert bytes(boot.live) == b"after"
            full.feed(b"after")
            assert not diff(engine_state(full), engine_state(boot.engine(HISTORY, mark_key="")))
            unsubscribe(late, tid)

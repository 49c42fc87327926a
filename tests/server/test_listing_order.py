"""A listing is never ahead of the output its terminal wrote before it was read.

A client that judges a shell's state from a listing (``run`` asks whether fish still
waits at its editor) must have the output written before the reading: a fish that
ran a command and came back to its prompt is seen at its editor, and only the marks it
printed on the way say a command ran. The server sends what the PTY holds before the
TERMINAL_LIST (spec/L1.md §8.1)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from phux.client.deadline import Deadline
from phux.wire.frames import Input, ListTerminals, TerminalFilter, TerminalList

from .harness import ServerProcess, Stream, read_until, spawn, subscribe

T = 10.0


def test_a_filtered_listing_comes_after_the_output_written_before_it(tmp_path: Path) -> None:
    # Each line read: a pause, a line of output, then a file that says it was written.
    flag = tmp_path / "written"
    script = 'while read x; do sleep 0.05; printf "MARK%s\\n" "$x"; : > "$0.$x"; done'
    srv = ServerProcess(tmp_path)
    srv.start()
    assert srv.proc is not None
    try:
        with srv.connect() as conn:
            tid = spawn(conn, ["sh", "-c", script, str(flag)])
            subscribe(conn, tid)
            stream = read_until(conn, Stream(tid), lambda s: s.ready is not None)
            only = TerminalFilter(terminals=[tid])
            # The server is stopped while the program writes, so that the output and the
            # LIST_TERMINALS wait for it together; trio wakes their tasks in either order.
            for n in range(6):
                line = b"%d\n" % n
                conn.send(Input(request_id=conn.new_request_id(), terminal=tid, data=line))
                echo = line.replace(b"\n", b"\r\n")
                read_until(conn, stream, lambda s: echo in s.data, T)  # noqa: B023 (called at once)
                os.kill(srv.proc.pid, signal.SIGSTOP)
                try:
                    done = Path(f"{flag}.{n}")
                    deadline = time.monotonic() + T
                    while not done.exists():  # (nothing to await: the server is stopped)
                        assert time.monotonic() < deadline, "the program did not write"
                        time.sleep(0.005)
                    rid = conn.submit(lambda rid: ListTerminals(request_id=rid, filter=only))
                finally:
                    os.kill(srv.proc.pid, signal.SIGCONT)
                wait = Deadline.after(T)
                while (reply := conn.take_reply(rid)) is None:
                    conn.read_one(wait)
                    while (frame := conn.take_pushed()) is not None:
                        stream.feed(frame)
                assert isinstance(reply, TerminalList)
                assert b"MARK%d" % n in stream.data, f"listing {n} came before the output"
    finally:
        srv.stop()

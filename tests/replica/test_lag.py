"""A replica that falls behind in a flood must never leave a wrong screen behind.

A program paints a header once, then rewrites row 10 many times, far more than
the replica may lag (lowered here so the test is quick). Every later snapshot
and every fresh bootstrap must still show the header on row 1: the replica
parses every byte (the terminal's reader waits for it when it is too far
behind), so a checkpoint is never taken from a replica that started mid-stream.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from phux.client import Client, Deadline
from phux.client.connection import Connection
from phux.wire.frames import ListTerminals, MetadataChanged, MetaSubscribe, TerminalList
from server.harness import next_of, spawn

from .helpers import header_flood, read_bootstrap, replica_server

KiB = 1024
JOURNAL = 16 * KiB
LAG = 64 * KiB
ROWS = 60000  # 60000 x 87 bytes: about 5 MB, some 80 times the allowed lag


def test_header_survives_a_flood_past_the_replica_lag(tmp_path: Path) -> None:
    args = ("--journal-bytes", str(JOURNAL), "--replica-lag-bytes", str(LAG))
    with replica_server(tmp_path, *args, history=50) as server, server.connect() as conn:
        tid = spawn(conn, header_flood(ROWS), cols=80, rows=24)
        with Client(server.socket, env={}) as client:
            deadline = Deadline.after(60)
            while True:
                state = client.snapshot(f"@{tid}", deadline=Deadline.after(30))
                if state.lines[11].startswith("DONE"):
                    break
                assert not deadline.expired(), state.lines
            assert state.lines[0].startswith("== HEADER painted once =="), state.lines
            assert state.lines[9].startswith(f"{ROWS - 1:06d}"), state.lines
        boot = read_bootstrap(conn, tid)
        screen = boot.engine(history=50).screen
        assert screen.display[0].startswith("== HEADER painted once =="), screen.display
        log = server.log.read_text()
        assert "restarted" not in log, log


FLOOD_PROGRAM = """
import os, sys
line = b"\\x1b[3%dm%06d\\x1b[0m " + b"lorem ipsum dolor sit amet " * 3 + b"\\r\\n"
block = b"".join(line % (i % 8, i) for i in range(2000))
v = memoryview(block * int(sys.argv[1]))
while v:
    v = v[os.write(1, v):]
os.write(1, b"END\\r\\n")
import time
time.sleep(60)
"""


def test_the_server_publishes_how_far_its_replicas_are_behind(tmp_path: Path) -> None:
    """``phux.server.replica_behind``: the output sent to replicas and not yet
    parsed, published while a flood runs (bounded by the lag the reader allows
    plus what a read adds) and back to 0 once the replica has caught up."""
    args = ("--journal-bytes", str(JOURNAL), "--replica-lag-bytes", str(LAG))
    with replica_server(tmp_path, *args, history=50) as server, server.connect() as conn:
        listing = conn.call_expect(
            lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
        )
        facts = {e.key: e.value for e in listing.global_metadata}
        assert facts["phux.server.replica_behind"] == b"0"
        conn.call(
            lambda rid: MetaSubscribe(request_id=rid, prefix="phux.server.replica_behind"),
            Deadline.after(10),
        )
        tid = spawn(conn, ["python3", "-c", FLOOD_PROGRAM, "40"], cols=80, rows=24)
        seen: list[int] = []
        deadline = Deadline.after(60)
        while not seen or seen[-1] or max(seen) == 0:
            changed = next_of(conn, MetadataChanged, deadline, key="phux.server.replica_behind")
            assert changed.value is not None
            seen.append(int(changed.value))
        assert max(seen) > 0, seen
        # The reader pauses past the lag: what one read adds (1 MiB at most) on top.
        assert max(seen) <= LAG + (1 << 20), seen
        assert tid


def _listing(conn: Connection, tid: int) -> tuple[int, dict[str, bytes]]:
    """The terminal's next seq and the server's facts, as a listing shows them."""
    reply = conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
    )
    seq = next(t.next_seq for t in reply.terminals if t.terminal == tid)
    return seq, {e.key: e.value for e in reply.global_metadata if e.value is not None}


BURST = 1_000_000


def test_replica_behind_catches_up_with_output_that_stopped_within_its_pace(
    tmp_path: Path,
) -> None:
    """A burst and, microseconds later, a small write while the replica is stopped
    (as if busy with one huge feed): ``replica_behind`` is paced to one write per
    50 ms while output flows, and the change the pace held back must still be
    written when its 50 ms are up. It once stayed at what the first read of the
    burst found until the replica next reported progress, which a stopped replica
    never does."""
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    script = (
        f"printf R; read x < {fifo}; "
        f"head -c {BURST} /dev/zero | tr '\\0' x; printf tail; exec sleep 60"
    )
    replica = 0
    with replica_server(tmp_path) as server, server.connect() as conn:
        try:
            tid = spawn(conn, ["sh", "-c", script], cols=80, rows=24)
            deadline = Deadline.after(10)
            while True:
                seq, facts = _listing(conn, tid)
                pids = facts.get("phux.server.replica_pids", b"").split()
                if seq and pids:
                    break
                assert not deadline.expired(), (seq, facts)
                time.sleep(0.005)
            replica = int(pids[0])
            os.kill(replica, signal.SIGSTOP)
            # Sent before the stop or not, nothing past here can be parsed now.
            start, _ = _listing(conn, tid)
            key = "phux.server.replica_behind"
            conn.call(lambda rid: MetaSubscribe(request_id=rid, prefix=key), Deadline.after(10))
            went = time.monotonic()
            with open(fifo, "w") as go:
                go.write("go\n")
            end = start + BURST + len(b"tail")
            deadline = Deadline.after(20)
            relayed = False
            seen: list[tuple[int, int]] = []
            while True:
                seq, facts = _listing(conn, tid)
                behind = int(facts.get("phux.server.replica_behind", b"0"))
                seen.append((seq, behind))
                if seq >= end and behind >= end - start:
                    break
                if seq >= end and not relayed:
                    # All of it is relayed: the held-back change is due within 50 ms.
                    relayed, deadline = True, Deadline.after(2)
                assert not deadline.expired(), seen[-3:]
                time.sleep(0.005)
            assert seq == end, seq
            # And paced all the same: one write per 50 ms at most while the burst ran.
            took = time.monotonic() - went
            writes = 0
            while (frame := conn.poll()) is not None:
                writes += isinstance(frame, MetadataChanged) and frame.key == key
            assert 1 <= writes <= took / 0.05 + 1, (writes, took)
        finally:
            if replica:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(replica, signal.SIGCONT)

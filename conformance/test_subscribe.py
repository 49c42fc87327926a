"""Subscribe: bootstrap then live output, no gap and no duplicate (spec/L1.md §4-§5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .catalog import ErrorCode, Input, Ok, Output, Subscribe, Unsubscribe
from .helpers import check_error, spawn, subscribe
from .wire_client import Conn

Connect = Callable[..., Conn]

COUNT = 400
PROGRAM = f"i=0; while [ $i -lt {COUNT} ]; do echo line$i; i=$((i+1)); done; echo DONE; sleep 30"


@pytest.mark.clause("L1.md §5 bootstrap", "L1.md §4 sequence numbers")
def test_bootstrap_then_live_no_gap_no_duplicate(
    conn: Conn, connect: Connect, cleanup: list[int]
) -> None:
    # The first subscriber joins at once, the second one mid-stream; both must
    # see one contiguous byte stream, and the same bytes at the same seqs.
    t = spawn(conn, cleanup, ["/bin/sh", "-c", "sleep 0.2; " + PROGRAM])
    early = subscribe(conn, t.terminal)
    early.read_until(conn, b"line150")
    late_conn = connect()
    late = subscribe(late_conn, t.terminal)
    assert late.ready is not None and late.ready.alive
    assert late.start_seq <= late.ready.next_seq
    early.read_until(conn, b"DONE")
    late.read_until(late_conn, b"DONE")
    # Same bytes at the same seqs.
    lo = max(early.start_seq, late.start_seq)
    hi = min(early.next_seq, late.next_seq)
    assert hi > lo
    assert (
        early.data[lo - early.start_seq : hi - early.start_seq]
        == late.data[lo - late.start_seq : hi - late.start_seq]
    )
    text = early.text()
    if early.start_seq == 0 and not early.checkpoint:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("line")]
        assert lines == [f"line{i}" for i in range(COUNT)]
    if late.start_seq == 0 and not late.checkpoint:
        assert late.data == early.data[: len(late.data)]


@pytest.mark.clause("L1.md §5 bootstrap")
def test_subscribe_twice_is_invalid(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    subscribe(conn, t.terminal)
    rid = conn.rid()
    check_error(
        conn.request(Subscribe(request_id=rid, terminal=t.terminal)),
        ErrorCode.INVALID_COMMAND,
        rid,
    )


@pytest.mark.clause("L1.md §5 UNSUBSCRIBE")
def test_no_output_after_unsubscribe_ok(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh", "-c", "while :; do echo tick; sleep 0.01; done"])
    stream = subscribe(conn, t.terminal)
    stream.read_until(conn, b"tick")
    rid = conn.rid()
    conn.send(Unsubscribe(request_id=rid, terminal=t.terminal))
    # Frames before the OK are allowed; none of this terminal after it.
    while True:
        frame = conn.expect(lambda f: True)
        if frame == Ok(request_id=rid):
            break
    conn.poll(0.3)
    leaked = [f for f in conn.backlog if isinstance(f, Output) and f.terminal == t.terminal]
    assert not leaked, f"{len(leaked)} OUTPUT frames after UNSUBSCRIBE's OK"


@pytest.mark.clause("L1.md §7 input")
def test_input_from_another_connection_is_seen(
    conn: Conn, connect: Connect, cleanup: list[int]
) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    stream = subscribe(conn, t.terminal)
    writer = connect()
    rid = writer.rid()
    assert writer.request(
        Input(request_id=rid, terminal=t.terminal, data=b"echo $((5*5))w\r")
    ) == Ok(request_id=rid)
    stream.read_until(conn, b"25w")

"""Input units, cancellation and urgent input (spec/L1.md §7)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator

import pytest

from .catalog import PROTOCOL_VERSION, ErrorCode, Hello, HelloOk, Input, InputWritten, Ok
from .helpers import Stream, check_error, spawn, subscribe
from .wire_client import Conn

Connect = Callable[..., Conn]
FILLER = 1024 * 1024  # more than a PTY buffers: the rest waits in the server


@pytest.fixture
def gate() -> Iterator[str]:
    """A path the gated program waits for before it reads its terminal."""
    directory = tempfile.mkdtemp(prefix="phux-conf-gate-")
    os.chmod(directory, 0o755)
    path = os.path.join(directory, "open")
    yield path
    if os.path.exists(path):
        os.unlink(path)
    os.rmdir(directory)


def gated_cat(gate: str) -> list[str]:
    """A cat that reads nothing until ``gate`` exists; it prints READY once its tty is
    raw (a cooked tty would echo the input, or discard what passes its line buffer)."""
    return [
        "/bin/sh",
        "-c",
        f"stty raw -echo; printf READY; while [ ! -e {gate} ]; do sleep 0.01; done; cat",
    ]


def raw(conn: Conn, stream: Stream) -> None:
    """Wait until the gated cat has made its tty raw (its READY, live or in the bootstrap)."""
    if b"READY" not in stream.checkpoint:
        stream.read_until(conn, b"READY")


@pytest.mark.clause("L1.md §7 units")
def test_a_unit_is_written_whole(connect: Connect, cleanup: list[int]) -> None:
    a, b = connect(), connect()
    t = spawn(a, cleanup, ["/bin/sh", "-c", "stty -echo; cat"])
    stream = subscribe(a, t.terminal)
    first = a.rid()
    a.send(Input(request_id=first, terminal=t.terminal, data=b"<a1", more=True))
    assert a.reply(first) == Ok(request_id=first)
    other = b.rid()
    b.send(Input(request_id=other, terminal=t.terminal, data=b"<b>\n"))
    b.poll(0.3)  # the unit is open: B's input waits for it
    assert not any(getattr(f, "request_id", None) == other for f in b.backlog)
    last = a.rid()
    a.send(Input(request_id=last, terminal=t.terminal, data=b"a2>\n"))
    assert a.reply(last) == Ok(request_id=last)
    assert b.reply(other) == Ok(request_id=other)
    stream.read_until(a, b"<b>\r\n")
    assert stream.data.endswith(b"<a1a2>\r\n<b>\r\n"), bytes(stream.data)


@pytest.mark.clause("L1.md §7 cancellation")
def test_input_of_a_closed_connection_is_dropped(
    connect: Connect, cleanup: list[int], gate: str
) -> None:
    a = connect()
    t = spawn(a, cleanup, gated_cat(gate))
    stream = subscribe(a, t.terminal)
    raw(a, stream)
    filler = a.rid()
    a.send(Input(request_id=filler, terminal=t.terminal, data=b"f" * FILLER))
    leaver = connect()
    leaver.send(Input(request_id=leaver.rid(), terminal=t.terminal, data=b"MARK"))
    leaver.close()
    a.poll(0.2)
    open(gate, "w").close()
    assert a.reply(filler, timeout=30) == Ok(request_id=filler)
    end = a.rid()
    assert a.request(Input(request_id=end, terminal=t.terminal, data=b"END")) == Ok(request_id=end)
    stream.read_until(a, b"END", timeout=30)
    assert b"MARK" not in stream.data


@pytest.mark.clause("L1.md §7 interrupts")
def test_urgent_input_jumps_and_flushes_the_queue(
    connect: Connect, cleanup: list[int], gate: str
) -> None:
    a = connect()
    t = spawn(a, cleanup, gated_cat(gate))
    stream = subscribe(a, t.terminal)
    raw(a, stream)
    filler = a.rid()
    a.send(Input(request_id=filler, terminal=t.terminal, data=b"f" * FILLER))
    queued = a.rid()
    a.send(Input(request_id=queued, terminal=t.terminal, data=b"QUEUED"))
    # From the same connection, so the server has queued both before it (a second
    # connection's could be read first on a loaded machine, with nothing to cancel).
    urgent = a.rid()
    a.send(Input(request_id=urgent, terminal=t.terminal, data=b"URGENT", urgent=True))
    check_error(a.reply(filler), ErrorCode.INPUT_CANCELLED, filler)
    check_error(a.reply(queued), ErrorCode.INPUT_CANCELLED, queued)
    open(gate, "w").close()
    assert a.reply(urgent, timeout=30) == Ok(request_id=urgent)
    stream.read_until(a, b"URGENT", timeout=30)
    assert len(stream.data) < FILLER  # only what the kernel had already taken
    assert b"QUEUED" not in stream.data


@pytest.mark.clause("L1.md §7 interrupts")
def test_an_urgent_interrupt_reaches_a_program_whose_input_is_full(
    connect: Connect, cleanup: list[int]
) -> None:
    """A program that never reads, its tty's input full (not canonical: a canonical tty
    drops what passes its line, so it never stays full): the urgent C-c must not wait
    behind input it never reads. The server discards the unread input for it, as a tty
    does on an interrupt, and the program gets its SIGINT."""
    a = connect()
    script = "stty -icanon -echo; printf READY; exec sleep 600"
    t = spawn(a, cleanup, ["/bin/sh", "-c", script])
    stream = subscribe(a, t.terminal, input=True)
    if b"READY" not in stream.checkpoint:
        stream.read_until(a, b"READY")
    filler = a.rid()
    a.send(Input(request_id=filler, terminal=t.terminal, data=b"f" * FILLER))
    # Once some of it is written the rest waits for room that never comes (the
    # program does not read): the urgent C-c finds the filler stuck mid-write.
    a.expect(
        lambda f: isinstance(f, InputWritten) and f.terminal == t.terminal, what="INPUT_WRITTEN"
    )
    urgent = a.rid()
    a.send(Input(request_id=urgent, terminal=t.terminal, data=b"\x03", urgent=True))
    check_error(a.reply(filler), ErrorCode.INPUT_CANCELLED, filler)
    assert a.reply(urgent, timeout=30) == Ok(request_id=urgent)
    closed = stream.read_until_closed(a, timeout=30)
    assert getattr(closed.status, "signal", None) == 2, closed


@pytest.mark.clause("L1.md §7 interrupts", "proto.md §10 older minors")
def test_urgent_input_keeps_an_older_clients_input(
    connect: Connect, cleanup: list[int], gate: str
) -> None:
    """A 1.1 client does not know INPUT_CANCELLED: its input is only overtaken."""
    a, b = connect(), connect()
    old = connect(hello=False)
    major, _, _ = PROTOCOL_VERSION
    old.send(Hello(client_name="older", major=major, minor=1, patch=0))  # before 1.2
    assert isinstance(old.expect(lambda f: True, what="HELLO_OK"), HelloOk)
    t = spawn(a, cleanup, gated_cat(gate))
    stream = subscribe(a, t.terminal)
    raw(a, stream)
    filler = old.rid()
    old.send(Input(request_id=filler, terminal=t.terminal, data=b"f" * FILLER))
    queued = old.rid()
    old.send(Input(request_id=queued, terminal=t.terminal, data=b"QUEUED"))
    old.poll(0.2)
    urgent = b.rid()
    b.send(Input(request_id=urgent, terminal=t.terminal, data=b"URGENT", urgent=True))
    b.poll(0.2)
    open(gate, "w").close()
    assert b.reply(urgent, timeout=30) == Ok(request_id=urgent)
    assert old.reply(filler, timeout=30) == Ok(request_id=filler)
    assert old.reply(queued, timeout=30) == Ok(request_id=queued)
    stream.read_until(a, b"QUEUED", timeout=30)
    data = bytes(stream.data)
    assert data.count(b"f") >= FILLER  # (the tty may echo some before stty -echo ran)
    assert data.index(b"URGENT") < data.index(b"QUEUED")


@pytest.mark.clause("L1.md §7")
def test_input_queued_when_its_terminal_exits_is_answered_terminal_exited(
    conn: Conn, cleanup: list[int], gate: str
) -> None:
    """INPUT the program never took before it exited: TERMINAL_EXITED, not OK."""
    t = spawn(
        conn,
        cleanup,
        [
            "/bin/sh",
            "-c",
            f"stty raw -echo; printf READY; while [ ! -e {gate} ]; do sleep 0.01; done",
        ],
    )
    stream = subscribe(conn, t.terminal)
    raw(conn, stream)
    filler = conn.rid()
    conn.send(Input(request_id=filler, terminal=t.terminal, data=b"f" * FILLER))
    queued = conn.rid()
    conn.send(Input(request_id=queued, terminal=t.terminal, data=b"QUEUED"))
    conn.poll(0.2)
    open(gate, "w").close()  # it exits without reading any of it
    check_error(conn.reply(filler, timeout=30), ErrorCode.TERMINAL_EXITED, filler)
    check_error(conn.reply(queued, timeout=30), ErrorCode.TERMINAL_EXITED, queued)

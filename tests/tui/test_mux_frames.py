"""The multiplexer's frame policy, in process against a real server: an echo in the
pane the person types into goes out in a frame of its own, and a pane subscribed
afresh (after its flood was skipped) keeps its connection. One server for the module."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator

import pytest

from phux.client import Deadline
from phux.tui import mux_draw
from phux.tui.keys import parse_detach_key
from phux.tui.mux import Mux

from .conftest import PhuxServer, short_tmpdir

WAIT = 10.0


CONNECTION_QUEUE = 256 * 1024
"""The server's bound on what waits for one connection (DETACHED past it): small, for
a pane's connection that does not read during a flood to be dropped."""


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    directory = short_tmpdir()
    srv = PhuxServer(directory)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PHUX_MAX_CONNECTION_QUEUE", str(CONNECTION_QUEUE))
            srv.start()
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def mux(server: PhuxServer, request: pytest.FixtureRequest) -> Iterator[Mux]:
    """A multiplexer on a session of two panes (``cat``, active, and ``sh``), its
    bootstraps taken and a first frame drawn."""
    name = request.node.name[-12:].replace("_", "")
    server.new(name, ["cat"])
    assert server.phux("split", name, "--", "sh").returncode == 0
    client = server.client()
    pane = client.resolve(f"{name}:0.0", Deadline.after(WAIT))
    devnull = os.open(os.devnull, os.O_WRONLY)
    m = Mux(
        client,
        client.connection(Deadline.after(WAIT)),
        parse_detach_key(None),
        pane,
        out_fd=devnull,
        size=(80, 20),
    )
    m.start()
    m.select_pane(pane.terminal)
    try:
        pump(m, lambda: len(m.views) == 2 and all(v.mirror.ready for v in m.views.values()))
        m.render()
        m.out.clear()
        yield m
    finally:
        m.close()
        client.close()
        os.close(devnull)
        with server.client() as c:
            c.kill(name, Deadline.after(WAIT))


def pump(mux: Mux, done: Callable[[], bool]) -> None:
    """Read and handle the frames of every connection until ``done()`` (bounded)."""
    deadline = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for conn in mux.connections():
            if not conn.closed:
                while mux.take_frames(conn, 64):
                    pass
        mux.collect_acks()
        time.sleep(0.005)


def screen_has(mux: Mux, tid: int, text: str) -> bool:
    engine = mux.views[tid].mirror.engine
    return engine is not None and any(text in line for line in engine.project().lines)


def test_an_echo_goes_out_before_the_other_panes_news(
    server: PhuxServer, mux: Mux, monkeypatch: pytest.MonkeyPatch
) -> None:
    active = mux.active[mux.window]
    other = next(tid for tid in mux.views if tid != active)

    def other_prints(text: str) -> None:
        assert server.phux("send-keys", mux.views[other].pane.id, text).returncode == 0
        pump(mux, lambda: screen_has(mux, other, text))

    mux.others_at = 0.0
    other_prints("OTHERNEWS")
    mux.on_keys(b"ECHOED")
    pump(mux, lambda: mux.views[active].mirror.held_bytes > 0 or screen_has(mux, active, "ECHOED"))
    mux.render()
    first = bytes(mux.out)
    mux.out.clear()
    assert b"ECHOED" in first and b"OTHERNEWS" not in first
    assert mux.dirty  # the other pane is owed a frame ...
    monkeypatch.setattr(mux_draw, "OTHERS_INTERVAL", 60.0)
    mux.render()
    assert b"OTHERNEWS" in mux.out  # ... and has it next
    mux.out.clear()
    # Within OTHERS_INTERVAL of that, the other pane's news waits (a flood there is
    # drawn at most so often), and a frame stays owed.
    other_prints("LATER")
    mux.render()
    assert b"LATER" not in mux.out and mux.dirty
    mux.others_at = 0.0
    mux.render()
    assert b"LATER" in mux.out


def test_a_skipped_pane_is_subscribed_afresh_on_its_own_connection(
    server: PhuxServer, mux: Mux
) -> None:
    active = mux.active[mux.window]
    view = mux.views[active]
    conn, old = view.conn, view.mirror
    assert conn is not None
    mux.on_keys(b"BEFORE")
    pump(mux, lambda: screen_has(mux, active, "BEFORE"))
    view.skipped = True
    view.mirror.last_output -= 1.0  # quiet for longer than QUIET_RESYNC
    mux.resync()
    assert view.conn is conn and not conn.closed
    assert view.mirror is not old and not view.skipped
    pump(mux, lambda: view.mirror.ready and screen_has(mux, active, "BEFORE"))
    mux.on_keys(b"AFTER")
    pump(mux, lambda: screen_has(mux, active, "BEFOREAFTER"))
    pump(mux, lambda: not mux.pane_acks)  # the UNSUBSCRIBE was answered and taken


def test_copy_mode_stays_on_its_text_when_the_pane_reflows(mux: Mux) -> None:
    # In the sh pane, printed by seq: lines typed into cat would show twice (the tty's
    # echo and cat's copy), interleaved as the machine's load has it, and the search
    # below would land on either.
    active = next(tid for tid in mux.views if tid != mux.active[mux.window])
    mux.select_pane(active)
    view = mux.views[active]
    # Lines of 50 characters in a pane ~40 wide: each wraps onto two rows.
    pump(mux, lambda: view.mirror.engine is not None and view.mirror.ready)
    assert view.mirror.engine is not None
    narrow = view.mirror.engine.cols
    assert 25 <= narrow < 50, narrow
    mux.on_keys(b"seq -f 'L%02g-" + b"x" * 45 + b"|' 0 29\r")
    pump(mux, lambda: screen_has(mux, active, "L29-x"))
    mux.enter_copy()
    copy = mux.copy
    assert copy is not None and view.mirror.engine is not None
    copy.feed(b"?L12-\rj")  # the second row of a line L12: cells 40.. of it
    # The person's window widens: the pane is resized (80 wide) and its rows reflow.
    mux.on_resize((160, 20))
    pump(mux, lambda: view.mirror.engine is not None and view.mirror.engine.cols >= 50)
    assert mux.copy is copy and copy.term is view.mirror.engine
    row = copy._line(copy.cy)
    assert row is not None and "".join(row[x].data for x in range(4)) == "L12-"
    assert copy.cx == narrow  # the same cell of the line, now on its one row


def test_a_pane_whose_connection_the_server_drops_is_subscribed_again(
    server: PhuxServer, mux: Mux
) -> None:
    active = mux.active[mux.window]
    other = next(tid for tid in mux.views if tid != active)
    view = mux.views[other]
    dropped = view.conn
    assert dropped is not None
    # The other pane floods while this client reads nothing: its connection passes the
    # server's bound and is detached (a slow consumer).
    done = server.dir / f"flood-{other}"
    flood = f"head -c {16 * CONNECTION_QUEUE} /dev/zero | tr '\\0' x; touch {done}"
    assert server.phux("send-keys", view.pane.id, flood, "Enter").returncode == 0
    deadline = time.monotonic() + WAIT
    while not done.exists():
        assert time.monotonic() < deadline, "the flood did not finish"
        time.sleep(0.02)
    pump(mux, lambda: dropped.closed and view.mirror.ready)
    assert mux.outcome is None  # the attach goes on ...
    assert mux.message is not None and "connection dropped (slow_consumer" in mux.message
    assert view.conn is not dropped and view.conn is not None and not view.conn.closed
    # ... the other pane shows its screen again, and the person's pane still echoes.
    pump(mux, lambda: screen_has(mux, other, "xxxx"))
    mux.on_keys(b"STILL-HERE")
    pump(mux, lambda: screen_has(mux, active, "STILL-HERE"))

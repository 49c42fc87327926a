"""The multiplexer's frame policy, in process against a real server: an echo in the
pane the person types into goes out in a frame of its own, and a pane subscribed
afresh (after its flood was skipped) keeps its connection. One server for the module."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from phux.client import Deadline
from phux.tui import mux_draw
from phux.tui.keys import parse_detach_key
from phux.tui.mux import Mux
from phux.tui.mux_state import FRAME_INTERVAL, OTHERS_STARVED

from .conftest import PhuxServer, running_server

WAIT = 10.0


CONNECTION_QUEUE = 256 * 1024
"""The server's bound on what waits for one connection (DETACHED past it): small, for
a pane's connection that does not read during a flood to be dropped."""


@pytest.fixture(scope="module")
def server() -> Iterator[PhuxServer]:
    yield from running_server(PHUX_MAX_CONNECTION_QUEUE=str(CONNECTION_QUEUE))


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

    other_prints("OTHERNEWS")
    mux.on_keys(b"ECHOED")
    pump(mux, lambda: mux.views[active].mirror.held_bytes > 0 or screen_has(mux, active, "ECHOED"))
    mux.others_at = time.monotonic()  # the others are due (and not owed for long)
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


def test_drawing_the_other_panes_stops_for_the_persons_news(server: PhuxServer, mux: Mux) -> None:
    active = mux.active[mux.window]
    other = next(tid for tid in mux.views if tid != active)
    assert server.phux("send-keys", mux.views[other].pane.id, "FIRSTNEWS").returncode == 0
    pump(mux, lambda: screen_has(mux, other, "FIRSTNEWS"))
    # A key or an echo waits to be read while the others are drawn: the frame ends
    # before them, writes nothing, and they stay owed (and due).
    mux.news_waiting = lambda: True
    due = mux.others_at = time.monotonic()
    assert mux.render() is False
    assert b"FIRSTNEWS" not in mux.out and mux.dirty and mux.others_at == due
    mux.news_waiting = lambda: False
    assert mux.render() is True
    assert b"FIRSTNEWS" in mux.out
    mux.out.clear()
    # Owed a frame for OTHERS_STARVED, they are drawn whatever waits.
    assert server.phux("send-keys", mux.views[other].pane.id, "STARVED").returncode == 0
    pump(mux, lambda: screen_has(mux, other, "STARVED"))
    mux.news_waiting = lambda: True
    mux.others_at = time.monotonic() - OTHERS_STARVED
    assert mux.render() is True
    assert b"STARVED" in mux.out


def test_the_other_panes_connections_are_read_when_they_are_drawn(mux: Mux) -> None:
    active = mux.active[mux.window]
    other = next(tid for tid in mux.views if tid != active)
    now = time.monotonic()
    mux.others_at = now + 1.0
    assert mux.read_later(now) == {mux.views[other].conn}
    mux.others_at = now
    assert mux.read_later(now) == set()


def test_a_flood_in_a_pane_not_typed_into_converges_to_its_exact_screen(
    server: PhuxServer, mux: Mux
) -> None:
    """The loop itself (run_loop: its connections read when drawn, the flood skipped
    and subscribed afresh once quiet) shows the flooded pane as the server has it."""
    from phux.tui.mux import run_loop

    active = mux.active[mux.window]
    other = next(tid for tid in mux.views if tid != active)
    view = mux.views[other]
    done = server.dir / f"flood-{other}"
    flood = f"seq 1 100000; touch {done}"
    assert server.phux("send-keys", view.pane.id, flood, "Enter").returncode == 0
    expected: list[list[str]] = []
    keys_r, keys_w = os.pipe()
    wake_r, wake_w = os.pipe()

    def watch() -> None:
        """The server's screen of the pane once the flood is over; the end of the
        loop (its input closed) if it does not converge in time (a loaded CI machine
        took over 10 s: the flood, the snapshots and the loop share two cores)."""
        deadline = time.monotonic() + 3 * WAIT
        try:
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            with server.client() as c:
                while time.monotonic() < deadline and not expected:
                    state = c.snapshot(view.pane.id, deadline=Deadline.after(WAIT))
                    if "100000" in state.lines[-2:]:  # (then the shell's prompt)
                        expected.append(state.lines)
                    time.sleep(0.02)
            while time.monotonic() < deadline and mux.outcome is None:
                time.sleep(0.02)
        finally:
            os.close(keys_w)

    render = mux.render

    def render_and_compare() -> bool:
        drawn = render()
        engine = mux.views[other].mirror.engine
        if expected and engine is not None and engine.project().lines == expected[0]:
            mux.finish("converged", "", 0)
        return drawn

    mux.render = render_and_compare  # type: ignore[method-assign]
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run_loop(mux, keys_r, wake_r, {"cont": False, "winch": False}, None)
    finally:
        watcher.join(3 * WAIT + 5)
        for fd in (keys_r, wake_r, wake_w):
            os.close(fd)
    engine = mux.views[other].mirror.engine
    shown = None if engine is None else engine.project().lines
    assert mux.outcome is not None and mux.outcome.reason == "converged", (
        mux.outcome,
        expected[:1] or "the server's screen never showed the flood's end",
        shown,
    )


def test_the_frames_wait_for_the_echo_of_a_key_and_it_for_none(
    server: PhuxServer, mux: Mux
) -> None:
    active = mux.active[mux.window]
    now = time.monotonic()
    mux.others_at = now  # the others are due
    assert mux.echo_hold(now) is None  # nothing typed
    mux.on_keys(b"K")
    held = mux.echo_hold(time.monotonic())
    assert held is not None and held == mux.echo_due > now
    # A slow echo: owed a frame for OTHERS_STARVED, the others wait no longer.
    mux.echo_due = now + 10.0
    assert mux.echo_hold(now + OTHERS_STARVED / 2) == mux.echo_due
    assert mux.echo_hold(now + OTHERS_STARVED + 0.01) is None
    # The echo came: the frame is drawn (the active pane's news first).
    pump(mux, lambda: mux.views[active].mirror.held_bytes > 0 or screen_has(mux, active, "K"))
    assert mux.echo_due == 0.0 and mux.echo_hold(time.monotonic()) is None
    # ... at once, however recent the last frame, while the cap has frames in hand ...
    mux.drew(now)
    assert mux.echo_news and mux.frame_at(now) == now
    assert mux.render() is True
    mux.drew(now)
    assert not mux.echo_news and mux.frame_at(now) == mux.next_frame == now + FRAME_INTERVAL
    # ... and not when it has none: frames stay one per FRAME_INTERVAL over time.
    mux.on_keys(b"L")
    pump(mux, lambda: mux.echo_news)
    spare = mux.spare_frames(now)
    assert spare < 1 and mux.frame_at(now) == pytest.approx(
        now + (1 - spare) * FRAME_INTERVAL, rel=0, abs=1e-9
    )

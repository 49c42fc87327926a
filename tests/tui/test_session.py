"""The attach Session's frame handling, in process, with a fake connection.

What the person sees is modelled by a second engine fed the bytes attach
writes (``Person``), so each test checks the screen, not the escape codes.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phux.client.selectors import Pane
from phux.engine import Terminal
from phux.tui.keys import parse_detach_key
from phux.tui.single import Session
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Detached,
    Exited,
    Frame,
    Input,
    Output,
    Resize,
    Resized,
    Role,
    Signaled,
    Subscribe,
    TerminalClosed,
    Tombstone,
)

TID = 3


class FakeConn:
    def __init__(self) -> None:
        self.sent: list[Frame] = []
        self.rid = 100

    def submit(self, make: Callable[[int], Frame], deadline: object = None) -> int:
        self.rid += 1
        self.sent.append(make(self.rid))
        return self.rid

    def take_reply(self, rid: int) -> Frame | None:
        return None


class Person:
    """The person's terminal: an engine of the window's size fed attach's output."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.term = Terminal(*session.win)

    def see(self) -> list[str]:
        self.term.feed(bytes(self.session.out))
        self.session.out.clear()
        return self.term.project().lines


def make(size: tuple[int, int] = (20, 5)) -> tuple[Session, FakeConn, Person]:
    conn = FakeConn()
    pane = Pane(terminal=TID, alive=True, cols=20, rows=5, pid=1, session="work")
    session = Session(
        conn,  # type: ignore[arg-type]
        pane,
        parse_detach_key(None),
        in_fd=-1,
        out_fd=-1,
        size=size,
    )
    session.subscribe()
    return session, conn, Person(session)


def feed(session: Session, *frames: Frame) -> None:
    for frame in frames:
        session.handle(frame)
    session.after_batch()


def bootstrap(session: Session, data: bytes, cols: int = 20, rows: int = 5, rid: int = -1) -> None:
    rid = session.request_id if rid < 0 else rid
    feed(
        session,
        BootstrapBegin(request_id=rid, terminal=TID, start_seq=0, cols=cols, rows=rows),
        BootstrapChunk(terminal=TID, seq=0, data=data),
        BootstrapReady(terminal=TID, next_seq=len(data), cols=cols, rows=rows),
    )


def test_subscribes_as_primary_with_the_window_size() -> None:
    _, conn, _ = make((33, 11))
    (sub,) = conn.sent
    assert isinstance(sub, Subscribe)
    assert (sub.role, sub.cols, sub.rows, sub.terminal) == (Role.PRIMARY, 33, 11, TID)


def test_bootstrap_is_painted_then_output_passes_through_without_queries() -> None:
    session, _, person = make()
    session.handle(BootstrapBegin(request_id=999, terminal=TID, start_seq=0, cols=20, rows=5))
    assert session.state == "subscribing"  # not our subscription's bootstrap
    bootstrap(session, b"\x1b[6nboot \x1b[1mtext")
    assert person.see()[0] == "boot text"
    feed(session, Output(terminal=TID, seq=14, data=b"\x1b[c more"))
    assert bytes(session.out) == b" more"
    assert person.see()[0] == "boot text more"
    # A duplicate or overlapping frame adds only what is new.
    feed(session, Output(terminal=TID, seq=14, data=b"\x1b[c more!"))
    assert bytes(session.out) == b"!"
    feed(session, Output(terminal=TID, seq=99, data=b"x"), Output(terminal=4, seq=0, data=b"y"))
    assert person.see()[0] == "boot text more!x"


def test_resize_repaints_and_another_size_switches_to_a_view() -> None:
    session, conn, person = make((20, 5))
    bootstrap(session, b"line1\r\nline2")
    feed(session, Resized(terminal=TID, seq=12, cols=20, rows=5))
    assert person.see()[:2] == ["line1", "line2"]
    # Another person's size: the window shows a view of the engine, not raw bytes.
    feed(session, Resized(terminal=TID, seq=12, cols=40, rows=3))
    assert not session.passthrough
    feed(session, Output(terminal=TID, seq=12, data=b"\r\n" + b"w" * 30))
    lines = person.see()
    assert lines[2] == "w" * 20  # clipped to the window
    assert lines[3:] == ["", ""]
    # Typing takes the size back (RESIZE before the INPUT).
    conn.sent.clear()
    session.on_keys(b"k")
    assert isinstance(conn.sent[0], Resize) and (conn.sent[0].cols, conn.sent[0].rows) == (20, 5)
    assert isinstance(conn.sent[1], Input) and conn.sent[1].data == b"k"
    feed(session, Resized(terminal=TID, seq=44, cols=20, rows=5))
    assert session.passthrough


def test_tombstone_then_fresh_bootstrap_repaints() -> None:
    session, _, person = make()
    bootstrap(session, b"old")
    feed(session, Tombstone(terminal=TID, reason=1, lost_seq=3))
    feed(session, Output(terminal=TID, seq=3, data=b"dropped"))
    assert person.see()[0] == "old"
    fresh = b"\x1b[2J\x1b[Hnew state"
    bootstrap(session, fresh, rid=0)
    assert person.see()[0] == "new state"


def test_checkpoint_chunk_starts_a_fresh_engine() -> None:
    session, _, person = make()
    feed(
        session,
        BootstrapBegin(request_id=session.request_id, terminal=TID, start_seq=50, cols=20, rows=5),
        BootstrapChunk(terminal=TID, seq=50, data=b"from checkpoint", checkpoint=True),
        BootstrapChunk(terminal=TID, seq=50, data=b"+journal"),
        BootstrapReady(terminal=TID, next_seq=58, cols=20, rows=5),
    )
    assert person.see()[0] == "from checkpoint+jour"


def test_exit_and_server_gone_and_detach_outcomes() -> None:
    session, _, _ = make()
    bootstrap(session, b"$ ")
    feed(session, TerminalClosed(terminal=TID, status=Exited(code=3), final_seq=2))
    assert session.outcome is not None
    assert session.outcome.message == "[work: exited with status 3]"

    session, _, _ = make()
    bootstrap(session, b"$ ")
    feed(session, TerminalClosed(terminal=TID, status=Signaled(signal=9), final_seq=2))
    assert session.outcome is not None
    assert session.outcome.message == "[work: killed by signal 9]"

    session, _, _ = make()
    feed(session, Detached(reason=2))
    assert session.outcome is not None and session.outcome.reason == "server_gone"

    session, conn, _ = make()
    bootstrap(session, b"$ ")
    session.on_keys(b"ls\x02")
    session.on_keys(b"d")
    assert session.outcome is not None
    assert session.outcome.message == ("[detached from work (@3); reattach with: phux attach work]")
    assert [f.data for f in conn.sent if isinstance(f, Input)] == [b"ls"]


def test_closed_terminal_bootstrap_ends_at_once() -> None:
    session, _, person = make()
    rid = session.request_id
    feed(
        session,
        BootstrapBegin(request_id=rid, terminal=TID, start_seq=0, cols=20, rows=5),
        BootstrapChunk(terminal=TID, seq=0, data=b"last words"),
        BootstrapReady(
            terminal=TID, next_seq=10, cols=20, rows=5, alive=False, exit=Exited(code=0)
        ),
    )
    assert person.see()[0] == "last words"
    assert session.outcome is not None and "exited with status 0" in session.outcome.message


def test_leaving_restores_the_screen() -> None:
    session, _, person = make()
    bootstrap(session, b"main\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b[?25l")
    person.see()
    assert person.term.alternate
    session.out += session.leave_bytes()
    person.see()
    assert not person.term.alternate
    modes = person.term.modes
    assert modes.cursor_visible and not modes.app_cursor and not modes.bracketed_paste
    assert person.term.project().lines[0] == "main"


def test_large_bootstrap_paints_a_preview_then_the_exact_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from phux.tui import single

    monkeypatch.setattr(single, "FIRST_PAINT_WAIT", 0.0)
    session, _, person = make()
    lines = b"".join(b"line %d\r\n" % i for i in range(20_000)) + b"\x1b[?1h$ "
    rid = session.request_id
    for frame in (
        BootstrapBegin(request_id=rid, terminal=TID, start_seq=0, cols=20, rows=5),
        BootstrapChunk(terminal=TID, seq=0, data=lines),
        BootstrapReady(terminal=TID, next_seq=len(lines), cols=20, rows=5),
    ):
        session.handle(frame)
    session.after_batch(0.0)  # no time for the engine: a preview from the tail
    assert not session.synced
    assert person.see()[-2:] == ["line 19999", "$"]
    assert session.passthrough and session.need_full
    # Live output passes through while the engine catches up ...
    session.handle(Output(terminal=TID, seq=len(lines), data=b"ls"))
    session.after_batch(0.0)
    assert person.see()[-1] == "$ ls"
    # ... and once it has, the exact paint follows (modes the tail never saw).
    while not session.synced:
        session.after_batch(0.01)
    assert person.see()[-2:] == ["line 19999", "$ ls"]
    assert person.term.modes.app_cursor
    assert not session.need_full


def test_passthrough_tracks_the_alternate_screen() -> None:
    session, _, _ = make()
    bootstrap(session, b"$ ")
    feed(session, Output(terminal=TID, seq=2, data=b"\x1b[?1049h\x1b[H"))
    assert session.user_alt
    feed(session, Output(terminal=TID, seq=13, data=b"\x1b[?1049l"))
    assert not session.user_alt


def test_a_huge_backlog_resubscribes() -> None:
    from phux.tui import single

    session, conn, _ = make()
    bootstrap(session, b"$ ")
    conn.sent.clear()
    big = b"y\r\n" * (single.MAX_BACKLOG // 3 + 10)
    session.handle(Output(terminal=TID, seq=2, data=big))
    session.after_batch(0.0)
    kinds = [type(f).__name__ for f in conn.sent]
    assert kinds == ["Unsubscribe", "Subscribe"]
    assert session.state == "subscribing" and session.synced
    # The fresh bootstrap brings the screen back.
    bootstrap(session, b"\x1b[2J\x1b[Hfresh")
    assert session.passthrough


def test_a_refused_subscribe_ends_the_attach() -> None:
    from phux.client.errors import ServerError
    from phux.wire.errors import ErrorCode

    session, conn, _ = make()

    def refuse(rid: int) -> Frame | None:
        if rid == session.request_id:
            raise ServerError(ErrorCode.TERMINAL_EXITED, "terminal 3 has exited")
        return None

    conn.take_reply = refuse  # type: ignore[method-assign]
    session.collect_acks()
    assert session.outcome is not None
    assert session.outcome.message == "[work: terminal 3 has exited]"
    assert session.outcome.exit_code == 1

"""Copy mode in the attach Session, in process (the helpers of test_session: a
fake connection, and the person's terminal modelled by an engine fed what attach
writes)."""

from __future__ import annotations

from phux.tui.single import WHEEL_OFF, WHEEL_ON
from phux.wire.frames import Input, Output, Tombstone

from .test_session import bootstrap, feed, make

TID = 3
LINES = b"".join(b"line %d\r\n" % i for i in range(40)) + b"$ "


def inputs(conn: object) -> list[bytes]:
    return [f.data for f in conn.sent if isinstance(f, Input)]  # type: ignore[attr-defined]


def test_prefix_bracket_freezes_the_view_and_q_shows_the_live_screen() -> None:
    session, conn, person = make((20, 5))
    bootstrap(session, LINES)
    assert person.see()[-1] == "$"
    session.on_keys(b"\x02[")
    session.after_batch()
    assert session.copy is not None
    assert person.see()[0].endswith("[0/36]")
    session.on_keys(b"\x05\x19\x19\x19\x19k")  # copy-mode keys: none reach the program
    session.after_batch()
    assert person.see()[0].startswith("line 32")
    assert inputs(conn) == []
    # Output keeps feeding the engine; the person's rows stay.
    session.handle(Output(terminal=TID, seq=len(LINES), data=b"echo new\r\nnew\r\n$ "))
    assert b"new" not in session.out  # not passed through over the view
    session.copy_dirty = True  # (repaint now, not COPY_REPAINT later)
    session.after_batch()
    seen = person.see()
    assert seen[0].startswith("line 32") and seen[0].endswith("[6/38]")
    assert "new" not in seen
    session.on_keys(b"q")
    session.after_batch()
    assert session.copy is None
    assert person.see()[-3:] == ["$ echo new", "new", "$"]
    session.on_keys(b"x")
    assert inputs(conn) == [b"x"]


def test_copy_reaches_the_person_only_with_the_clipboard_allowed() -> None:
    for allowed in (False, True):
        session, _, person = make((20, 5))
        session.filter.allow_clipboard = allowed
        bootstrap(session, LINES)
        person.see()
        session.on_keys(b"\x02[k0 $\r")
        session.after_batch()
        out = bytes(session.out)
        assert (b"\x1b]52;c;bGluZSAzOQ==\x07" in out) is allowed  # "line 39"
        assert (session.copy is None) is allowed  # Enter left only when it copied


def test_the_wheel_enters_copy_mode_and_reports_never_reach_the_program() -> None:
    session, conn, person = make((20, 5))
    session.mouse = True  # --mouse (a single pane's attach leaves the mouse alone)
    bootstrap(session, LINES)
    assert session.wheel_on and WHEEL_ON in bytes(session.out)
    person.see()
    assert person.term.modes.mouse and person.term.modes.mouse_sgr
    session.on_keys(b"\x1b[<0;3;3Mab\x1b[<0;3;3m")  # a click: dropped, the keys pass
    assert inputs(conn) == [b"ab"] and session.copy is None
    session.on_keys(b"\x1b[<64;3;3M")
    session.after_batch()
    assert session.copy is not None and session.copy.position == (5, 36)
    assert person.see()[0].endswith("[5/36]")
    session.on_keys(b"\x1b[<65;3;3M")  # back at the bottom: entered by the wheel, it leaves
    session.after_batch()
    assert session.copy is None
    assert inputs(conn) == [b"ab"]


def test_a_program_asking_for_mouse_reports_gets_its_own() -> None:
    session, conn, person = make((20, 5))
    session.mouse = True  # --mouse (a single pane's attach leaves the mouse alone)
    other = b"\x1b[?2004h\x1b[?1049h\x1b[?1049l"  # modes, but not the mouse's
    bootstrap(session, b"$ " + other)
    person.see()
    feed(session, Output(terminal=TID, seq=2 + len(other), data=other))
    assert WHEEL_OFF not in session.out and session.wheel_on
    person.see()
    # X10 encoding (no 1006): attach's SGR request must not stay on.
    program = b"\x1b[?1000h"
    feed(session, Output(terminal=TID, seq=2 + 2 * len(other), data=program))
    out = bytes(session.out)
    assert out.startswith(WHEEL_OFF + program)
    person.see()
    assert person.term.modes.mouse and not person.term.modes.mouse_sgr
    assert not session.wheel_on
    session.on_keys(b"\x1b[<64;3;3M")  # the program's now: passed on, no copy mode
    assert session.copy is None and inputs(conn) == [b"\x1b[<64;3;3M"]
    # It stops asking: attach asks again.
    feed(session, Output(terminal=TID, seq=2 + 2 * len(other) + len(program), data=b"\x1b[?1000l"))
    assert session.wheel_on
    person.see()
    assert person.term.modes.mouse_sgr


def test_no_reports_asked_for_over_the_alternate_screen() -> None:
    """A pager in the alternate screen keeps the terminal's own wheel (arrow keys)."""
    session, _, person = make((20, 5))
    session.mouse = True  # --mouse (a single pane's attach leaves the mouse alone)
    bootstrap(session, b"\x1b[?1049hless")
    person.see()
    assert not session.wheel_on and not person.term.modes.mouse


def test_without_mouse_a_single_panes_attach_leaves_the_terminals_wheel_alone() -> None:
    """Issue 25 item 7: nothing changes for a person who never splits, unless --mouse."""
    session, _conn, person = make((20, 5))
    bootstrap(session, LINES)
    person.see()
    assert not session.wheel_on and WHEEL_ON not in bytes(session.out)
    assert not person.term.modes.mouse


def test_the_key_reader_gives_copy_mode_then_the_keys_after_it() -> None:
    from phux.tui.keys import Command, KeyReader, parse_detach_key

    reader = KeyReader(parse_detach_key(None))
    assert reader.feed(b"ab\x02[kq") == [b"ab", Command("copy-mode"), b"kq"]
    assert reader.feed(b"x\x02") == [b"x"]  # the prefix at a read's end
    assert reader.feed(b"[") == [Command("copy-mode")]
    assert reader.feed(b"\x02\x02\x02y\x02d") == [b"\x02\x02y", Command("detach")]


def test_a_copy_repaint_is_held_back_under_output_and_never_spins() -> None:
    session, _, person = make((20, 5))
    bootstrap(session, LINES)
    session.on_keys(b"\x02[")
    session.after_batch()
    person.see()
    assert session.wake_in() is None  # nothing to paint: the loop sleeps
    feed(session, Output(terminal=TID, seq=len(LINES), data=b"x\r\n"))
    wait = session.wake_in()
    assert wait is not None and 0 < wait <= 0.05  # the indicator, a little later
    feed(session, Tombstone(terminal=TID, reason=1, lost_seq=len(LINES) + 3))
    assert session.wake_in() is None  # until the fresh bootstrap: nothing to wait for
    bootstrap(session, b"fresh", rid=0)
    assert session.copy is None  # the engine it showed is gone
    assert person.see()[0] == "fresh"

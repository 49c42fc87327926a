"""The kitty keyboard protocol's flags, as kitty's specification states them.

``CSI > flags u`` pushes (flags default 0), ``CSI < n u`` pops n (default 1;
popping everything resets the flags), ``CSI = flags ; mode u`` sets (mode 1,
the default: all bits; 2: set the given bits; 3: reset them), ``CSI ? u`` is
answered ``CSI ? flags u``. The main and alternate screens keep separate
stacks; a full stack evicts its oldest entry.
"""

from __future__ import annotations

from phux.engine import Terminal
from phux.engine._modes import KITTY_STACK
from phux.engine.checkpoint import write_checkpoint


def flags(t: Terminal) -> int:
    t.feed(b"\x1b[?u")
    reply = t.take_replies()
    assert reply.startswith(b"\x1b[?") and reply.endswith(b"u"), reply
    value = int(reply[3:-1])
    assert t.modes.kitty_keys == value
    return value


def test_push_pop_set_and_query() -> None:
    t = Terminal(20, 4)
    assert flags(t) == 0
    t.feed(b"\x1b[>1u")
    assert flags(t) == 1
    t.feed(b"\x1b[>u")  # (flags omitted: 0)
    assert flags(t) == 0
    t.feed(b"\x1b[<u")
    assert flags(t) == 1
    t.feed(b"\x1b[=8;2u")
    assert flags(t) == 9
    t.feed(b"\x1b[=1;3u")
    assert flags(t) == 8
    t.feed(b"\x1b[=5u")
    assert flags(t) == 5
    t.feed(b"\x1b[<5u")  # more than the stack holds: all flags reset
    assert flags(t) == 0
    t.feed(b"\x1b[=3;2u")  # (setting with an empty stack)
    assert flags(t) == 3


def test_the_main_and_alternate_screens_keep_their_own_stacks() -> None:
    t = Terminal(20, 4)
    t.feed(b"\x1b[>1u\x1b[?1049h")
    assert flags(t) == 0
    t.feed(b"\x1b[>31u")
    assert flags(t) == 31
    t.feed(b"\x1b[?1049l")
    assert flags(t) == 1
    t.feed(b"\x1b[?1049h")  # a fresh alternate screen starts without flags
    assert flags(t) == 0


def test_a_full_stack_evicts_its_oldest_entry_and_a_reset_clears_it() -> None:
    t = Terminal(20, 4)
    t.feed(b"".join(b"\x1b[>%du" % (i % 32) for i in range(1, KITTY_STACK + 3)))
    assert len(t.screen.kitty_stacks[False]) == KITTY_STACK
    t.feed(b"\x1b[<%du" % (KITTY_STACK - 1))
    assert flags(t) == 3  # the entries pushed first (1, 2) were evicted
    t.feed(b"\x1bc")
    assert flags(t) == 0


def test_the_flags_travel_in_a_checkpoint() -> None:
    t = Terminal(20, 4)
    t.feed(b"\x1b[>1u\x1b[>9u\x1b[?1049h\x1b[>5u")
    fresh = Terminal(20, 4)
    fresh.feed(write_checkpoint(t))
    assert fresh.screen.kitty_stacks == t.screen.kitty_stacks
    assert flags(fresh) == 5
    fresh.feed(b"\x1b[?1049l")
    assert flags(fresh) == 9

"""PaneLocks: writers to one pane take turns in ticket (arrival) order, with real threads."""

from __future__ import annotations

import threading
import time

import pytest

from phux.client.deadline import Deadline
from phux.mcp.panes import CallCancelled, PaneInUse, PaneLocks

LIMIT = 5.0


def test_turns_follow_tickets_not_the_order_threads_ask() -> None:
    locks = PaneLocks()
    tickets = [locks.ticket() for _ in range(4)]
    order: list[int] = []
    done = threading.Barrier(5)

    def writer(index: int) -> None:
        with tickets[index].hold(1, "@1", Deadline.after(LIMIT)):
            order.append(index)
        tickets[index].leave()
        done.wait(LIMIT)

    # The last ticket asks first; it must still go last.
    threads = [threading.Thread(target=writer, args=(i,)) for i in (3, 2, 1, 0)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)  # make the reverse asking order real
    done.wait(LIMIT)
    assert order == [0, 1, 2, 3]


def test_other_panes_do_not_wait_and_waited_ms_is_reported() -> None:
    locks = PaneLocks()
    first, second, other = locks.ticket(), locks.ticket(), locks.ticket()
    held = threading.Event()
    release = threading.Event()
    waited: list[int] = []

    def long_writer() -> None:
        with first.hold(1, "@1", Deadline.after(LIMIT)):
            held.set()
            release.wait(LIMIT)
        first.leave()

    def queued() -> None:
        with second.hold(1, "@1", Deadline.after(LIMIT)) as ms:
            waited.append(ms)
        second.leave()

    a = threading.Thread(target=long_writer)
    a.start()
    assert held.wait(LIMIT)
    b = threading.Thread(target=queued)
    b.start()
    # A later ticket for another pane goes at once, past the waiting one.
    with other.hold(2, "@2", Deadline.after(LIMIT)) as ms:
        assert ms < 500
    other.leave()
    time.sleep(0.2)
    release.set()
    a.join(LIMIT)
    b.join(LIMIT)
    assert waited and waited[0] >= 150


def test_an_unresolved_earlier_ticket_holds_back_later_writers() -> None:
    locks = PaneLocks()
    early, late = locks.ticket(), locks.ticket()
    took = threading.Event()

    def later() -> None:
        with late.hold(5, "@5", Deadline.after(LIMIT)):
            took.set()
        late.leave()

    thread = threading.Thread(target=later)
    thread.start()
    assert not took.wait(0.2)  # early has not said which pane it wants yet
    early.leave()  # it failed before resolving (a bad target, say)
    assert took.wait(LIMIT)
    thread.join(LIMIT)


def test_a_turn_that_does_not_come_in_time_is_pane_in_use() -> None:
    locks = PaneLocks()
    holder, waiter = locks.ticket(), locks.ticket()
    with holder.hold(1, "@1", Deadline.after(LIMIT)):
        with pytest.raises(PaneInUse) as caught, waiter.hold(1, "@1", Deadline.after(0.1)):
            pass
        assert caught.value.code == "pane_in_use" and caught.value.waited_ms >= 90
        assert "@1" in caught.value.message and caught.value.remedy
    waiter.leave()
    holder.leave()
    assert locks.busy() == {}
    # The line is clear afterwards: a new ticket goes at once.
    fresh = locks.ticket()
    with fresh.hold(1, "@1", Deadline.after(LIMIT)) as ms:
        assert ms < 100
    fresh.leave()


def test_a_cancelled_ticket_gives_up_instead_of_typing_later() -> None:
    locks = PaneLocks()
    holder, waiter, resolving = locks.ticket(), locks.ticket(), locks.ticket()
    outcome: list[str] = []

    def queued() -> None:
        try:
            with waiter.hold(1, "@1", Deadline.after(LIMIT)):
                outcome.append("typed")
        except CallCancelled:
            outcome.append("cancelled")
        waiter.leave()

    with holder.hold(1, "@1", Deadline.after(LIMIT)):
        thread = threading.Thread(target=queued)
        thread.start()
        time.sleep(0.1)  # let it wait for its turn
        waiter.cancel()
        thread.join(LIMIT)
    holder.leave()
    assert outcome == ["cancelled"]
    # Cancelled before it even resolved: it does not take a free pane either.
    resolving.cancel()
    with pytest.raises(CallCancelled), resolving.hold(2, "@2", Deadline.after(LIMIT)):
        pass
    resolving.leave()
    assert locks.busy() == {}

"""Client.interrupt (from another thread) and drain's reset on a lost connection."""

from __future__ import annotations

import threading
import time

import pytest

from phux.client import Client, ConnectionLost, Deadline

from .conftest import SH, new_shell


def test_interrupt_wakes_a_blocked_call_promptly(client: Client) -> None:
    name = new_shell(client, SH)
    errors: list[BaseException] = []
    started = threading.Event()

    def blocked() -> None:
        started.set()
        try:
            client.wait(name, until="never-printed-text", timeout=30, deadline=Deadline.after(35))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=blocked)
    thread.start()
    started.wait(5)
    time.sleep(0.5)  # the wait is now blocked on the socket
    t0 = time.monotonic()
    client.interrupt()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 2.0
    assert len(errors) == 1 and isinstance(errors[0], ConnectionLost)
    assert "interrupted" in errors[0].message
    # The client forgot the connection: the next call reconnects.
    assert client._conn is None
    assert name in {s.name for s in client.ls(Deadline.after(5))}


def test_interrupt_without_a_connection_is_a_no_op(client: Client) -> None:
    client.interrupt()
    client.interrupt()
    assert client.ls(Deadline.after(5)) is not None


def test_drain_resets_the_connection_when_it_is_lost(client: Client) -> None:
    client.ls(Deadline.after(5))
    conn = client._conn
    assert conn is not None
    conn.interrupt()
    with pytest.raises(ConnectionLost):
        client.drain()
    assert client._conn is None
    assert conn.closed
    client.drain()  # nothing open: a no-op
    assert client.ls(Deadline.after(5)) is not None
    assert client._conn is not None and client._conn is not conn

"""wait on a flooding pane: its mirror holds the flood and feeds the engine in big feeds
(which draw only the rows the history keeps), and still meets text that scrolled far
past the history meanwhile (client/line_scan.py)."""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable, Iterator

import pytest

from phux.client import Client, Deadline
from phux.client.mirror import Mirror
from phux.client.models import WaitResult, event_name

from .conftest import SH, gated_shell, new_shell, released_when_watched, running_server

FLOOD_LINES = 200_000
"""Lines of a flood: many times the mirror's 10 000 rows of history."""
PAST_HISTORY = 20_000
"""Lines after the text waited for: enough to push it out of the mirror's history."""


def _feeds(client: Client) -> Iterator[Mirror]:
    yield from client._mirrors.values()


def _flood_then_wait(
    client: Client, command: str, until: str | None = None, regex: str | None = None
) -> tuple[bool, int, int]:
    """Run ``command`` (it reads FIFO first) in a fresh shell, wait for ``condition``
    while it floods: (met, bytes the mirror took, feeds of its engine).

    A client that falls 4 MiB behind (a loaded machine) is sent a tombstone: the
    output dropped for it before the fresh bootstrap's checkpoint is never searched
    (a known limit, ARCHITECTURE.md; the wait counts it), so a run that got one
    proves nothing and is made again (at most three times)."""
    for _ in range(3):
        met, received, feeds, tombstones = _one_flood_then_wait(client, command, until, regex)
        if not tombstones:
            break
    assert not tombstones, "every try fell behind the flood (a tombstone)"
    return met, received, feeds


def _one_flood_then_wait(
    client: Client, command: str, until: str | None, regex: str | None
) -> tuple[bool, int, int, int]:
    with gated_shell(client) as (name, fifo):
        client.send_keys(name, [command.replace("FIFO", fifo), "Enter"], Deadline.after(5))
        assert client.wait(name, until="waiting", timeout=10, deadline=Deadline.after(15)).met
        thread = released_when_watched(client, name, fifo)
        try:
            kept = Client(client.socket_path, env={}, keep_warm=1)
            with kept:
                waited = kept.wait(
                    name, until=until, regex=regex, timeout=20, deadline=Deadline.after(25)
                )
                # The wait's mirror is kept warm: count what it took and how it fed it.
                mirror = next(_feeds(kept))
                received, feeds = mirror.received, mirror.feeds
                tombstones = mirror.tombstones
        finally:
            thread.join(20)
        return waited.met, received, feeds, tombstones


def test_wait_meets_text_a_flood_pushed_out_of_the_history(client: Client) -> None:
    # The line waited for starts before the wait subscribed (on the cursor's line) and
    # ends after; 200 000 lines follow it at once, far past the mirror's history.
    met, _received, _feeds = _flood_then_wait(
        client,
        f"printf 'waiting\\nxxRES'; cat FIFO >/dev/null; printf 'ULT-42\\n'; seq 1 {PAST_HISTORY}",
        until="xxRESULT-42",
    )
    assert met


def test_wait_regex_meets_a_coloured_line_amid_a_flood(client: Client) -> None:
    # The coloured line comes after a flood the wait reads first, and another follows.
    # Under load the client reads the line, the flood after it and the prompt in one
    # batch: the prompt stops the scan, and the lines before it are searched still.
    met, received, feeds = _flood_then_wait(
        client,
        f"printf 'waiting\\n'; cat FIFO >/dev/null; seq 1 {FLOOD_LINES};"
        f" printf '\\033[1mRESULT-\\033[0m42\\n'; seq 1 {PAST_HISTORY}",
        regex="^RESULT-4[0-9]$",
    )
    assert met
    # Held, not parsed batch by batch: the first flood (~1.3 MB) went to the engine in
    # a few feeds (the bootstrap's, the first look's, the one the result reads), not in
    # one per batch that came.
    assert received > 1_000_000
    assert feeds <= 8, feeds


def test_watch_reads_a_plain_flood_undrawn_and_loses_no_event(client: Client) -> None:
    with gated_shell(client) as (name, fifo):
        client.send_keys(
            name,
            [
                f"printf 'waiting\\n'; cat {fifo} >/dev/null; seq 1 {FLOOD_LINES};"
                " printf '\\033]2;after-the-flood\\007'",
                "Enter",
            ],
            Deadline.after(5),
        )
        client.wait(name, until="waiting", timeout=10, deadline=Deadline.after(15))
        thread = released_when_watched(client, name, fifo)
        titles = []
        try:
            with Client(client.socket_path, env={}) as watcher:
                stream = watcher.watch(name, timeout=20, deadline=Deadline.after(25))
                try:
                    for event in stream:
                        if event_name(event) == "title_changed":
                            titles.append(event.title)  # type: ignore[union-attr]
                            break
                    mirror = next(_feeds(watcher))
                    received, feeds = mirror.received, mirror.feeds
                finally:
                    stream.close()
        finally:
            thread.join(20)
    assert titles == ["after-the-flood"]
    assert received > 1_000_000
    assert feeds <= 8, feeds


def test_watch_reports_a_start_a_foreground_change_left_in_the_engine(client: Client) -> None:
    # sh prints no C mark: its command's start is inferred when the job takes the
    # terminal (TERMINAL_STATE), which puts the event in the engine with only plain
    # output (the echo) around it. It is reported then, not at the next sequence.
    with gated_shell(client, SH) as (name, fifo):
        try:
            with Client(client.socket_path, env={}) as watcher:
                stream = watcher.watch(name, timeout=10, deadline=Deadline.after(15))
                try:
                    client.send_keys(name, [f"cat {fifo}", "Enter"], Deadline.after(5))
                    started = []
                    for event in stream:
                        if event_name(event) == "command_started":
                            started.append(event.command)  # type: ignore[union-attr]
                            break
                finally:
                    stream.close()
        finally:
            with open(fifo, "w") as f:  # (cat goes)
                f.write("x\n")
    assert started == [f"cat {fifo}"]


def test_a_warm_mirror_a_flood_leaves_behind_is_dropped_not_parsed(client: Client) -> None:
    # A client keeps a mirror warm between operations (the MCP adapter does); while it
    # works elsewhere, that pane floods. The mirror drops what it holds past its bound
    # and is unsubscribed; the next operation bootstraps afresh, exactly.
    name = new_shell(client)
    other = new_shell(client)
    with Client(client.socket_path, env={}, keep_warm=2) as warm:
        warm.snapshot(name, deadline=Deadline.after(10))  # (its mirror is kept warm)
        pane = warm.resolve(name, Deadline.after(5))
        mirror = warm._mirrors[pane.terminal]
        feeds = mirror.feeds
        mirror.hold_bytes = 256 << 10  # (its bound: 4 MiB, a flood of 256 KiB will do)
        client.send_keys(name, ["seq 1 100000; echo A-DO''NE", "Enter"], Deadline.after(5))
        deadline = Deadline.after(30)
        while pane.terminal in warm._mirrors and not deadline.expired():
            # Working on another pane meanwhile (each wait pumps the connection).
            warm.wait(other, until="never-shown", timeout=0.2, deadline=Deadline.after(5))
        assert pane.terminal not in warm._mirrors
        assert mirror.stale and mirror.feeds == feeds  # (none of the flood parsed)
        done = warm.wait(name, until="A-DONE", timeout=20, deadline=Deadline.after(25))
        assert done.met
        assert "A-DONE" in "\n".join(done.screen.lines)


def test_after_a_tombstone_a_wait_searches_the_journal_and_counts_the_rest() -> None:
    # The wait's client stops reading (a hook holds it, as a loaded machine would)
    # while the pane prints 10 MB: the server drops what passes its 4 MiB queue for
    # the client (a tombstone) and bootstraps it afresh. Without replicas the server
    # keeps the newest 4 MiB as its journal, no checkpoint: the line, 1.3 MB from the
    # end, comes back as bytes and is searched; what came before the journal is lost
    # as bytes, and the wait says how much.
    with (
        running_server("--replicas", "off") as path,
        Client(path, env={}) as client,
        gated_shell(client) as (name, fifo),
    ):
        done = fifo + ".done"
        client.send_keys(
            name,
            [
                f"printf 'waiting\\n'; cat {fifo} >/dev/null; printf 'go\\n';"
                f" cat {fifo} >/dev/null; seq 1 1300000; printf 'RESULT-42\\n';"
                f" seq 1 200000; touch {done}",
                "Enter",
            ],
            Deadline.after(5),
        )
        assert client.wait(name, until="waiting", timeout=10, deadline=Deadline.after(15)).met
        thread = released_when_watched(client, name, fifo)  # (prints go)
        held: list[int] = []

        def hold(seq: int, data: bytes) -> None:
            """At the first go: the flood starts, and this client reads nothing
            more until it has passed the PTY whole."""
            if held or b"go\r\n" not in data:
                return
            held.append(seq)
            with open(fifo, "w") as f:
                f.write("go\n")
            deadline = Deadline.after(60)
            while not os.path.exists(done) and not deadline.expired():
                time.sleep(0.02)

        try:
            with Client(path, env={}, keep_warm=1) as kept:
                kept.snapshot(name, deadline=Deadline.after(10))  # (its mirror is kept)
                mirror = next(_feeds(kept))
                mirror.bytes_hooks.append(hold)
                waited = kept.wait(
                    name, regex="^RESULT-42$", timeout=30, deadline=Deadline.after(40)
                )
                tombstones = mirror.tombstones
        finally:
            thread.join(20)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(done)
    assert held and tombstones
    assert waited.met
    # At least what passed the journal's 4 MiB and what was in flight (the socket's
    # buffers, at most a few MB) before the first byte dropped.
    assert waited.lost_bytes > 1_000_000, waited.lost_bytes


def _wait_reading_its_bootstrap_with_output(
    client: Client, monkeypatch: pytest.MonkeyPatch, command: str, regex: str
) -> WaitResult:
    """A wait for ``regex`` on a fresh shell running ``command``, which prints
    "waiting", blocks reading FIFO, then prints its output and FINISHED: it all comes
    to the wait's client in the batch that brings its bootstrap (as to a loaded one)."""
    with gated_shell(client) as (name, fifo):
        client.send_keys(name, [command.replace("FIFO", fifo), "Enter"], Deadline.after(5))
        assert client.wait(name, until="waiting", timeout=10, deadline=Deadline.after(15)).met
        with Client(client.socket_path, env={}) as kept:
            pump = kept.pump
            stalled: list[bool] = []

            def stall_then_pump(
                deadline: Deadline, until: Callable[[], bool] | None = None
            ) -> None:
                """Before the first read after SUBSCRIBE: once the bootstrap is sent (the
                first bytes of a subscription), the pane prints all of it."""
                if not stalled:
                    stalled.append(True)
                    conn = kept._conn
                    assert conn is not None
                    assert select.select([conn.fileno()], [], [], 10)[0]
                    with open(fifo, "w") as f:
                        f.write("go\n")
                    assert client.wait(
                        name, until="FINISHED", timeout=10, deadline=Deadline.after(15)
                    ).met
                pump(deadline, until)

            monkeypatch.setattr(kept, "pump", stall_then_pump)
            waited = kept.wait(name, regex=regex, timeout=30, deadline=Deadline.after(40))
    assert stalled
    return waited


def test_wait_searches_output_read_with_its_bootstrap(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The line and more rows than the screen has, printed once the wait had
    # subscribed, come in the batch that brings its bootstrap. They must reach the
    # wait's search, not only the engine (whose screen the wait's first look reads,
    # the line scrolled off it already).
    waited = _wait_reading_its_bootstrap_with_output(
        client,
        monkeypatch,
        "printf 'waiting\\n'; cat FIFO >/dev/null; printf 'RESULT-42\\n'; seq 1 300;"
        " printf 'FINI''SHED\\n'",
        "^RESULT-42$",
    )
    assert waited.met


@pytest.mark.xfail(
    strict=False,
    reason="failed once in a loaded clean-clone CI run (met false, the prompt after "
    "FINISHED on screen); cause not found: a bootstrap from a checkpoint taken after the "
    "CR is one suspect, but replicas put away after 0.2 s did not reproduce it",
)
def test_wait_scans_on_from_a_bootstrap_that_ends_between_a_cr_and_its_lf(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wait's first look is at an engine fed up to a CR whose LF has not come (a
    # flood cut there; here a program that writes them apart, ONLCR off). The scan
    # starts there all the same: the line and 20 000 lines after it (more than the
    # history keeps), in one batch, are searched.
    waited = _wait_reading_its_bootstrap_with_output(
        client,
        monkeypatch,
        "stty -onlcr; printf 'waiting\\r\\nabc\\r'; cat FIFO >/dev/null;"
        " printf '\\nRESULT-42\\r\\n'; seq 1 20000 | sed 's/$/\\r/'; stty onlcr;"
        " printf 'FINI''SHED\\n'",
        "^RESULT-42$",
    )
    assert waited.met

"""The read -> act -> wait -> read loop, wait's conditions and timeout, watch's events."""

from __future__ import annotations

import time

import pytest

from phux.client import Client, Deadline, InvalidArgument
from phux.client.models import event_name, to_json

from .conftest import gated_shell, new_shell, released_when_watched


def test_read_act_wait_read_loop(client: Client) -> None:
    name = new_shell(client)
    before = client.snapshot(name, deadline=Deadline.after(5))
    assert before.schema_version == 4
    sent = client.send_keys(name, ["printf 'te%s\\n' 'st result: ok'", "Enter"], Deadline.after(5))
    assert sent.id.startswith("@") and sent.session == name
    waited = client.wait(name, until="test result: ok", timeout=10, deadline=Deadline.after(15))
    assert waited.met
    assert waited.checks >= 1
    after = client.snapshot(name, scrollback=200, deadline=Deadline.after(5))
    assert any("test result: ok" in line for line in after.lines + after.scrollback)
    assert b'"schema_version":4' in to_json(after)


def test_wait_regex_and_idle(client: Client) -> None:
    name = new_shell(client)
    client.send_keys(name, ["sleep 0.2; printf 'code=%d\\n' 41", "Enter"], Deadline.after(5))
    waited = client.wait(name, regex=r"code=4[0-9]$", timeout=10, deadline=Deadline.after(15))
    assert waited.met
    started = time.monotonic()
    idle = client.wait(name, idle_ms=200, timeout=10, deadline=Deadline.after(15))
    assert idle.met
    assert time.monotonic() - started >= 0.2


def test_wait_times_out_with_the_last_screen(client: Client) -> None:
    name = new_shell(client)
    started = time.monotonic()
    result = client.wait(name, until="never-appears", timeout=0.4, deadline=Deadline.after(10))
    assert not result.met
    assert 0.4 <= time.monotonic() - started < 3
    assert result.screen.schema_version == 4
    # Idle cannot be met while output keeps coming.
    client.send_keys(name, ["while :; do echo tick; sleep 0.05; done", "Enter"], Deadline.after(5))
    busy = client.wait(name, idle_ms=300, timeout=0.8, deadline=Deadline.after(10))
    assert not busy.met
    client.send_keys(name, ["C-c"], Deadline.after(5))


def test_wait_matches_logical_lines(client: Client) -> None:
    name = new_shell(client)
    client.resize(name, 40, 10, Deadline.after(5))
    client.send_keys(name, ["printf '%030d%s\\n' 0 WRAPPEDMARKER", "Enter"], Deadline.after(5))
    # "0...0WRAPPEDMARKER" is longer than 40 columns: it only matches joined.
    waited = client.wait(name, until="0000WRAPPEDMARKER", timeout=10, deadline=Deadline.after(15))
    assert waited.met


def test_wait_sees_text_that_scrolled_away_in_one_batch(client: Client) -> None:
    with gated_shell(client) as (name, fifo):
        client.send_keys(
            name,
            [f"cat {fifo} >/dev/null; printf 'FLA%s\\n' SHED; seq 1 200", "Enter"],
            Deadline.after(5),
        )
        thread = released_when_watched(client, name, fifo)
        try:
            waited = client.wait(name, until="FLASHED", timeout=15, deadline=Deadline.after(20))
        finally:
            thread.join(20)
        assert waited.met


def test_wait_bad_arguments(client: Client) -> None:
    name = new_shell(client)
    with pytest.raises(InvalidArgument):
        client.wait(name, regex="(", timeout=1, deadline=Deadline.after(5))
    with pytest.raises(InvalidArgument):
        client.wait(name, until="a", regex="b", timeout=1, deadline=Deadline.after(5))


def test_watch_events(client: Client) -> None:
    name = new_shell(client)
    pane = client.resolve(name, Deadline.after(5))
    stream = client.watch(name, idle_ms=100, timeout=15, deadline=Deadline.after(20))
    events = []
    try:
        client.send_keys(
            name,
            [
                "printf '\\033]2;my-title\\007'; printf '\\a'; "
                "printf '\\033]133;C\\007'; printf '\\033]133;D;3\\007'",
                "Enter",
            ],
            Deadline.after(5),
        )
        for event in stream:
            events.append(event)
            if event_name(event) == "idle":
                break
    finally:
        stream.close()
    names = [event_name(e) for e in events]
    assert "dirty" in names
    assert names[-1] == "idle"
    assert {"terminal": pane.id, "event": "title_changed", "title": "my-title"} in [
        __import__("msgspec").json.decode(to_json(e)) for e in events
    ]
    assert "bell" in names
    assert "command_started" in names
    # The marks the command printed are output, not the shell's (they lack the pane's
    # key): the one command is the line typed, and it exited 0.
    finished = [e for e in events if event_name(e) == "command_finished"]
    assert 3 not in [e.exit_code for e in finished]  # type: ignore[union-attr]
    ours = [e for e in finished if e.command.startswith("printf '\\033]2;my-title")]  # type: ignore[union-attr]
    assert len(ours) == 1 and ours[0].exit_code == 0  # type: ignore[union-attr]


def test_watch_until_and_pane_closed(client: Client) -> None:
    name = new_shell(client)
    stream = client.watch(name, until_event="pane_closed", timeout=15, deadline=Deadline.after(20))
    client.send_keys(name, ["exit 5", "Enter"], Deadline.after(5))
    events = list(stream)
    assert stream.met and not stream.timed_out
    last = events[-1]
    assert event_name(last) == "pane_closed"
    assert last.exit_status == 5  # type: ignore[union-attr]


def test_watch_times_out(client: Client) -> None:
    name = new_shell(client)
    stream = client.watch(name, until_event="bell", timeout=0.3, deadline=Deadline.after(10))
    assert [event_name(e) for e in stream if event_name(e) == "bell"] == []
    assert stream.timed_out and not stream.met
    with pytest.raises(InvalidArgument):
        client.watch(name, until_event="nope", timeout=1, deadline=Deadline.after(5))

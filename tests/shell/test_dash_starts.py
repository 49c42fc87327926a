"""`command_started` for dash, which prints no C mark: `phux watch` reports one per
command, when the command starts (its job takes the terminal), never for a line
that only led to a continuation prompt, and with its D at the latest (a builtin)
(issue 23 item 9; spec/shell-integration.md, sh and dash)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phux.client.deadline import Deadline
from phux.wire.frames import ListTerminals, TerminalList

from .kit import Pane, ShellHost, WatchProcess, await_watching, shell_host

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("dash") is None, reason="dash is not installed"),
]

CONTINUATION = b"\x1b]133;A;k=s\x07"


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


@pytest.fixture
def dash(host: ShellHost, request: pytest.FixtureRequest) -> Pane:
    home = host.make_home(request.node.name.replace("[", "-").rstrip("]"))
    (home / ".shrc").write_text("PS1='user> '\n")
    pane = host.spawn(["dash"], env={"HOME": str(home), "ENV": "$HOME/.shrc"})
    pane.wait_prompt(1)
    return pane


@pytest.fixture
def watch(host: ShellHost, dash: Pane) -> Iterator[WatchProcess]:
    w = WatchProcess(host, dash)
    try:
        await_watching(w, dash)
        yield w
    finally:
        w.close()


def commands(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["event"], e["command"]) for e in events if e["event"].startswith("command_")]


def continued(pane: Pane, count: int) -> None:
    """Until the pane printed ``count`` continuation prompts (up to their B)."""
    pane.read_until(lambda d: d.count(CONTINUATION) >= count and d.endswith(b"\x1b]133;B\x07"))


def test_a_silent_command_starts_when_it_runs(
    host: ShellHost, dash: Pane, watch: WatchProcess
) -> None:
    entered = time.monotonic()
    dash.type("sleep 2\r")
    events = watch.until("command_finished", timeout=30)
    assert commands(events) == [("command_started", "sleep 2"), ("command_finished", "sleep 2")]
    at = {e["event"]: t for t, e in watch.arrived if e["event"].startswith("command_")}
    assert at["command_started"] - entered < 1.0  # (the server checks every 200 ms)
    assert at["command_finished"] - at["command_started"] > 1.0


def test_lines_typed_one_by_one_start_one_command(dash: Pane, watch: WatchProcess) -> None:
    dash.type("if true\r")
    continued(dash, 1)
    dash.type("then echo x\r")
    continued(dash, 2)
    dash.type("fi\r")
    events = watch.until("command_finished")
    command = "if true\nthen echo x\nfi"
    assert commands(events) == [("command_started", command), ("command_finished", command)]


def test_a_quoted_line_across_a_continuation_prompt(dash: Pane, watch: WatchProcess) -> None:
    dash.type('echo "a\r')
    continued(dash, 1)
    dash.type('b" | cat\r')  # (cat: a job takes the terminal)
    events = watch.until("command_finished")
    command = 'echo "a\nb" | cat'
    assert commands(events) == [("command_started", command), ("command_finished", command)]


def test_a_builtin_reading_a_line(dash: Pane, watch: WatchProcess) -> None:
    dash.type("read x\r")
    dash.type("hello\r")
    events = watch.until("command_finished")
    assert commands(events) == [("command_started", "read x"), ("command_finished", "read x")]
    dash.type('echo "[$x]"\r')
    events = watch.until("command_finished")
    assert commands(events) == [
        ("command_started", 'echo "[$x]"'),
        ("command_finished", 'echo "[$x]"'),
    ]


def test_lines_typed_ahead_start_one_command(dash: Pane, watch: WatchProcess) -> None:
    """An agent types a command of several lines at once: the tty echoes them all
    before the shell reads the first, so output after the first line's Enter is no
    sign that it ran, and the lines come before the continuation prompts that read
    them. One start, with every line, when the command's job runs."""
    dash.type("for i in 1 2\rdo sleep 1\rdone\r")
    events = watch.until("command_finished", timeout=30)
    command = "for i in 1 2\ndo sleep 1\ndone"
    assert commands(events) == [("command_started", command), ("command_finished", command)]
    at = {e["event"]: t for t, e in watch.arrived if e["event"].startswith("command_")}
    assert at["command_finished"] - at["command_started"] > 1.0


def test_lines_sent_at_once_in_history(host: ShellHost, dash: Pane) -> None:
    """`phux send-keys` with every line of a command: `history` lists it whole, with
    its output (the lines' echo is not output)."""
    target = f"@{dash.terminal}"
    n = dash.prompts()
    keys = ["for i in 1 2", "Enter", "do echo $i", "Enter", "done", "Enter"]
    sent = phux(host, "send-keys", target, *keys)
    assert sent.returncode == 0, sent.stderr
    dash.wait_prompt(n + 1)
    listed = phux(host, "history", "--json", target)
    assert listed.returncode == 0, listed.stderr
    got = [(c["command"], c["output"]) for c in json.loads(listed.stdout)["commands"]]
    assert got == [("for i in 1 2\ndo echo $i\ndone", "1\n2")]


def phux(host: ShellHost, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "phux", args[0], "--socket", str(host.server.socket), *args[1:]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def end_of_file(fifo: Path) -> None:
    """Open ``fifo`` for writing once its reader has it open, and close it: the
    reader gets its end of file."""
    deadline = Deadline.after(15)
    while True:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError as exc:  # ENXIO: no reader yet
            assert exc.errno == errno.ENXIO, exc
        assert not deadline.expired(), "the fifo never had a reader"
        time.sleep(0.05)


def wait_foreground(host: ShellHost, pane: Pane, name: str) -> None:
    """Until the server lists ``name`` as what holds the pane's terminal."""
    conn = host.server.connect()
    try:
        deadline = Deadline.after(15)
        while True:
            listing = conn.call_expect(
                lambda rid: ListTerminals(request_id=rid), TerminalList, deadline
            )
            info = next(t for t in listing.terminals if t.terminal == pane.terminal)
            if info.foreground is not None and info.foreground.name == name:
                return
            assert not deadline.expired(), f"{name} never held the terminal"
            time.sleep(0.05)
    finally:
        conn.close()


def test_a_watch_begun_while_a_command_runs(host: ShellHost, dash: Pane, tmp_path: Path) -> None:
    """Its start is history: only its end is news (as in bash, whose C came before).
    The command runs until the test ends it, once the watch is subscribed: a watch
    slow to start (a loaded machine) never misses the end it is there to see."""
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    command = f"cat {fifo}"
    dash.type(command + "\r")
    wait_foreground(host, dash, "cat")
    watch = WatchProcess(host, dash)
    try:
        await_watching(watch, dash)  # (typed into the tty's line while cat runs, rubbed out)
        end_of_file(fifo)  # cat reads it: the command ends
        events = watch.until("command_finished", timeout=30)
    finally:
        watch.close()
    assert commands(events) == [("command_finished", command)]

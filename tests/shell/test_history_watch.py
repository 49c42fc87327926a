"""`phux history` and `phux watch` on real integrated shells: commands typed by an
agent (send-keys) and by a person (raw INPUT on another connection) alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from phux.mcp.tools import PhuxTools

from .kit import PROMPT_A, Pane, ShellHost, WatchProcess, await_watching, shell_host

pytestmark = pytest.mark.timeout(120)

BASHRC = """\
PS1='user> '
PROMPT_COMMAND='echo "$?" >> ~/hook.log'
"""


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


def phux(host: ShellHost, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "phux", *args[:1], "--socket", str(host.server.socket)]
    return subprocess.run(
        [*argv, *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PHUX_SOCKET": str(host.server.socket)},
        check=False,
    )


def history(host: ShellHost, pane: Pane, *extra: str) -> dict[str, Any]:
    proc = phux(host, "history", "--json", *extra, f"@{pane.terminal}")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def agent_command(host: ShellHost, pane: Pane, line: str) -> None:
    """Type ``line`` with `phux send-keys`, as an agent does, and await the next prompt."""
    n = pane.prompts()
    proc = phux(host, "send-keys", f"@{pane.terminal}", line, "Enter")
    assert proc.returncode == 0, proc.stderr
    pane.wait_prompt(n + 1)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "dash"])
def test_history_lists_agent_and_person_commands(host: ShellHost, shell: str) -> None:
    home = host.make_home(f"hist-{shell}", {".bashrc": BASHRC})
    pane = host.spawn([shell], env={"HOME": str(home)}, cols=60, rows=10)
    pane.wait_prompt(1)
    agent_command(host, pane, "echo agent-one")
    pane.command("false")  # a person at the keyboard
    pane.command("sh -c 'exit 7'")
    agent_command(host, pane, "seq 1 25")  # longer than the viewport
    pane.command("echo 'é 你好'")

    # The times come from the server's checkpoint, which its replica writes once it
    # has caught up (its helper process may still be starting): poll until then.
    end = time.monotonic() + 30
    doc = history(host, pane)
    while any(c["duration_ms"] is None for c in doc["commands"]):
        assert time.monotonic() < end, doc
        time.sleep(0.2)
        doc = history(host, pane)
    assert doc["schema_version"] == 1
    assert doc["pane"] == f"@{pane.terminal}"
    got = [(c["command"], c["exit_code"], c["output"]) for c in doc["commands"]]
    assert got == [
        ("echo agent-one", 0, "agent-one"),
        ("false", 1, ""),
        ("sh -c 'exit 7'", 7, ""),
        ("seq 1 25", 0, "\n".join(str(i) for i in range(1, 26))),
        ("echo 'é 你好'", 0, "é 你好"),
    ]
    for entry in doc["commands"]:
        assert entry["cwd"] == str(home)
        assert entry["running"] is False and entry["truncated"] is False
        # The server's checkpoint carries the times its replica stamped (dash: the
        # start is the line feed that ended the input).
        assert abs(entry["started_ms"] - time.time() * 1000) < 120_000
        assert 0 <= entry["duration_ms"] < 60_000

    last = history(host, pane, "-n", "2")["commands"]
    assert [c["command"] for c in last] == ["seq 1 25", "echo 'é 你好'"]

    text = phux(host, "history", f"@{pane.terminal}")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert len(lines) == 5
    assert lines[2].split()[0] == "7" and lines[2].endswith("sh -c 'exit 7'")


def test_history_of_output_that_left_the_history(host: ShellHost) -> None:
    home = host.make_home("trim", {".bashrc": BASHRC})
    pane = host.spawn(["bash"], env={"HOME": str(home)}, cols=40, rows=6)
    pane.wait_prompt(1)
    pane.command("echo first")
    pane.command("seq 1 20000")  # past the server's and the client's history
    pane.command("echo last")
    commands = history(host, pane)["commands"]
    assert [c["command"] for c in commands] == ["echo first", "seq 1 20000", "echo last"]
    gone = commands.pop(0)  # its rows all left the history: the command stays, its output not
    assert (gone["exit_code"], gone["output"], gone["truncated"]) == (0, "", True)
    long = commands[0]
    assert long["truncated"] is True and long["output"].endswith("\n19999\n20000")
    assert commands[1]["output"] == "last" and commands[1]["truncated"] is False


def test_history_after_clear(host: ShellHost) -> None:
    home = host.make_home("clear", {".bashrc": BASHRC})
    pane = host.spawn(["bash"], env={"HOME": str(home)}, cols=40, rows=8)
    pane.wait_prompt(1)
    pane.command("echo before")
    pane.command("clear")
    for i in range(6):  # drawn over the rows "echo before" had
        pane.command(f"echo after-{i}")
    commands = history(host, pane)["commands"]
    got = [(c["command"], c["output"], c["truncated"]) for c in commands]
    assert got[0] == ("echo before", "", True)
    assert got[1][0] == "clear"
    assert got[2:] == [(f"echo after-{i}", f"after-{i}", False) for i in range(6)]


def test_history_of_a_pane_without_a_shell(host: ShellHost) -> None:
    pane = host.spawn(["cat"])
    assert history(host, pane)["commands"] == []
    text = phux(host, "history", f"@{pane.terminal}")
    assert text.returncode == 0 and text.stdout == ""
    assert "the pane's program reports none" in text.stderr


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_history_before_any_command(host: ShellHost, shell: str) -> None:
    """An integrated shell with nothing run yet is not said to print no marks."""
    home = host.make_home(f"empty-{shell}", {".bashrc": BASHRC})
    pane = host.spawn([shell], env={"HOME": str(home)})
    pane.wait_prompt(1)
    text = phux(host, "history", f"@{pane.terminal}")
    assert text.returncode == 0 and text.stdout == ""
    assert "no commands yet (none ran since the shell started" in text.stderr
    assert "no commands" in text.stderr


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_watch_reports_commands(host: ShellHost, shell: str) -> None:
    home = host.make_home(f"watch-{shell}", {".bashrc": BASHRC})
    pane = host.spawn([shell], env={"HOME": str(home)})
    pane.wait_prompt(1)
    watch = WatchProcess(host, pane)
    try:
        await_watching(watch, pane)
        n = pane.prompts()
        pane.type("sh -c 'exit 3'\r")
        events = watch.until("command_finished")
        commands = [e for e in events if e["event"].startswith("command_")]
        # dash prints no C mark: its start is inferred (the job taking the terminal,
        # else its D), so it reports the same two events.
        started, finished = commands
        assert started == {
            "event": "command_started",
            "terminal": f"@{pane.terminal}",
            "command": "sh -c 'exit 3'",
        }
        assert 0 <= finished["duration_ms"] < 60_000
        assert finished["exit_code"] == 3 and finished["command"] == "sh -c 'exit 3'"
        pane.read_until(lambda d: d.count(PROMPT_A) > n)
        agent_command(host, pane, "true")
        events = watch.until("command_finished")
        assert [e["exit_code"] for e in events if e["event"] == "command_finished"] == [0]
    finally:
        watch.close()


def test_mcp_history_tool(host: ShellHost) -> None:
    home = host.make_home("mcp", {".bashrc": BASHRC})
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("echo from-a-person")
    agent_command(host, pane, "ls /nonexistent-dir")
    tools = PhuxTools()
    try:
        args = {"target": f"@{pane.terminal}", "socket": str(host.server.socket)}
        result = tools.history(args)
        assert not result.is_error, result.text
        doc = json.loads(result.text)
        assert [(c["command"], c["exit_code"] != 0) for c in doc["commands"]] == [
            ("echo from-a-person", False),
            ("ls /nonexistent-dir", True),
        ]
        assert "nonexistent-dir" in doc["commands"][1]["output"]
        last = json.loads(tools.history({**args, "last": 1}).text)["commands"]
        assert [c["command"] for c in last] == ["ls /nonexistent-dir"]
        bad = tools.history({**args, "last": -1})
        assert bad.is_error
    finally:
        tools.close()


def settled_history(host: ShellHost, pane: Pane, count: int) -> list[dict[str, Any]]:
    """`phux history --json` once it lists ``count`` commands with both times: the
    server's replica checkpoints each command mark once it has caught up (a journal
    tail after the checkpoint carries no times)."""
    end = time.monotonic() + 30
    while True:
        commands: list[dict[str, Any]] = history(host, pane)["commands"]
        if len(commands) == count and all(c["duration_ms"] is not None for c in commands):
            return commands
        assert time.monotonic() < end, [
            (c["command"], c["exit_code"], c["duration_ms"], c["truncated"]) for c in commands
        ]
        time.sleep(0.2)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "dash"])
def test_history_outlives_a_flood_and_mcp_agrees(host: ShellHost, shell: str) -> None:
    """Issue 23 item 9: after 100 000 lines of output the earlier commands are still
    listed, with their codes, cwd and durations, to a client connecting afterwards
    (the CLI bootstraps from the server's checkpoint) and to MCP's long-lived client
    alike, whose warm mirror read the commands' marks only at its next call."""
    home = host.make_home(f"flood-{shell}", {".bashrc": BASHRC})
    pane = host.spawn([shell], env={"HOME": str(home)}, cols=60, rows=10)
    pane.wait_prompt(1)
    tools = PhuxTools()
    try:
        args = {"target": f"@{pane.terminal}", "socket": str(host.server.socket)}
        assert json.loads(tools.history(args).text)["commands"] == []  # (now warm)
        pane.command("echo first")
        pane.command("sh -c 'exit 3'")
        pane.command("sleep 1")
        pane.command("seq 1 100000")
        commands = settled_history(host, pane, 4)
        got = [(c["command"], c["exit_code"], c["cwd"]) for c in commands]
        assert got == [
            ("echo first", 0, str(home)),
            ("sh -c 'exit 3'", 3, str(home)),
            ("sleep 1", 0, str(home)),
            ("seq 1 100000", 0, str(home)),
        ]
        assert [c["output"] for c in commands[:3]] == ["", "", ""]
        assert all(c["truncated"] for c in commands)
        # Stamped when the server read each mark: a C read late on a loaded machine
        # (the D never earlier than the sleep's end) shortens it a little.
        assert 900 <= commands[2]["duration_ms"] < 10_000
        assert commands[0]["started_ms"] <= commands[2]["started_ms"] <= commands[3]["started_ms"]
        mcp = json.loads(tools.history(args).text)["commands"]
        assert mcp == commands
    finally:
        tools.close()

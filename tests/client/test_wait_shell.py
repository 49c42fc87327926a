"""`wait --prompt`, `wait --exit` and the pane state, end to end on real shells."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from phux.client import Client, Deadline, TerminalGone

from .conftest import SHELL_ENV, unique


def bash_pane(client: Client, *, integration: bool = True) -> str:
    name = unique("w")
    env = dict(SHELL_ENV)
    if not integration:
        env["PHUX_SHELL_INTEGRATION"] = "0"
    client.new(name, command=["bash", "--norc"], env=env, cwd="/tmp", deadline=Deadline.after(10))
    client.run(name, "true", timeout=15, deadline=Deadline.after(20))
    return name


def state(client: Client, name: str) -> tuple[str | None, str]:
    data = client.snapshot_data(name, deadline=Deadline.after(10))
    return data.get("program"), data["state"]


def test_wait_prompt_after_a_command_with_integration(client: Client) -> None:
    name = bash_pane(client)
    assert state(client, name) == ("bash", "prompt")
    client.send_keys(name, ["sleep 0.6", "Enter"], Deadline.after(5))
    began = time.monotonic()
    result = client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15))
    assert result.met and result.screen.state == "prompt" and result.screen.program == "bash"
    assert time.monotonic() - began >= 0.4  # it waited for sleep, not for the echo
    assert client.run(name, "echo ready", timeout=10, deadline=Deadline.after(15)).output == "ready"


def test_wait_prompt_times_out_while_a_program_runs(client: Client) -> None:
    name = bash_pane(client)
    client.send_keys(name, ["sleep 30", "Enter"], Deadline.after(5))
    result = client.wait(name, prompt=True, timeout=0.7, deadline=Deadline.after(10))
    assert not result.met
    # The shell may not have handed the terminal to sleep yet (its marks say running).
    assert (result.screen.program, result.screen.state) in {
        ("sleep", "running"),
        ("bash", "running"),
    }
    deadline = Deadline.after(10)
    while state(client, name) != ("sleep", "running"):
        assert not deadline.expired()
        client.wait(name, idle_ms=30, timeout=1, deadline=deadline)
    client.send_keys(name, ["C-c"], Deadline.after(5))
    assert client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15)).met


def test_wait_prompt_without_integration(client: Client) -> None:
    name = bash_pane(client, integration=False)
    client.send_keys(name, ["sleep 0.5; echo slept", "Enter"], Deadline.after(5))
    result = client.wait(name, prompt=True, idle_ms=200, timeout=10, deadline=Deadline.after(15))
    assert result.met
    assert any(line == "slept" for line in result.screen.lines)


def test_pending_input_is_not_an_idle_prompt(client: Client) -> None:
    name = bash_pane(client)
    client.send_keys(name, ["echo half"], Deadline.after(5))
    assert not client.wait(name, prompt=True, timeout=0.5, deadline=Deadline.after(10)).met
    client.send_keys(name, ["C-u"], Deadline.after(5))
    assert client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15)).met


def test_keys_the_shell_has_not_read_yet_are_not_an_idle_prompt(client: Client) -> None:
    """A shell that has not read the keys sent just before (stopped here; busy or
    descheduled elsewhere) shows its old prompt, quiet: the keys unread in its tty
    say it is not idle, however long the prompt stays still."""
    name = bash_pane(client)
    pid = client.resolve(name, Deadline.after(5)).pid
    os.kill(pid, signal.SIGSTOP)
    try:
        client.send_keys(name, ["echo unread", "Enter"], Deadline.after(5))
        assert not client.wait(name, prompt=True, timeout=0.6, deadline=Deadline.after(10)).met
    finally:
        os.kill(pid, signal.SIGCONT)
    result = client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15))
    assert result.met and "unread" in result.screen.lines, result.screen.lines


def test_states_of_programs(client: Client) -> None:
    name = bash_pane(client)
    client.send_keys(name, ["cat", "Enter"], Deadline.after(5))
    deadline = Deadline.after(10)
    while state(client, name) != ("cat", "running"):
        assert not deadline.expired()
        client.wait(name, idle_ms=30, timeout=1, deadline=deadline)
    client.send_keys(name, ["C-d"], Deadline.after(5))
    assert client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15)).met
    client.send_keys(name, ["read -s x", "Enter"], Deadline.after(5))
    while state(client, name) != ("bash", "hidden_input"):
        assert not deadline.expired()
        client.wait(name, idle_ms=30, timeout=1, deadline=deadline)
    client.send_keys(name, ["y", "Enter"], Deadline.after(5))
    assert client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15)).met
    if shutil.which("less") is not None:
        client.send_keys(name, ["less /etc/passwd", "Enter"], Deadline.after(5))
        while state(client, name) != ("less", "tui"):
            assert not deadline.expired()
            client.wait(name, idle_ms=30, timeout=1, deadline=deadline)
        assert client.wait(name, until="root:", timeout=10, deadline=Deadline.after(15)).met
        client.send_keys(name, ["q"], Deadline.after(5))
        assert client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15)).met


@pytest.mark.parametrize(("command", "status"), [("exit 7", 7), ("kill -9 $$", 137)])
def test_wait_exit_gives_the_status(client: Client, command: str, status: int) -> None:
    name = bash_pane(client)
    pane = client.resolve(name, Deadline.after(5))
    client.send_keys(name, [command, "Enter"], Deadline.after(5))
    # By id: once the pane exits its session is no longer listed.
    result = client.wait(f"@{pane.terminal}", exit=True, timeout=10, deadline=Deadline.after(15))
    assert result.met and result.exit_code == status
    assert result.screen.state == "exited" and result.screen.program is None
    # An exited pane: at once, by id (its session no longer lists it).
    again = client.wait(f"@{pane.terminal}", exit=True, timeout=5, deadline=Deadline.after(10))
    assert again.met and again.exit_code == status


def test_wait_exit_times_out_while_alive(client: Client) -> None:
    name = bash_pane(client)
    result = client.wait(name, exit=True, timeout=0.3, deadline=Deadline.after(10))
    assert not result.met and result.exit_code is None


def test_wait_prompt_on_a_pane_that_exits_fails(client: Client) -> None:
    name = bash_pane(client)
    client.send_keys(name, ["sleep 0.3; exit 3", "Enter"], Deadline.after(5))
    with pytest.raises(TerminalGone):
        client.wait(name, prompt=True, timeout=10, deadline=Deadline.after(15))

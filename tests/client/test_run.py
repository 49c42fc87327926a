"""`run` end to end against a real server and real shells."""

from __future__ import annotations

import threading

import pytest

from phux.client import Client, Deadline, RunTimedOut
from phux.client.connection import Connection
from phux.client.errors import PaneDied
from phux.wire.frames import BootstrapReady, Resized, Role, Subscribe

from .conftest import BASH, SH, new_shell


def run(client: Client, target: str, command: str, timeout: float = 20) -> tuple[int, str]:
    result = client.run(target, command, timeout=timeout, deadline=Deadline.after(timeout + 5))
    assert not result.truncated
    assert result.command == command
    return result.exit_code, result.output


@pytest.mark.parametrize("shell", [BASH, SH], ids=["bash", "sh"])
def test_exit_codes_mirror_the_child(client: Client, shell: list[str]) -> None:
    name = new_shell(client, shell)
    assert run(client, name, "echo hello") == (0, "hello")
    assert run(client, name, "echo out; (exit 3)") == (3, "out")
    assert run(client, name, "sh -c 'exit 124'") == (124, "")
    assert run(client, name, "sh -c 'exit 255'") == (255, "")
    assert run(client, name, "printf 'no newline'") == (0, "no newline")


def test_timeout_gives_up_with_125(client: Client) -> None:
    name = new_shell(client)
    with pytest.raises(RunTimedOut) as info:
        client.run(name, "sleep 30", timeout=0.5, deadline=Deadline.after(10))
    assert info.value.exit_code == 125
    assert info.value.command == "sleep 30"
    assert 400 <= info.value.duration_ms < 5000
    client.send_keys(name, ["C-c"], Deadline.after(5))
    # run refuses a pane the interrupted program still holds: await the prompt first.
    assert client.wait(name, prompt=True, timeout=20, deadline=Deadline.after(25)).met
    assert run(client, name, "echo back") == (0, "back")


def test_cd_persists_and_multiline(client: Client) -> None:
    name = new_shell(client)
    assert run(client, name, "cd /usr") == (0, "")
    assert run(client, name, "pwd") == (0, "/usr")
    code, out = run(client, name, "for i in 1 2 3\ndo\n  echo n$i\ndone\necho last")
    assert (code, out) == (0, "n1\nn2\nn3\nlast")
    code, out = run(client, name, "cat <<EOF\nheredoc line\nEOF")
    assert (code, out) == (0, "heredoc line")


def test_duration_is_measured(client: Client) -> None:
    name = new_shell(client)
    result = client.run(name, "sleep 0.3", timeout=10, deadline=Deadline.after(15))
    assert result.exit_code == 0
    assert 300 <= result.duration_ms < 3000


def test_five_megabytes_captured_completely(client: Client) -> None:
    name = new_shell(client)
    command = "head -c 5000000 /dev/zero | tr '\\0' x | fold -w 100"
    result = client.run(name, command, timeout=90, deadline=Deadline.after(100))
    assert result.exit_code == 0
    assert not result.truncated
    lines = result.output.split("\n")
    assert len(lines) == 50_000
    assert all(line == "x" * 100 for line in lines)


def test_long_lines_are_joined(client: Client) -> None:
    name = new_shell(client)
    code, out = run(client, name, "printf '%0300d\\n' 7")
    assert code == 0
    assert out == "0" * 299 + "7"


def test_command_reading_stdin_answered_by_send_keys(client: Client) -> None:
    name = new_shell(client)
    results: list[object] = []

    def agent() -> None:
        with Client(client.socket_path, env={}) as other:
            try:
                results.append(
                    other.run(
                        name,
                        "printf 'Q%sN\\n' UESTIO; read -r answer; echo \"got-$answer\"",
                        timeout=20,
                        deadline=Deadline.after(25),
                    )
                )
            except Exception as exc:
                results.append(exc)

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        waited = client.wait(name, until="QUESTION", timeout=15, deadline=Deadline.after(20))
        assert waited.met
        client.send_keys(name, ["forty two", "Enter"], Deadline.after(5))
    finally:
        thread.join(30)
    assert len(results) == 1
    result = results[0]
    assert not isinstance(result, Exception), result
    assert result.exit_code == 0  # type: ignore[union-attr]
    # The tty's echo of the answer another client typed is not the command's output.
    assert result.output == "QUESTION\ngot-forty two"  # type: ignore[union-attr]


def test_command_that_clears_the_screen(client: Client) -> None:
    name = new_shell(client)
    code, out = run(client, name, "echo before; printf '\\033[H\\033[2J'; echo after")
    assert code == 0
    assert out.strip().endswith("after")
    code, out = run(client, name, "echo x; clear; echo after-clear; (exit 4)")
    assert code == 4
    assert "after-clear" in out


def test_non_utf8_output(client: Client) -> None:
    name = new_shell(client)
    code, out = run(client, name, "printf 'a\\377\\376b\\n'")
    assert code == 0
    assert out.startswith("a") and out.endswith("b")
    assert "\ufffd" in out


def test_command_that_exits_the_shell(client: Client) -> None:
    """The shell itself ending is the pane dying, not the command's status."""
    name = new_shell(client, SH)
    with pytest.raises(PaneDied) as info:
        client.run(name, "echo bye; exit 6", timeout=10, deadline=Deadline.after(15))
    assert info.value.exit_code == 5
    assert info.value.status == 6
    assert "died" in info.value.message and "status 6" in info.value.message


def test_reads_never_resize(client: Client) -> None:
    name = new_shell(client)
    pane = client.resolve(name, Deadline.after(5))
    deadline = Deadline.after(60)
    with Connection.open(client.socket_path, deadline) as primary:
        primary.submit(
            lambda rid: Subscribe(
                request_id=rid, terminal=pane.terminal, role=Role.PRIMARY, cols=100, rows=30
            )
        )
        while not isinstance(primary.receive(deadline), BootstrapReady):
            pass  # the primary's size is applied before its bootstrap
        assert client.resolve(name, deadline).cols == 100
        client.snapshot(name, deadline=deadline)
        client.snapshot(name, scrollback=0, cells=True, deadline=deadline)
        assert run(client, name, "echo $COLUMNS; stty size") == (0, "100\n30 100")
        client.send_keys(name, ["echo sent", "Enter"], deadline)
        assert client.wait(name, until="sent", timeout=10, deadline=deadline).met
        assert client.wait(name, idle_ms=50, timeout=10, deadline=deadline).met
        after = client.resolve(name, deadline)
        assert (after.cols, after.rows) == (100, 30)
        while (frame := primary.poll()) is not None:
            if isinstance(frame, Resized):
                assert (frame.cols, frame.rows) == (100, 30)

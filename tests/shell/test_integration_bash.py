"""bash panes get shell integration: exact marks, the user's hooks untouched, nothing visible."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from .kit import ShellHost, command_marks, cwd_mark, cycle_order, marks, shell_host

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


BASHRC = """\
PS1='user> '
PROMPT_COMMAND='echo "$?" >> ~/hook.log'
"""

COMMANDS = ["true", "false", "sh -c 'exit 42'", "true", "false", 'echo "é\'x"']


def test_marks_history_and_screen(host: ShellHost) -> None:
    home = host.make_home("main", {".bashrc": BASHRC})
    (home / "d é").mkdir()
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    for line in COMMANDS:
        pane.command(line)
    # A continuation line: its prompt is marked k=s.
    pane.type('echo "a\r')
    pane.read_until(lambda d: d.rfind(b"\x1b]133;A;k=s\x07") > d.rfind(b"\x1b]133;A\x07"))
    pane.command('b"')
    pane.command('cd "d é"')
    pane.command("history")

    typed = [*COMMANDS, 'echo "a\nb"', 'cd "d é"', "history"]
    statuses = ["0", "1", "42", "0", "1", "0", "0", "0", "0"]
    expected = []
    for line, status in zip(typed, statuses, strict=True):
        expected += ["C " + line, "D " + status]
    assert command_marks(pane.data) == expected

    # One cycle per prompt: D (when a command ran), OSC 7, A, B; C at Enter.
    order = cycle_order(pane.data)
    cycle = ["C", "D", "7", "A", "B"]
    assert order[:3] == ["7", "A", "B"]
    assert order[3:18] == cycle * 3
    assert order[33:40] == ["As", "B", *cycle]

    found = marks(pane.data)
    assert cwd_mark(str(home)) in found
    assert found[-3] == cwd_mark(str(home / "d é"))

    # The user's PROMPT_COMMAND ran at every prompt and saw each command's status.
    assert host_read(home, "hook.log").split() == ["0", *statuses]

    screen = pane.screen()
    at = screen.index("user> history")
    assert screen[:at] == [
        "user> true",
        "user> false",
        "user> sh -c 'exit 42'",
        "user> true",
        "user> false",
        'user> echo "é\'x"',
        "é'x",
        'user> echo "a',
        '> b"',
        "a",
        "b",
        'user> cd "d é"',
    ]
    assert screen[-1] == "user>"
    history = [re.sub(r"^\s*\d+\s+", "", row) for row in screen[at + 1 : -1]]
    assert history == ["true", "false", "sh -c 'exit 42'", "true", "false", "echo \"é'x\"",
                       'echo "a', 'b"', 'cd "d é"', "history"]  # fmt: skip


def host_read(home: object, name: str) -> str:
    from pathlib import Path

    path = Path(str(home)) / name
    return path.read_text() if path.exists() else ""

"""fish panes get shell integration: exact marks, the user's prompt and event handlers untouched."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest

from .kit import (
    STANDARD_STATUSES,
    ShellHost,
    command_marks,
    cwd_mark,
    cycle_order,
    drive_standard,
    marks,
    output_of,
    shell_host,
)

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed"),
]

CONFIG = """\
set -g fish_greeting ''
function fish_prompt
    printf 'user> '
end
function userhook --on-event fish_prompt
    echo $status >> ~/hook.log
end
function userexec --on-event fish_preexec
    echo $argv[1] >> ~/preexec.log
end
"""


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


def test_marks_history_and_screen(host: ShellHost) -> None:
    home = host.make_home("main", {".config/fish/config.fish": CONFIG})
    (home / "d é").mkdir()
    pane = host.spawn(["fish"], env={"HOME": str(home)})
    typed = drive_standard(pane, "d é", "history", continuation=False)
    statuses = [*STANDARD_STATUSES, "0", "0", "0"]
    expected = []
    for line, status in zip(typed, statuses, strict=True):
        expected += ["C " + line, "D " + status]
    assert command_marks(pane.data) == expected

    # fish has no continuation prompt: a two-line command is edited in place.
    order = cycle_order(pane.data)
    assert order == ["7", "A", "B", *["C", "D", "7", "A", "B"] * len(typed)]
    found = marks(pane.data)
    assert cwd_mark(str(home)) in found
    assert found[-3] == cwd_mark(str(home / "d é"))

    # The user's event handlers ran: at every prompt, with the status; at every command.
    assert (home / "hook.log").read_text().split() == ["0", *statuses]
    assert (home / "preexec.log").read_text() == "".join(line + "\n" for line in typed)

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
        '      b"',
        "a",
        "b",
        'user> cd "d é"',
    ]
    assert screen[-1] == "user>"
    # fish lists its history newest first, each command once.
    assert screen[at + 1 : -1] == [
        'cd "d é"',
        'echo "a',
        'b"',
        'echo "é\'x"',
        "false",
        "true",
        "sh -c 'exit 42'",
    ]


def test_a_prompt_redefined_later_is_wrapped_again_and_sees_the_status(host: ShellHost) -> None:
    home = host.make_home("redefine", {".config/fish/config.fish": CONFIG})
    pane = host.spawn(["fish"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("function fish_prompt; printf 'new[%s]> ' $status; end")
    pane.command("false")
    prompts = re.findall(rb"\x1b\]133;A\x07.*?(user> |new\[\d\]> )\x1b\]133;B\x07", pane.data)
    assert prompts == [b"user> ", b"new[0]> ", b"new[1]> "]
    assert output_of(pane, "functions -q __phux_user_prompt; and echo wrapped") == ["wrapped"]


def test_login_fish(host: ShellHost) -> None:
    home = host.make_home("login", {".config/fish/config.fish": CONFIG})
    pane = host.spawn(["fish", "-l"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    assert output_of(pane, "status is-login; and echo login") == ["login"]
    assert command_marks(pane.data)[-2:] == ["C status is-login; and echo login", "D 0"]

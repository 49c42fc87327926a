"""POSIX sh/dash panes get what a shell without hooks can give: D;$? and OSC 7 at
every prompt, PS1/PS2 wrapped, no C mark (spec/shell-integration.md)."""

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
    pytest.mark.skipif(shutil.which("dash") is None, reason="dash is not installed"),
]

# The user's prompt hook in a POSIX shell: a command substitution in PS1.
SHRC = "PS1='$(echo $? >> ~/hook.log)user> '\n"


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


@pytest.mark.parametrize("program", ["dash", "sh"])
def test_marks_and_screen(host: ShellHost, program: str) -> None:
    home = host.make_home(f"main-{program}", {".shrc": SHRC})
    (home / "d é").mkdir()
    pane = host.spawn([program], env={"HOME": str(home), "ENV": "$HOME/.shrc"})
    typed = drive_standard(pane, "d é", 'echo "[$ENV]"')
    statuses = [*STANDARD_STATUSES, "0", "0", "0"]
    # No C: dash has no hook before a command. D comes at every prompt, the first too.
    assert command_marks(pane.data) == ["D " + s for s in ["0", *statuses]]
    order = cycle_order(pane.data)
    cycle = ["D", "7", "A", "B"]
    assert order[: 4 * 7] == cycle * 7
    assert order[4 * 7 : 4 * 10 + 2] == ["As", "B", *cycle * 3]
    found = marks(pane.data)
    assert cwd_mark(str(home)) in found
    assert found[-3] == cwd_mark(str(home / "d é"))

    assert (home / "hook.log").read_text().split() == ["0", *statuses]
    screen = pane.screen()
    assert screen == [
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
        f"user> {typed[-1]}",
        "[$HOME/.shrc]",
        "user>",
    ]


def test_without_a_user_env_file(host: ShellHost) -> None:
    home = host.make_home("noenv", {".profile": "PS1='login> '\n"})
    pane = host.spawn(["dash", "-l"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    assert output_of(pane, 'echo "[${ENV-unset}]"') == ["[unset]"]
    assert output_of(pane, "env | grep -c '^_PHUX'") == ["0"]
    assert pane.screen()[-1] == "login>"
    prompts = re.findall(rb"\x1b\]133;A\x07(.*?)\x1b\]133;B\x07", pane.data)
    assert set(prompts) == {b"login> "}


def test_bash_started_as_sh(host: ShellHost) -> None:
    # Where /bin/sh is bash: the sh script, its marks kept out of readline's width.
    home = host.make_home("bash-as-sh", {".shrc": SHRC})
    bash = shutil.which("bash")
    assert bash is not None
    (home / "bin").mkdir()
    (home / "bin" / "sh").symlink_to(bash)
    pane = host.spawn([str(home / "bin" / "sh")], env={"HOME": str(home), "ENV": "$HOME/.shrc"})
    pane.wait_prompt(1)
    pane.command("false")
    pane.command("sh -c 'exit 5'")
    assert output_of(pane, "echo $?") == ["5"]
    assert command_marks(pane.data) == ["D 0", "D 1", "D 5", "D 0"]
    # The user's PS1 hook saw each status although OSC 7 is a command substitution.
    assert (home / "hook.log").read_text().split() == ["0", "1", "5", "0"]
    assert pane.screen()[:2] == ["user> false", "user> sh -c 'exit 5'"]

"""zsh panes get shell integration: exact marks, the user's hooks and ZDOTDIR untouched."""

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
    pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed"),
]

ZSHRC = """\
PS1='user> '
HISTFILE=~/.zsh_history HISTSIZE=100 SAVEHIST=100
precmd() { print -r -- $? >> ~/hook.log }
userexec() { print -r -- "$1" >> ~/preexec.log }
preexec_functions+=(userexec)
"""


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


def test_marks_history_and_screen(host: ShellHost) -> None:
    home = host.make_home("main", {".zshrc": ZSHRC})
    (home / "d é").mkdir()
    pane = host.spawn(["zsh"], env={"HOME": str(home)})
    typed = drive_standard(pane, "d é", "fc -l")
    statuses = [*STANDARD_STATUSES, "0", "0", "0"]
    expected = []
    for line, status in zip(typed, statuses, strict=True):
        expected += ["C " + line, "D " + status]
    assert command_marks(pane.data) == expected

    order = cycle_order(pane.data)
    cycle = ["C", "D", "7", "A", "B"]
    assert order[:3] == ["7", "A", "B"]
    assert order[3:33] == cycle * 6
    assert order[33:40] == ["As", "B", *cycle]
    found = marks(pane.data)
    assert cwd_mark(str(home)) in found
    assert found[-3] == cwd_mark(str(home / "d é"))

    # The user's precmd saw every status; their preexec every command line.
    assert (home / "hook.log").read_text().split() == ["0", *statuses]
    assert (home / "preexec.log").read_text() == "".join(line + "\n" for line in typed)

    screen = pane.screen()
    at = screen.index("user> fc -l")
    assert screen[:at] == [
        "user> true",
        "user> false",
        "user> sh -c 'exit 42'",
        "user> true",
        "user> false",
        'user> echo "é\'x"',
        "é'x",
        'user> echo "a',
        'dquote> b"',
        "a",
        "b",
        'user> cd "d é"',
    ]
    assert screen[-1] == "user>"
    history = [re.sub(r"^\s*\d+\s+", "", row) for row in screen[at + 1 : -1]]
    assert history == [*typed[:6], 'echo "a\\nb"', 'cd "d é"']


def test_zdotdir_is_the_users_and_its_files_are_read(host: ShellHost) -> None:
    home = host.make_home(
        "zdot",
        {
            "z/.zshenv": "print zshenv >> ~/marker\n",
            "z/.zshrc": "PS1='zdot> '\nprint zshrc >> ~/marker\n",
            "z/.zprofile": "print zprofile >> ~/marker\n",
            "z/.zlogin": "print zlogin >> ~/marker\n",
        },
    )
    pane = host.spawn(["zsh", "-l"], env={"HOME": str(home), "ZDOTDIR": str(home / "z")})
    pane.wait_prompt(1)
    assert output_of(pane, 'echo "[$ZDOTDIR]"') == [f"[{home / 'z'}]"]
    assert (home / "marker").read_text().split() == ["zshenv", "zprofile", "zshrc", "zlogin"]
    assert pane.screen()[-1] == "zdot>"
    assert output_of(pane, "env | grep -c '^_PHUX'") == ["0"]

    # The usual XDG setup: ~/.zshenv moves ZDOTDIR, the rest lives there and
    # uses it; phux's hooks still come last, so the first prompt is marked.
    home = host.make_home(
        "xdg",
        {
            ".zshenv": 'ZDOTDIR="$HOME/.config/zsh"\n',
            ".config/zsh/.zshrc": 'source "$ZDOTDIR/prompt.zsh"\n',
            ".config/zsh/prompt.zsh": "precmd_functions+=(mine)\nmine() { PS1='xdg> ' }\n",
        },
    )
    pane = host.spawn(["zsh"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    assert pane.screen()[-1] == "xdg>"
    assert output_of(pane, 'echo "[$ZDOTDIR]"') == [f"[{home / '.config/zsh'}]"]

    home = host.make_home("nozdot", {".zshrc": "PS1='$ '\n"})
    pane = host.spawn(["zsh"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    assert output_of(pane, 'echo "[${ZDOTDIR-unset}]"') == ["[unset]"]


def test_a_theme_that_rebuilds_the_prompt_in_precmd(host: ShellHost) -> None:
    rc = 'precmd() { PS1="t$((++n))> " }\nprecmd_functions+=(later)\nlater() { false }\n'
    home = host.make_home("theme", {".zshrc": rc})
    pane = host.spawn(["zsh"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("sh -c 'exit 7'")
    pane.command("true")
    prompts = re.findall(rb"\x1b\]133;A\x07(.*?)\x1b\]133;B\x07", pane.data)
    assert prompts == [b"t1> ", b"t2> ", b"t3> "]
    assert command_marks(pane.data) == ["C sh -c 'exit 7'", "D 7", "C true", "D 0"]


@pytest.mark.parametrize(
    "line",
    ["precmd_functions=()", "preexec_functions=()", "precmd_functions=() preexec_functions=()"],
)
def test_hooks_removed_at_the_prompt_come_back(host: ShellHost, line: str) -> None:
    home = host.make_home(
        "removed-" + "".join(c for c in line if c.isalpha()), {".zshrc": "PS1='$ '\n"}
    )
    pane = host.spawn(["zsh"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command(line)
    pane.command("false")
    pane.command("(exit 3)")
    # Each hook puts the others back, and so does the zle hook run when Enter
    # accepts a line: only the command that removed the precmd hook has no D
    # (the next prompt's A ends it with an unknown status).
    removed = [f"C {line}"] if "precmd" in line else [f"C {line}", "D 0"]
    assert command_marks(pane.data) == [*removed, "C false", "D 1", "C (exit 3)", "D 3"]
    assert pane.prompts() == 4

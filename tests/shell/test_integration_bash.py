"""bash panes get shell integration: exact marks, the user's hooks untouched, nothing visible."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .kit import ShellHost, command_marks, cwd_mark, cycle_order, marks, output_of, shell_host

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


def host_read(home: Path, name: str) -> str:
    path = home / name
    return path.read_text() if path.exists() else ""


def test_coexists_with_array_prompt_command_debug_trap_and_a_prompt_rewritten_each_time(
    host: ShellHost,
) -> None:
    # Like starship: PROMPT_COMMAND (an array here) builds PS1 afresh at every prompt.
    rc = """\
PROMPT_COMMAND=('n=$((n+1)); PS1="star$n> "' 'echo "$?" >> ~/hook.log')
trap 'dbg=$((dbg+1))' DEBUG
"""
    home = host.make_home("coexist", {".bashrc": rc})
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("true")
    pane.command("false")
    assert output_of(pane, 'echo "[$?]"') == ["[1]"]
    assert output_of(pane, "trap -p DEBUG") == ["trap -- 'dbg=$((dbg+1))' DEBUG"]
    assert int(output_of(pane, 'echo "$dbg"')[0]) > 0
    prompts = re.findall(rb"\x1b\]133;A\x07(.*?)\x1b\]133;B\x07", pane.data)
    assert prompts == [b"star%d> " % n for n in range(1, len(prompts) + 1)]
    assert host_read(home, "hook.log").split()[1:5] == ["0", "1", "0", "0"]
    assert [m for m in command_marks(pane.data) if m.startswith("D")][:4] == [
        "D 0",
        "D 1",
        "D 0",
        "D 0",
    ]


# The protocol of bash-preexec (github.com/rcaloras/bash-preexec), reduced to
# what matters here: it installs itself from a last PROMPT_COMMAND entry at the
# first prompt, then keeps __bp_interactive_mode last, and its DEBUG trap takes
# the first command run after that entry for the user's command.
PREEXEC_FRAMEWORK = """\
PS1='fw> '
fw_mode=
fw_debug() {
    [[ -n $fw_mode ]] || return 0
    fw_mode=
    echo "preexec[$BASH_COMMAND]" >> ~/fw.log
}
fw_precmd() { echo "precmd[$?]" >> ~/fw.log; }
__bp_interactive_mode() { fw_mode=on; }
__bp_install() {
    trap fw_debug DEBUG
    local -a pc=()
    local e
    for e in "${PROMPT_COMMAND[@]}"; do [[ $e == __bp_install ]] || pc+=("$e"); done
    PROMPT_COMMAND=(fw_precmd "${pc[@]}" __bp_interactive_mode)
    __bp_interactive_mode
}
PROMPT_COMMAND+=(__bp_install)
"""


def test_coexists_with_a_debug_trap_preexec_framework(host: ShellHost) -> None:
    home = host.make_home("framework", {".bashrc": PREEXEC_FRAMEWORK})
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("false")
    pane.command("sh -c 'exit 3'")
    pane.command("true")
    assert (home / "fw.log").read_text().split("\n") == [
        "preexec[false]",
        "precmd[1]",
        "preexec[sh -c 'exit 3']",
        "precmd[3]",
        "preexec[true]",
        "precmd[0]",
        "",
    ]
    assert command_marks(pane.data) == [
        "C false",
        "D 1",
        "C sh -c 'exit 3'",
        "D 3",
        "C true",
        "D 0",
    ]
    # Settled: the framework's entries first and last, ours inside, none twice.
    assert output_of(pane, "printf '%s,' \"${PROMPT_COMMAND[@]}\"; echo") == [
        "fw_precmd,_phux_prompt_start,_phux_prompt_end,__bp_interactive_mode,"
    ]


def test_login_shell_reads_the_profile_and_stays_a_login_shell(host: ShellHost) -> None:
    profile = "PS1='login> '\necho profile-read >> ~/marker\n"
    home = host.make_home("login", {".bash_profile": profile, ".bashrc": "echo rc >> ~/marker\n"})
    pane = host.spawn(["bash", "-l"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    assert output_of(pane, "shopt login_shell") == ["login_shell    \ton".expandtabs()]
    pane.command("false")
    assert command_marks(pane.data)[-2:] == ["C false", "D 1"]
    assert host_read(home, "marker") == "profile-read\n"
    assert pane.screen()[-1] == "login>"


def test_startup_state_is_the_users(host: ShellHost) -> None:
    home = host.make_home("state", {".bashrc": "PS1='$ '\n"})
    pane = host.spawn(["bash"], env={"HOME": str(home), "ENV": "$HOME/my-env"})
    pane.wait_prompt(1)
    assert output_of(pane, 'echo "[$ENV] [$HISTFILE]"') == [
        f"[$HOME/my-env] [{home}/.bash_history]"
    ]
    found = output_of(pane, "env | grep -c '^_PHUX' ; shopt -o posix")
    assert [row.split() for row in found] == [["0"], ["posix", "off"]]
    assert output_of(pane, "shopt inherit_errexit")[0].split() == ["inherit_errexit", "off"]
    # $_ and $? are the last command's, not the hooks'.
    pane.command("echo lastarg")
    assert output_of(pane, 'echo "[$_]"') == ["[lastarg]"]
    pane.command("sh -c 'exit 3'")
    assert output_of(pane, 'echo "[$?]"') == ["[3]"]


def test_a_command_bash_does_not_record_has_no_command_line(host: ShellHost) -> None:
    home = host.make_home("ignorespace", {".bashrc": "PS1='$ '\nHISTCONTROL=ignorespace\n"})
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command(" echo secret")
    pane.command("echo open")
    assert command_marks(pane.data) == ["C", "D 0", "C echo open", "D 0"]


def test_norc_and_rcfile(host: ShellHost) -> None:
    home = host.make_home("rcfile", {".bashrc": "PS1='rc> '\n", "other": "PS1='other> '\n"})
    pane = host.spawn(["bash", "--norc"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("true")
    assert not pane.screen()[-1].startswith("rc>")
    pane = host.spawn(["bash", "--rcfile", str(home / "other")], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("true")
    assert pane.screen()[-1] == "other>"


@pytest.mark.parametrize(
    "line", ["PROMPT_COMMAND=", "unset PROMPT_COMMAND", "PROMPT_COMMAND=(x=1)"]
)
def test_hooks_removed_at_the_prompt_leave_no_half_command(host: ShellHost, line: str) -> None:
    home = host.make_home(
        "removed-" + "".join(c for c in line if c.isalnum()), {".bashrc": "PS1='$ '\n"}
    )
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command(line)
    pane.command("false")
    pane.command("(exit 3)")
    # PS1 keeps its marks, and its A piece prints the D the prompt hook did not
    # (and puts the hooks back when PROMPT_COMMAND was emptied or unset).
    assert command_marks(pane.data) == [f"C {line}", "D 0", "C false", "D 1", "C (exit 3)", "D 3"]
    assert pane.prompts() == 4


def test_strict_user_settings_and_aliases_do_not_break_the_hooks(host: ShellHost) -> None:
    rc = """\
set -u
shopt -s nullglob extglob failglob
alias local='echo BROKEN' printf='echo BROKEN' history='echo BROKEN' builtin='echo BROKEN'
PS1='u> '
"""
    home = host.make_home("strict", {".bashrc": rc})
    (home / "d é").mkdir()
    pane = host.spawn(["bash"], env={"HOME": str(home)})
    pane.wait_prompt(1)
    pane.command("false")
    pane.command('cd "d é"')
    assert command_marks(pane.data) == ["C false", "D 1", 'C cd "d é"', "D 0"]
    assert marks(pane.data)[-3] == cwd_mark(str(home / "d é"))
    assert output_of(pane, "shopt expand_aliases; alias local") == [
        "expand_aliases\ton".expandtabs(),
        "alias local='echo BROKEN'",
    ]
    assert "BROKEN" not in "\n".join(pane.screen()[:-3])
    assert "unbound" not in "\n".join(pane.screen())

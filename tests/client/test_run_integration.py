"""`run` on shells phux started with its shell integration, end to end.

Real server, real shells, real programs. Each shell gets a user startup file
that sets its own prompt and its own prompt hook (the hook appends a line to a
file), so the tests also show the integration leaves them working.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client import Client, Deadline, RunTimedOut
from phux.client.errors import IncompleteCommand, PaneBusy, PaneDied
from phux.client.run_base import RunOutcome

from .conftest import unique

SHELL_INTEGRATION = Path(__file__).resolve().parents[2] / "src" / "phux" / "shell_integration"
SHELLS = ["bash", "zsh", "fish", "dash"]


class Shell:
    """A user environment for one shell: a HOME with its startup file and prompt hook."""

    def __init__(self, name: str, home: Path) -> None:
        self.name = name
        self.home = home
        self.hook_log = home / "hook.log"
        self.env = {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "ZDOTDIR": str(home),
            "HISTFILE": str(home / "history"),
        }
        log = self.hook_log
        if name == "bash":
            (home / ".bashrc").write_text(
                f"PS1='user$ '\nPROMPT_COMMAND='echo hook >> {log}'\nHISTCONTROL=\n"
            )
            self.argv = ["bash"]
        elif name == "zsh":
            (home / ".zshrc").write_text(
                f"PROMPT='user$ '\nprecmd() {{ echo hook >> {log} }}\n"
                "setopt no_prompt_sp\nHISTSIZE=100\nSAVEHIST=100\n"
            )
            self.argv = ["zsh"]
        elif name == "fish":
            config = home / ".config" / "fish"
            config.mkdir(parents=True)
            (config / "config.fish").write_text(
                "set -g fish_greeting\n"
                "function fish_prompt; echo -n 'user$ '; end\n"
                f"function user_hook --on-event fish_prompt; echo hook >> {log}; end\n"
            )
            self.argv = ["fish"]
        else:
            rc = home / ".shrc"
            # dash has no prompt hook: the user's own PS1 runs a command substitution.
            rc.write_text(f"PS1='$(echo hook >> {log})user$ '\n")
            self.env["ENV"] = str(rc)
            self.argv = ["dash", "-i"]

    def hooks(self) -> int:
        try:
            return len(self.hook_log.read_text().splitlines())
        except FileNotFoundError:
            return 0


def integrated(shell: str) -> bool:
    script = {"dash": "sh"}.get(shell, shell)
    return shutil.which(shell) is not None and (SHELL_INTEGRATION / script).is_dir()


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("home")


def start(client: Client, shell: Shell, env: dict[str, str] | None = None) -> str:
    name = unique(shell.name)
    client.new(
        name,
        command=shell.argv,
        env={**shell.env, **(env or {})},
        cwd=str(shell.home),
        deadline=Deadline.after(10),
    )
    # The first prompt: run waits for the shell to draw it.
    return name


def run(client: Client, target: str, command: str | list[str], timeout: float = 20) -> RunOutcome:
    return client.run(target, command, timeout=timeout, deadline=Deadline.after(timeout + 5))


def screen(client: Client, target: str) -> list[str]:
    data = client.snapshot_data(target, scrollback=0, deadline=Deadline.after(10))
    return [line for line in [*data["scrollback"], *data["lines"]] if line.strip()]


def wait_foreground(client: Client, target: str, program: str, timeout: float = 15) -> None:
    deadline = Deadline.after(timeout)
    while True:
        fg = client.resolve(target, deadline).foreground
        if fg is not None and fg.name.startswith(program):  # vim.basic, python3.12
            return
        client.wait(target, idle_ms=50, timeout=1, deadline=deadline)


def prompt(shell: str) -> str:
    return "user$ "


# ---------------------------------------------------------------- the happy path


@pytest.mark.parametrize("shell_name", SHELLS)
def test_run_types_only_the_command(client: Client, home: Path, shell_name: str) -> None:
    if not integrated(shell_name):
        pytest.skip(f"no {shell_name} integration here")
    shell = Shell(shell_name, home)
    name = start(client, shell)
    first = run(client, name, "echo hello")
    assert (first.exit_code, first.output) == (0, "hello")
    hooks = shell.hooks()
    assert hooks >= 1
    out = run(client, name, "echo out; sh -c 'exit 3'")
    assert (out.exit_code, out.output) == (3, "out")
    quoted = run(client, name, ["echo", "it's", "a b"])
    assert (quoted.exit_code, quoted.output) == (0, "it's a b")
    code = run(client, name, "sh -c 'exit 255'")
    assert (code.exit_code, code.output) == (255, "")
    many = run(client, name, "printf 'l%s\\n' 1 2 3")
    assert many.output == "l1\nl2\nl3"
    assert shell.hooks() >= hooks + 4, "the user's prompt hook stopped running"
    p = prompt(shell_name)
    rows = screen(client, name)
    assert rows[-1] == p.rstrip()
    assert rows[:-1] == [
        f"{p}echo hello",
        "hello",
        f"{p}echo out; sh -c 'exit 3'",
        "out",
        f"{p}{quoted.command}",
        "it's a b",
        f"{p}sh -c 'exit 255'",
        f"{p}printf 'l%s\\n' 1 2 3",
        "l1",
        "l2",
        "l3",
    ]
    if shell_name == "dash":
        return  # dash keeps no history
    listing = {"bash": "history", "zsh": "fc -ln 1", "fish": "history --reverse"}[shell_name]
    hist = run(client, name, listing).output
    assert "__phx" not in hist and "printf '__" not in hist
    assert "echo hello" in hist and "sh -c 'exit 255'" in hist


@pytest.mark.parametrize("shell_name", SHELLS)
def test_unbalanced_quote_is_reported_at_once(client: Client, home: Path, shell_name: str) -> None:
    if not integrated(shell_name):
        pytest.skip(f"no {shell_name} integration here")
    shell = Shell(shell_name, home)
    name = start(client, shell)
    run(client, name, "true")
    began = time.monotonic()
    with pytest.raises(IncompleteCommand) as info:
        run(client, name, "echo 'unbalanced")
    assert time.monotonic() - began < 4.0
    assert info.value.exit_code == 4
    after = run(client, name, "echo fine")
    assert (after.exit_code, after.output) == (0, "fine")


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_up_right_after_run_recalls_the_command(
    client: Client, home: Path, shell_name: str
) -> None:
    if not integrated(shell_name):
        pytest.skip(f"no {shell_name} integration here")
    shell = Shell(shell_name, home)
    name = start(client, shell)
    run(client, name, "echo recall-me")
    client.send_keys(name, ["Up"], Deadline.after(5))
    line = prompt(shell_name) + "echo recall-me"
    deadline = Deadline.after(10)
    while screen(client, name).count(line) < 2:
        assert not deadline.expired(), screen(client, name)
        client.wait(name, idle_ms=30, timeout=1, deadline=deadline)
    assert "^[[A" not in "".join(screen(client, name))
    client.send_keys(name, ["C-u"], Deadline.after(5))


def test_pane_dying_during_run_is_not_the_command_status(client: Client, home: Path) -> None:
    if not integrated("bash"):
        pytest.skip("no bash integration here")
    name = start(client, Shell("bash", home))
    run(client, name, "true")
    with pytest.raises(PaneDied) as info:
        run(client, name, "kill -9 $$")
    assert info.value.exit_code == 5
    assert info.value.status == 128 + 9
    assert "signal 9" in info.value.message


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_no_shell_integration_falls_back_to_markers(
    client: Client, home: Path, shell_name: str
) -> None:
    if shutil.which(shell_name) is None:
        pytest.skip(f"{shell_name} is not installed")
    shell = Shell(shell_name, home)
    name = start(client, shell, {"PHUX_SHELL_INTEGRATION": "0"})
    out = run(client, name, "echo plain; sh -c 'exit 7'")
    assert (out.exit_code, out.output) == (7, "plain")
    assert any("__phx" in row for row in screen(client, name))  # the markers' echo
    quoted = run(client, name, ["echo", "it's"])
    assert quoted.output == "it's"


def test_a_shell_started_inside_the_pane_gets_markers(client: Client, bash: str) -> None:
    """A shell phux did not start (like one over ssh) prints no marks: markers again."""
    client.send_keys(bash, ["sh", "Enter"], Deadline.after(5))
    deadline = Deadline.after(10)
    while True:
        pane = client.resolve(bash, deadline)
        if pane.foreground is not None and pane.foreground.pgrp != pane.pid:
            break
        client.wait(bash, idle_ms=50, timeout=1, deadline=deadline)
    out = run(client, bash, "echo nested; sh -c 'exit 2'")
    assert (out.exit_code, out.output) == (2, "nested")


def test_a_fish_slow_to_take_the_enter_is_waited_for(client: Client, home: Path) -> None:
    """fish draws no continuation prompt, so run takes "no mark a while after Enter"
    for a command line fish waits to complete. A fish that has not even read the
    Enter yet (stopped here; descheduled on a loaded machine) is not that."""
    if not integrated("fish"):
        pytest.skip("no fish integration here")
    name = start(client, Shell("fish", home))
    run(client, name, "true")
    pid = client.resolve(name, Deadline.after(5)).pid
    os.kill(pid, signal.SIGSTOP)
    resume = threading.Timer(2.0, os.kill, (pid, signal.SIGCONT))
    resume.start()
    try:
        out = run(client, name, "echo still-here")
        assert (out.exit_code, out.output) == (0, "still-here")
    finally:
        resume.cancel()
        os.kill(pid, signal.SIGCONT)


# ---------------------------------------------------------------- refusals


@pytest.fixture
def bash(client: Client, home: Path) -> str:
    if not integrated("bash"):
        pytest.skip("no bash integration here")
    name = start(client, Shell("bash", home))
    run(client, name, "true")
    return name


def refused(client: Client, name: str, *words: str) -> PaneBusy:
    began = time.monotonic()
    with pytest.raises(PaneBusy) as info:
        run(client, name, "echo SHOULD-NOT-RUN")
    assert time.monotonic() - began < 5.0
    assert info.value.exit_code == 3
    for word in words:
        assert word in info.value.message
    assert not any("SHOULD-NOT-RUN" in row for row in screen(client, name))
    return info.value


def test_refuses_in_vim_and_leaves_the_buffer_alone(client: Client, bash: str, home: Path) -> None:
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    path = home / "notes.txt"
    path.write_text("line one\nline two\n")
    client.send_keys(bash, ["vim -u NONE -N -n notes.txt", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "vim")
    assert client.wait(bash, until="line two", timeout=10, deadline=Deadline.after(15)).met
    assert client.wait(bash, idle_ms=200, timeout=10, deadline=Deadline.after(15)).met
    before = screen(client, bash)
    error = refused(client, bash, "vim")
    assert error.holder.startswith("vim") and error.state == "tui"
    assert screen(client, bash) == before  # the buffer, the mode line: untouched
    client.send_keys(bash, ["ZQ"], Deadline.after(5))
    wait_foreground(client, bash, "bash")
    assert path.read_text() == "line one\nline two\n"
    assert run(client, bash, "echo back").output == "back"


def test_refuses_in_less(client: Client, bash: str, home: Path) -> None:
    (home / "long.txt").write_text("".join(f"row {i}\n" for i in range(200)))
    client.send_keys(bash, ["less long.txt", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "less")
    assert client.wait(bash, until="row 5", timeout=10, deadline=Deadline.after(15)).met
    before = screen(client, bash)
    refused(client, bash, "less")
    assert screen(client, bash) == before
    client.send_keys(bash, ["q"], Deadline.after(5))
    wait_foreground(client, bash, "bash")
    assert not (home / "echo").exists()


def test_refuses_in_a_python_repl(client: Client, bash: str) -> None:
    if shutil.which("python3") is None:
        pytest.skip("python3 is not installed")
    client.send_keys(bash, ["python3 -q", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "python3")
    assert client.wait(bash, until=">>>", timeout=10, deadline=Deadline.after(15)).met
    error = refused(client, bash, "python3", "a running program")
    # A line REPL, not a full-screen program: its readline keeps the tty's signals on.
    assert error.state == "running" and error.holder.startswith("python3")
    client.send_keys(bash, ["print(6 * 7)", "Enter"], Deadline.after(5))
    assert client.wait(bash, regex="^42$", timeout=10, deadline=Deadline.after(15)).met
    assert not any("Error" in row for row in screen(client, bash))
    client.send_keys(bash, ["exit()", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "bash")


def test_refuses_while_keys_typed_before_are_unread(client: Client, bash: str) -> None:
    """Keys the shell has not read yet (it is stopped here; busy or descheduled
    elsewhere) are invisible on the screen, but run's command typed behind them would
    join their line: `echo half` + the command. The tty's count of unread input says
    so; run waits for the shell to read them (a moment), then refuses."""
    pid = client.resolve(bash, Deadline.after(5)).pid
    os.kill(pid, signal.SIGSTOP)
    try:
        client.send_keys(bash, ["echo half"], Deadline.after(5))
        began = time.monotonic()
        with pytest.raises(PaneBusy) as info:
            run(client, bash, "echo SHOULD-NOT-RUN", timeout=10)
        assert time.monotonic() - began < 5.0
        assert info.value.exit_code == 3 and "not been read" in info.value.message, info.value
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.wait(bash, until="echo half", timeout=10, deadline=Deadline.after(15)).met
    assert client.wait(bash, idle_ms=200, timeout=10, deadline=Deadline.after(15)).met
    assert not any("SHOULD-NOT-RUN" in row for row in screen(client, bash))
    client.send_keys(bash, ["C-u"], Deadline.after(5))
    assert run(client, bash, "echo after").output == "after"


def test_refuses_while_cat_reads(client: Client, bash: str) -> None:
    client.send_keys(bash, ["cat", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "cat")
    error = refused(client, bash, "cat")
    assert error.state == "running"
    client.send_keys(bash, ["typed", "Enter", "C-d"], Deadline.after(5))
    wait_foreground(client, bash, "bash")
    assert run(client, bash, "echo after").output == "after"


def test_refuses_with_pending_input(client: Client, bash: str) -> None:
    client.send_keys(bash, ["echo leftover-"], Deadline.after(5))
    assert client.wait(bash, until="leftover-", timeout=10, deadline=Deadline.after(15)).met
    refused(client, bash, "pending", "leftover-")
    client.send_keys(bash, ["x", "Enter"], Deadline.after(5))
    assert client.wait(bash, regex="^leftover-x$", timeout=10, deadline=Deadline.after(15)).met
    assert run(client, bash, "echo clean").output == "clean"


def test_refuses_at_a_hidden_input_prompt(client: Client, bash: str) -> None:
    client.send_keys(bash, ["read -s secret; echo got-$secret", "Enter"], Deadline.after(5))
    deadline = Deadline.after(10)
    while True:
        fg = client.resolve(bash, deadline).foreground
        if fg is not None and not fg.echo and fg.canonical:
            break
        client.wait(bash, idle_ms=30, timeout=1, deadline=deadline)
    error = refused(client, bash, "hidden input")
    assert error.state == "hidden_input"
    client.send_keys(bash, ["hush", "Enter"], Deadline.after(5))
    assert client.wait(bash, regex="^got-hush$", timeout=10, deadline=Deadline.after(15)).met


def test_force_types_anyway(client: Client, bash: str) -> None:
    client.send_keys(bash, ["cat", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "cat")
    with pytest.raises(RunTimedOut):  # cat only echoes: the command never finishes
        client.run(bash, "forced", timeout=1, force=True, deadline=Deadline.after(5))
    assert client.wait(bash, until="forced", timeout=10, deadline=Deadline.after(15)).met
    client.send_keys(bash, ["C-d"], Deadline.after(5))
    wait_foreground(client, bash, "bash")


def test_runs_on_one_pane_are_serialised(client: Client, bash: str) -> None:
    import threading

    results: list[object] = []

    def agent(i: int) -> None:
        with Client(client.socket_path, env={}) as other:
            try:
                results.append(
                    other.run(bash, f"echo agent-{i}", timeout=20, deadline=Deadline.after(25))
                )
            except Exception as exc:
                results.append(exc)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    outputs = sorted(r.output for r in results if isinstance(r, RunOutcome))
    assert outputs == ["agent-0", "agent-1", "agent-2"], results


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_a_command_typed_just_before_is_not_taken_for_ours(
    client: Client, home: Path, shell_name: str
) -> None:
    if not integrated(shell_name):
        pytest.skip(f"no {shell_name} integration here")
    name = start(client, Shell(shell_name, home))
    run(client, name, "true")
    for i in range(3):
        client.send_keys(name, [f"echo first-{i}", "Enter"], Deadline.after(5))
        out = run(client, name, f"echo second-{i}")
        assert (out.exit_code, out.output) == (0, f"second-{i}")


def test_a_prompt_redrawn_on_resize_is_not_the_commands_end(client: Client, bash: str) -> None:
    """readline draws its prompt (and its marks) again on SIGWINCH: that is no answer."""
    for i in range(6):
        client.resize(bash, 90 + i, 30, Deadline.after(5))
        out = run(client, bash, f"echo size-{i}; stty size")
        assert (out.exit_code, out.output) == (0, f"size-{i}\n30 {90 + i}")


def test_a_listing_from_before_the_shell_took_the_terminal_back_is_not_trusted(
    client: Client, bash: str
) -> None:
    """The listing that resolved the target came before SUBSCRIBE; TERMINAL_STATE
    reports only changes after it (spec/L1.md §8.1). A program that ended in between
    (C-c right before `run`) must not make `run` refuse a shell at its prompt."""
    from phux.client.run import _run_locked

    client.send_keys(bash, ["sleep 30", "Enter"], Deadline.after(5))
    wait_foreground(client, bash, "sleep")
    stale = client.resolve(bash, Deadline.after(5))  # says: sleep holds the pane
    client.send_keys(bash, ["C-c"], Deadline.after(5))
    wait_foreground(client, bash, "bash")
    assert client.wait(bash, idle_ms=100, timeout=10, deadline=Deadline.after(15)).met
    out = _run_locked(client, stale, "echo alive", Deadline.after(15), time.monotonic(), False)
    assert (out.exit_code, out.output) == (0, "alive")


@pytest.mark.parametrize("argv", [["tail", "-f", "log.txt"], ["sleep", "600"]])
def test_refuses_a_pane_whose_own_program_is_not_a_shell(
    client: Client, home: Path, argv: list[str]
) -> None:
    """README's `new-window build -n logs -- tail -f build.log`: the pane's own
    process holds the terminal, and it is not a shell."""
    from phux.client.pane_state import project

    (home / "log.txt").write_text("first\n")
    name = unique("prog")
    client.new(name, command=argv, cwd=str(home), deadline=Deadline.after(10))
    wait_foreground(client, name, argv[0])
    assert project(client.resolve(name, Deadline.after(5)), None) == (argv[0], "running")
    error = refused(client, name, argv[0], "not the shell")
    assert error.state == "running" and error.holder == argv[0]


def test_a_raw_mode_program_off_the_alternate_screen_is_a_tui(client: Client, home: Path) -> None:
    """ICANON and ISIG off (fzf --height, `stty raw`) on the main screen: a TUI."""
    from phux.client.pane_state import project

    name = unique("raw")
    argv = ["/bin/sh", "-c", "stty raw -echo; exec cat"]
    client.new(name, command=argv, cwd=str(home), deadline=Deadline.after(10))
    wait_foreground(client, name, "cat")
    assert project(client.resolve(name, Deadline.after(5)), None) == ("cat", "tui")
    error = refused(client, name, "cat", "a full-screen program")
    assert error.state == "tui"


@pytest.mark.parametrize("integration", ["1", "0"])
def test_a_timeout_reports_the_time_it_waited(client: Client, home: Path, integration: str) -> None:
    """`--timeout 2` waited 2 s from the call: "gave up after 1721 ms" (counted from the
    Enter, after attaching and reading the pane) was not what the caller waited."""
    if integration == "1" and not integrated("bash"):
        pytest.skip("no bash integration here")
    name = start(client, Shell("bash", home), {"PHUX_SHELL_INTEGRATION": integration})
    run(client, name, "true")
    client.close()  # a fresh connection: attaching and reading the pane count too
    began = time.monotonic()
    with pytest.raises(RunTimedOut) as info:
        client.run(name, "sleep 30", timeout=2, deadline=Deadline.after(10))
    waited = (time.monotonic() - began) * 1000
    assert 2000 <= info.value.duration_ms <= waited, (info.value.duration_ms, waited)
    client.send_keys(name, ["C-c"], Deadline.after(5))


@pytest.mark.parametrize("integration", ["1", "0"])
def test_output_before_a_clear_is_kept(client: Client, home: Path, integration: str) -> None:
    """`clear` erases the screen the output was replayed into: only `after` came back,
    with truncated false."""
    if integration == "1" and not integrated("bash"):
        pytest.skip("no bash integration here")
    name = start(client, Shell("bash", home), {"PHUX_SHELL_INTEGRATION": integration})
    out = run(client, name, "echo before; printf '\\033[H\\033[2J\\033[3J'; echo after")
    assert (out.exit_code, out.output, out.truncated) == (0, "before\nafter", False)
    if shutil.which("clear") is not None:
        out = run(client, name, "echo one; clear; echo two")
        assert (out.output, out.truncated) == ("one\ntwo", False)

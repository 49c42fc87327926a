"""Issue 23 item 4: a shell whose prompt hooks were replaced after startup.

Real server, real shells. In each case a person (or a startup file sourced
again) replaces what the integration hooked into: bash's PROMPT_COMMAND, zsh's
hook arrays, dash's PS1, or the shell itself (`exec bash`). Afterwards `run`
must still return the exact output and exit code, at once (the hooks come back
by themselves where the shell allows it, else `run` takes its marker path), and
the pane's state must say `prompt` only where `run` works.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from client.conftest import running_server, unique
from phux.client import Client, Deadline, RunTimedOut
from phux.client.run_base import RunOutcome

RUN_TIMEOUT = 8.0
"""Well above what these commands take: a run that needs it all has lost its end."""


@pytest.fixture(scope="module")
def server() -> Iterator[Path]:
    with running_server() as path:
        yield path


@pytest.fixture
def client(server: Path) -> Iterator[Client]:
    c = Client(server, env={})
    try:
        yield c
    finally:
        c.close()


def need(*programs: str) -> None:
    for program in programs:
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")


def start(client: Client, argv: list[str], home: Path, env: dict[str, str] | None = None) -> str:
    name = unique("hk")
    base = {"HOME": str(home), "TERM": "xterm-256color", "HISTFILE": str(home / "history")}
    client.new(
        name, command=argv, env={**base, **(env or {})}, cwd=str(home), deadline=Deadline.after(10)
    )
    return name


def run(client: Client, name: str, command: str) -> RunOutcome:
    began = time.monotonic()
    out = client.run(name, command, timeout=RUN_TIMEOUT, deadline=Deadline.after(RUN_TIMEOUT + 5))
    assert time.monotonic() - began < RUN_TIMEOUT / 2, f"{command!r} took its whole time"
    return out


def type_line(client: Client, name: str, line: str) -> None:
    """Type ``line`` and Enter as a person would, then let the pane settle."""
    client.send_keys(name, [line, "Enter"], Deadline.after(5))
    assert client.wait(name, idle_ms=400, timeout=10, deadline=Deadline.after(15)).met


def screen(client: Client, name: str) -> list[str]:
    data = client.snapshot_data(name, scrollback=0, deadline=Deadline.after(10))
    return [line for line in [*data["scrollback"], *data["lines"]] if line.strip()]


def state(client: Client, name: str) -> str:
    return str(client.snapshot_data(name, deadline=Deadline.after(10))["state"])


def at_prompt(client: Client, name: str) -> bool:
    """`wait --prompt` is met (within a bound well above its quiet time)."""
    return client.wait(name, prompt=True, timeout=5, deadline=Deadline.after(10)).met


def works(client: Client, name: str) -> None:
    """The next runs are exact, and the pane says `prompt` between them (and `wait
    --prompt` agrees)."""
    assert state(client, name) == "prompt", screen(client, name)
    assert at_prompt(client, name), screen(client, name)
    first = run(client, name, "echo one; false")
    assert (first.output, first.exit_code) == ("one", 1)
    second = run(client, name, "echo two; (exit 7)")
    assert (second.output, second.exit_code) == ("two", 7)
    third = run(client, name, "cd / && echo three")
    assert (third.output, third.exit_code) == ("three", 0)
    # (A marker run returns at its end marker; the shell may not be back at its line
    # editor yet, and until then its state is `running`.)
    assert at_prompt(client, name)
    assert state(client, name) == "prompt"
    # Checked once (--timeout 0): watched for an unmarked prompt's quiet time.
    assert client.wait(name, prompt=True, timeout=0, deadline=Deadline.after(10)).met


# ---------------------------------------------------------------- bash


BASHRC_BODIES = {
    "string": "PROMPT_COMMAND='history -a'\n",
    "prepend": 'PROMPT_COMMAND="history -a; $PROMPT_COMMAND"\n',
    "unset": "unset PROMPT_COMMAND\n",
    "empty-array": "PROMPT_COMMAND=()\n",
    "array": "PROMPT_COMMAND=('history -a')\n",
}


@pytest.mark.parametrize("body", sorted(BASHRC_BODIES))
def test_bash_bashrc_sourced_again(client: Client, tmp_path: Path, body: str) -> None:
    need("bash")
    (tmp_path / ".bashrc").write_text("PS1='me$ '\n" + BASHRC_BODIES[body])
    name = start(client, ["bash"], tmp_path)
    assert run(client, name, "echo ready").output == "ready"
    source(client, name, "source ~/.bashrc", body in GONE_AT_ONCE)
    works(client, name)
    # Once more: the everyday step is repeated. An array PROMPT_COMMAND keeps the
    # hooks out for good: run types its markers there, and they report the end.
    source(client, name, ". ~/.bashrc", body in GONE_AT_ONCE and body != "array")
    works(client, name)


GONE_AT_ONCE = {"unset", "empty-array", "array"}
"""PROMPT_COMMAND emptied or made an array, and PS1 replaced, by one command: nothing
of the integration runs before the next prompt, which has no marks."""


def source(client: Client, name: str, line: str, unmarked: bool) -> None:
    if not unmarked:
        assert run(client, name, line).exit_code == 0
        return
    # The command ran, but its end is unmarked: run says so at once.
    began = time.monotonic()
    with pytest.raises(RunTimedOut) as info:
        run(client, name, line)
    assert time.monotonic() - began < RUN_TIMEOUT / 2
    assert "exit status is unknown" in str(info.value)


@pytest.mark.parametrize(
    "line", ["PROMPT_COMMAND='history -a'", "unset PROMPT_COMMAND", "PROMPT_COMMAND=()"]
)
def test_bash_prompt_command_typed_at_the_prompt(client: Client, tmp_path: Path, line: str) -> None:
    need("bash")
    (tmp_path / ".bashrc").write_text("PS1='me$ '\n")
    name = start(client, ["bash"], tmp_path)
    assert run(client, name, "echo ready").output == "ready"
    type_line(client, name, line)
    works(client, name)


def test_bash_users_hook_keeps_running_and_sees_the_status(client: Client, tmp_path: Path) -> None:
    need("bash")
    log = tmp_path / "hook.log"
    (tmp_path / ".bashrc").write_text("PS1='me$ '\n")
    name = start(client, ["bash"], tmp_path)
    assert run(client, name, "echo ready").output == "ready"
    type_line(client, name, f"PROMPT_COMMAND='echo \"st=$?\" >> {log}'")
    assert run(client, name, "(exit 5)").exit_code == 5
    assert log.read_text().splitlines()[-1] == "st=5", log.read_text()
    # A later string assignment replaces the user's hook, as in bash without phux.
    type_line(client, name, "PROMPT_COMMAND=''")
    lines = len(log.read_text().splitlines())
    works(client, name)
    assert len(log.read_text().splitlines()) == lines


# ---------------------------------------------------------------- zsh


@pytest.mark.parametrize(
    "line",
    ["precmd_functions=()", "preexec_functions=()", "precmd_functions=() preexec_functions=()"],
)
def test_zsh_hook_arrays_replaced(client: Client, tmp_path: Path, line: str) -> None:
    need("zsh")
    (tmp_path / ".zshrc").write_text("PROMPT='me%% '\n")
    name = start(client, ["zsh"], tmp_path, {"ZDOTDIR": str(tmp_path)})
    assert run(client, name, "echo ready").output == "ready"
    type_line(client, name, line)
    works(client, name)


# ---------------------------------------------------------------- dash, exec


def test_dash_ps1_replaced(client: Client, tmp_path: Path) -> None:
    need("dash")
    rc = tmp_path / ".shrc"
    rc.write_text("PS1='me$ '\n")
    name = start(client, ["dash", "-i"], tmp_path, {"ENV": str(rc)})
    assert run(client, name, "echo ready").output == "ready"
    type_line(client, name, "PS1='$(pwd) $ '")
    works(client, name)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_exec_of_a_new_shell(client: Client, tmp_path: Path, shell: str) -> None:
    need("bash", shell)
    (tmp_path / ".bashrc").write_text("PS1='me$ '\n")
    (tmp_path / ".zshrc").write_text("PROMPT='me%% '\n")
    name = start(client, ["bash"], tmp_path, {"ZDOTDIR": str(tmp_path)})
    assert run(client, name, "echo ready").output == "ready"
    type_line(client, name, f"exec {shell}")
    works(client, name)
    # `exec` never came back to mark its end: it is over, its status unknown.
    entries = client.history(name, deadline=Deadline.after(10)).commands
    exec_entry = [e for e in entries if e.command == f"exec {shell}"]
    assert [(e.running, e.exit_code) for e in exec_entry] == [(False, None)], entries

"""Keys another client types while a `run` waits are not that run's output (issue 23
item 10).

While the command runs, the tty is in canonical mode with ECHO: the kernel echoes
whatever anyone types (a person attached, another agent's `send-keys`) into the
same output stream, between the command's marks. `run` tells its own writes from
everyone else's (the server's INPUT_WRITTEN, spec/L1.md §7.1) and leaves the echo
of the others' out of the output; what the command itself prints stays. On a real
server, in bash, zsh, fish and dash, through the CLI and MCP's `phux_run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serving import Server, need_shell, serving_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from mcp_pipes import McpProcess, request

pytestmark = pytest.mark.timeout(180)

STEP = "30"
SHELLS = ["bash", "zsh", "fish", "dash"]
FILES = {".config/fish/config.fish": "set -g fish_greeting\n"}
# Prints a line only the output holds (the typed command line says go%s), then
# holds the terminal long enough for another client to type.
COMMAND = "printf 'go%s\\n' n; sleep 1.5; echo done"


@pytest.fixture(scope="module")
def phux() -> Iterator[Server]:
    with serving_files(FILES, prefix="phux-typeahead-") as server:
        yield server


def started(phux: Server, shell: str, name: str, *new_args: str) -> None:
    need_shell(shell)
    res = phux("new", "-s", name, *new_args, "--", shell)
    assert res.code == 0, res.err
    res = phux("run", "--timeout", STEP, name, "true")
    assert res.code == 0, res.err


def run_while_typed(
    phux: Server,
    name: str,
    keys: list[str],
    command: str = COMMAND,
    shown: tuple[str, str] = ("--until", "gon"),
) -> dict[str, object]:
    """``command`` run in ``name`` by one CLI process while another types ``keys`` once
    the screen shows ``shown`` (a wait condition)."""
    cmd = [sys.executable, "-m", "phux", "run", "--json", "--timeout", STEP, name, command]
    proc = subprocess.Popen(
        cmd, env=phux.env, cwd=phux.home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        res = phux("wait", *shown, "--timeout", STEP, name)
        assert res.code == 0, res.err
        res = phux("send-keys", name, *keys)
        assert res.code == 0, res.err
        out, err = proc.communicate(timeout=float(STEP) + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert isinstance(doc, dict)
    return doc


def clear_line(phux: Server, name: str) -> None:
    """The typed keys reach the shell after the run: take them off its line."""
    assert phux("send-keys", name, "C-c").code == 0
    assert phux("wait", "--prompt", "--timeout", STEP, name).code == 0


@pytest.mark.parametrize("shell", SHELLS)
def test_keys_typed_during_a_run_are_not_its_output(phux: Server, shell: str) -> None:
    name = f"t-{shell}"
    started(phux, shell, name)
    doc = run_while_typed(phux, name, ["typed words"])
    assert (doc["output"], doc["exit_code"]) == ("gon\ndone", 0)
    clear_line(phux, name)

    # With an Enter and a control key: the tty echoes C-a as ^A and the Enter as a
    # line end; the shell then runs the line, after this run. (It prints "goN": the
    # first run's "gon" is still on the screen, and the keys must wait for this one.)
    again = COMMAND.replace("' n;", "' N;")
    doc = run_while_typed(phux, name, ["echo lat", "C-a", "e", "Enter"], again, ("--until", "goN"))
    assert (doc["output"], doc["exit_code"]) == ("goN\ndone", 0)
    assert phux("wait", "--prompt", "--timeout", STEP, name).code == 0
    res = phux("run", "--timeout", STEP, name, "echo after")
    assert (res.code, res.out) == (0, "after\n"), res.err


def test_a_shell_without_integration_too(phux: Server) -> None:
    """Its run types printed markers (no marks): the echo is cut from between them."""
    name = "t-plain"
    started(phux, "bash", name, "-e", "PHUX_SHELL_INTEGRATION=0")
    doc = run_while_typed(phux, name, ["typed words"])
    assert (doc["output"], doc["exit_code"]) == ("gon\ndone", 0)
    clear_line(phux, name)


def test_what_the_command_prints_of_typed_keys_stays(phux: Server) -> None:
    """`cat` reads the typed line and prints it: that copy is output; the echo is not."""
    name = "t-cat"
    started(phux, "bash", name)
    doc = run_while_typed(
        phux, name, ["a line", "Enter"], "echo ready; head -n 1", ("--regex", "^ready$")
    )
    assert doc["output"] == "ready\na line"


def test_mcp_run_leaves_out_keys_typed_meanwhile(phux: Server) -> None:
    name = "t-mcp"
    started(phux, "bash", name)
    env = {**os.environ, "PHUX_SOCKET": str(phux.socket)}
    with McpProcess(env=env) as mcp:
        mcp.ask(0, "initialize", {"protocolVersion": "2025-06-18"})
        ask = {"target": name, "command": COMMAND, "timeout_secs": 30}
        mcp.send(request(1, "tools/call", {"name": "phux_run", "arguments": ask}))
        res = phux("wait", "--until", "gon", "--timeout", STEP, name)
        assert res.code == 0, res.err
        assert phux("send-keys", name, "typed words").code == 0
        result = mcp.out.message(float(STEP))["result"]
    assert result["isError"] is False, result
    doc = json.loads(result["content"][0]["text"])
    assert (doc["output"], doc["exit_code"]) == ("gon\ndone", 0)
    clear_line(phux, name)


def test_the_runs_own_keys_are_not_cut(phux: Server) -> None:
    """`fc -ln -0` prints the command line the run typed: that is output, not an echo."""
    name = "t-own"
    started(phux, "bash", name)
    res = phux("run", "--json", "--timeout", STEP, name, "fc -ln -0")
    assert res.code == 0, res.err
    assert res.json()["output"].strip() == "fc -ln -0"

"""The first `run` after `new` in a shell whose startup is slow (issue 23 item 2).

The integration announces itself (`133;I;start`) before the user's startup files
run, and the server publishes which shell it integrated (`phux.shell`): `run`
waits for the first prompt within its timeout instead of guessing from quiet
time, so it never types the marker wrapper into a shell that is still starting,
waits out a prompt hook whose child holds the terminal while the prompt is being
drawn, and says clearly, having typed nothing, when the first prompt never comes.
Real server, real shells, the CLI and MCP.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .serving import Server, need_shell, serving_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from mcp_pipes import McpProcess

pytestmark = pytest.mark.timeout(120)

STEP = "30"
BANNER = "env-manager: loading shims"

# A pyenv virtualenv-init / conda / nvm style start: a banner, a slow line, and a
# prompt hook that runs a child process for 0.8 s before every prompt.
SLOW: dict[str, dict[str, str]] = {
    "bash": {
        ".bashrc": f"echo '{BANNER}'\nsleep 0.5\nPS1='\\u$ '\n"
        "_slow_hook() { local s=$?; sleep 0.8; return $s; }\n"
        'PROMPT_COMMAND="_slow_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"\n',
    },
    "zsh": {
        ".zshrc": f"print '{BANNER}'\nsleep 0.5\nPROMPT='%n%# '\n"
        "_slow_hook() { sleep 0.8 }\nautoload -Uz add-zsh-hook\n"
        "add-zsh-hook precmd _slow_hook\n",
    },
    "fish": {
        ".config/fish/config.fish": f"set -g fish_greeting\necho '{BANNER}'\nsleep 0.5\n"
        "function _slow_hook --on-event fish_prompt; sleep 0.8; end\n",
    },
    # dash has no prompt hook: a command substitution in PS1 is the nearest thing.
    "dash": {
        ".shrc": f"echo '{BANNER}'\nsleep 0.5\nPS1='$(sleep 0.8)$ '\n",
    },
}

# Startup files that never finish (`pyenv rehash` waiting on its lock).
BLOCKED: dict[str, dict[str, str]] = {
    "bash": {".bashrc": f"echo '{BANNER}'\nsleep 1000\n"},
    "zsh": {".zshrc": f"print '{BANNER}'\nsleep 1000\n"},
    "fish": {".config/fish/config.fish": f"echo '{BANNER}'\nsleep 1000\n"},
    "dash": {".shrc": f"echo '{BANNER}'\nsleep 1000\n"},
}

SHELLS = ["bash", "zsh", "fish", "dash"]


def new(phux: Server, name: str, shell: str) -> None:
    extra = ["-e", f"ENV={phux.home / '.shrc'}"] if shell == "dash" else []
    res = phux("new", "--json", "-s", name, *extra, "--", shell)
    assert res.code == 0, res.err


def screen_text(phux: Server, target: str) -> str:
    res = phux("snapshot", "--json", "--scrollback", target)
    assert res.code == 0, res.err
    doc: Any = res.json()
    return "\n".join(str(line) for line in doc["lines"])


def history(phux: Server, target: str) -> list[str]:
    res = phux("history", "--json", target)
    assert res.code == 0, res.err
    doc: Any = res.json()
    return [str(entry["command"]) for entry in doc["commands"] if entry["command"]]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_first_run_after_new_waits_for_a_slow_start(shell: str) -> None:
    need_shell(shell)
    with serving_files(SLOW[shell], "phux-first-") as phux:
        for attempt in range(3):
            name = f"w{attempt}"
            new(phux, name, shell)
            res = phux("run", "--json", "--timeout", STEP, name, "echo hi")
            assert res.code == 0, res.err
            doc = res.json()
            assert (doc["output"], doc["exit_code"]) == ("hi", 0)
            text = screen_text(phux, name)
            assert "__phx" not in text and "printf" not in text, text
            assert text.count("echo hi") == 1, text
            assert BANNER in text
            assert history(phux, name) == ["echo hi"]
        # MCP: phux_new, then phux_run at once (its client replays into an engine).
        env = {**os.environ, "PHUX_SOCKET": str(phux.socket)}
        with McpProcess(env=env) as mcp:
            mcp.ask(0, "initialize", {"protocolVersion": "2025-06-18"})
            made: dict[str, Any] = {"name": "m", "command": [shell]}
            if shell == "dash":
                made["env"] = {"ENV": str(phux.home / ".shrc")}
            body(mcp.call("phux_new", made))
            ran = body(mcp.call("phux_run", {"target": "m", "command": "echo hi"}))
            assert (ran["exit_code"], ran["output"]) == (0, "hi")
        text = screen_text(phux, "m")
        assert "__phx" not in text and text.count("echo hi") == 1, text


def finished(phux: Server, target: str, command: str) -> bool:
    res = phux("history", "--json", target)
    assert res.code == 0, res.err
    doc: Any = res.json()
    return any(e["command"] == command and e.get("exit_code") is not None for e in doc["commands"])


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_prompt_hook_holding_the_terminal_is_waited_for(shell: str) -> None:
    # After a command's D mark, before the next prompt's B: the hook's child holds the
    # terminal. `run` waits for the prompt instead of refusing ("sleep holds the pane").
    need_shell(shell)
    files = {k: v.replace("sleep 0.8", "sleep 1.5") for k, v in SLOW[shell].items()}
    with serving_files(files, "phux-first-") as phux:
        new(phux, "w", shell)
        res = phux("run", "--timeout", STEP, "w", "echo first")
        assert (res.code, res.out) == (0, "first\n"), res.err
        assert phux("send-keys", "w", "true", "Enter").code == 0
        # Its D mark is printed before the hook runs (fish keeps the terminal for its
        # event handlers; bash and zsh hand it to the hook's sleep).
        deadline = time.monotonic() + 20
        while not finished(phux, "w", "true"):
            assert time.monotonic() < deadline, "true never finished"
            time.sleep(0.05)
        res = phux("run", "--json", "--timeout", STEP, "w", "echo again")
        assert res.code == 0, res.err
        assert res.json()["output"] == "again"
        assert history(phux, "w") == ["echo first", "true", "echo again"]


@pytest.mark.parametrize("shell", SHELLS)
def test_startup_files_that_never_finish(shell: str) -> None:
    need_shell(shell)
    with serving_files(BLOCKED[shell], "phux-first-") as phux:
        new(phux, "w", shell)
        started = time.monotonic()
        res = phux("run", "--json", "--timeout", "3", "w", "echo never")
        took = time.monotonic() - started
        assert res.code == 125, res.err
        assert took < 8, took
        err = json.loads(res.err)["error"]
        assert "still starting" in err["message"], err
        assert "nothing was typed" in err["message"], err
        assert "waiting for the command to finish" not in err["message"]
        assert "echo never" not in screen_text(phux, "w")
        # Not at a prompt: wait --prompt is not met while the startup files run.
        res = phux("wait", "--prompt", "--timeout", "1", "w")
        assert res.code == 124, res.err
        res = phux("wait", "--prompt", "--timeout", "0", "w")
        assert res.code == 124, res.err
        env = {**os.environ, "PHUX_SOCKET": str(phux.socket)}
        with McpProcess(env=env) as mcp:
            mcp.ask(0, "initialize", {"protocolVersion": "2025-06-18"})
            ask = {"target": "w", "prompt": True, "timeout_secs": 1}
            waited = body(mcp.call("phux_wait", ask))
            assert waited["outcome"] == "timed_out"
            ask = {"target": "w", "command": "echo never", "timeout_secs": 2}
            reply = mcp.call("phux_run", ask)
            result = reply["result"]
            assert result["isError"] is True, result
            text = result["content"][0]["text"]
            assert "still starting" in text and "nothing was typed" in text
        assert "echo never" not in screen_text(phux, "w")


def body(reply: dict[str, Any]) -> Any:
    result = reply["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    return json.loads(result["content"][0]["text"])


def test_force_types_into_a_shell_still_starting() -> None:
    # --force types anyway: the keys wait in the tty for the shell to read them.
    need_shell("bash")
    with serving_files(BLOCKED["bash"], "phux-first-") as phux:
        new(phux, "w", "bash")
        res = phux("run", "--force", "--timeout", "2", "w", "echo typed")
        assert res.code == 125, res.err
        assert "nothing was typed" not in res.err
        assert "echo typed" in screen_text(phux, "w")

"""The first `run` after `new` in a shell whose startup is slow (issue 23 item 2).

The integration announces itself (`133;I;start`) before the user's startup files
run, and the server publishes which shell it integrated (`phux.shell`): `run`
waits for the first prompt within its timeout instead of guessing from quiet
time, so it never types the marker wrapper into a shell that is still starting,
waits out a prompt hook whose child holds the terminal while the prompt is being
drawn, and says clearly, having typed nothing, when the first prompt never comes.
Real server, real shells, the CLI and MCP.

Each kind of HOME (slow, blocked, a long prompt hook) holds every shell's startup
file, and one server per kind serves the module: each test's panes are its own
sessions. Where a test waits on sleeps, its CLI and MCP parts run side by side.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from .serving import Server, need_shell, serving_files

pytestmark = pytest.mark.timeout(120)

STEP = "30"
BANNER = "env-manager: loading shims"

# A pyenv virtualenv-init / conda / nvm style start: a banner, a slow line, and a
# prompt hook that runs a child process for 0.8 s before every prompt.
SLOW: dict[str, str] = {
    ".bashrc": f"echo '{BANNER}'\nsleep 0.5\nPS1='\\u$ '\n"
    "_slow_hook() { local s=$?; sleep 0.8; return $s; }\n"
    'PROMPT_COMMAND="_slow_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"\n',
    ".zshrc": f"print '{BANNER}'\nsleep 0.5\nPROMPT='%n%# '\n"
    "_slow_hook() { sleep 0.8 }\nautoload -Uz add-zsh-hook\n"
    "add-zsh-hook precmd _slow_hook\n",
    ".config/fish/config.fish": f"set -g fish_greeting\necho '{BANNER}'\nsleep 0.5\n"
    "function _slow_hook --on-event fish_prompt; sleep 0.8; end\n",
    # dash has no prompt hook: a command substitution in PS1 is the nearest thing.
    ".shrc": f"echo '{BANNER}'\nsleep 0.5\nPS1='$(sleep 0.8)$ '\n",
}

# Startup files that never finish (`pyenv rehash` waiting on its lock).
BLOCKED: dict[str, str] = {
    ".bashrc": f"echo '{BANNER}'\nsleep 1000\n",
    ".zshrc": f"print '{BANNER}'\nsleep 1000\n",
    ".config/fish/config.fish": f"echo '{BANNER}'\nsleep 1000\n",
    ".shrc": f"echo '{BANNER}'\nsleep 1000\n",
}

SHELLS = ["bash", "zsh", "fish", "dash"]
T = TypeVar("T")


@pytest.fixture(scope="module")
def slow() -> Iterator[Server]:
    with serving_files(SLOW, "phux-first-") as phux:
        yield phux


@pytest.fixture(scope="module")
def blocked() -> Iterator[Server]:
    with serving_files(BLOCKED, "phux-first-") as phux:
        yield phux


@pytest.fixture(scope="module")
def hooked() -> Iterator[Server]:
    # The prompt hooks' child holds the terminal for 1.5 s.
    files = {k: v.replace("sleep 0.8", "sleep 1.5") for k, v in SLOW.items() if k != ".shrc"}
    with serving_files(files, "phux-first-") as phux:
        yield phux


def side_by_side(first: Callable[[], T], second: Callable[[], Any]) -> T:
    """Run both at once (they wait on sleeps, not on the CPU); ``first``'s result."""
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(second)
        result = first()
        other.result(timeout=60)
    return result


def new(phux: Server, name: str, shell: str) -> None:
    extra = ["-e", f"ENV={phux.home / '.shrc'}"] if shell == "dash" else []
    res = phux("new", "--json", "-s", name, *extra, "--", shell)
    assert res.code == 0, res.err


def new_then_run(phux: Server, name: str, shell: str) -> None:
    """`new`, then at once `run`: exact, and nothing but the command was typed."""
    new(phux, name, shell)
    res = phux("run", "--json", "--timeout", STEP, name, "echo hi")
    assert res.code == 0, res.err
    doc = res.json()
    assert (doc["output"], doc["exit_code"]) == ("hi", 0)
    text = phux.screen_text(name)
    assert "__phx" not in text and "printf" not in text, text
    assert text.count("echo hi") == 1, text
    assert BANNER in text
    assert phux.history(name) == ["echo hi"]


def mcp_new_then_run(phux: Server, name: str, shell: str) -> None:
    """MCP: phux_new, then phux_run at once (its client replays into an engine)."""
    made: dict[str, Any] = {"name": name, "command": [shell]}
    if shell == "dash":
        made["env"] = {"ENV": str(phux.home / ".shrc")}
    phux.mcp.ok("phux_new", made)
    ran = phux.mcp.ok("phux_run", {"target": name, "command": "echo hi"})
    assert (ran["exit_code"], ran["output"]) == (0, "hi")
    text = phux.screen_text(name)
    assert "__phx" not in text and text.count("echo hi") == 1, text


@pytest.mark.parametrize("shell", SHELLS)
def test_the_first_run_after_new_waits_for_a_slow_start(slow: Server, shell: str) -> None:
    # Three times, the three at once (as when several shells start together), and
    # MCP's meanwhile.
    need_shell(shell)
    with ThreadPoolExecutor(3) as pool:
        tries = [pool.submit(new_then_run, slow, f"{shell}{n}", shell) for n in range(3)]
        mcp_new_then_run(slow, f"m-{shell}", shell)
        for attempt in tries:
            attempt.result(timeout=90)


def finished(phux: Server, target: str, command: str) -> bool:
    commands = phux.client_history(target)
    return any(e.command == command and e.exit_code is not None for e in commands)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_prompt_hook_holding_the_terminal_is_waited_for(hooked: Server, shell: str) -> None:
    # After a command's D mark, before the next prompt's B: the hook's child holds the
    # terminal. `run` waits for the prompt instead of refusing ("sleep holds the pane").
    need_shell(shell)
    phux, w = hooked, f"w-{shell}"
    new(phux, w, shell)
    res = phux("run", "--timeout", STEP, w, "echo first")
    assert (res.code, res.out) == (0, "first\n"), res.err
    phux.keys(w, "true", "Enter")
    # Its D mark is printed before the hook runs (fish keeps the terminal for its
    # event handlers; bash and zsh hand it to the hook's sleep).
    deadline = time.monotonic() + 20
    while not finished(phux, w, "true"):
        assert time.monotonic() < deadline, "true never finished"
        time.sleep(0.05)
    res = phux("run", "--json", "--timeout", STEP, w, "echo again")
    assert res.code == 0, res.err
    assert res.json()["output"] == "again"
    assert phux.history(w) == ["echo first", "true", "echo again"]


def never_starts_cli(phux: Server, w: str) -> None:
    started = time.monotonic()
    res = phux("run", "--json", "--timeout", "3", w, "echo never")
    took = time.monotonic() - started
    assert res.code == 125, res.err
    assert took < 8, took
    err = json.loads(res.err)["error"]
    assert "still starting" in err["message"], err
    assert "nothing was typed" in err["message"], err
    assert "waiting for the command to finish" not in err["message"]
    assert "echo never" not in phux.screen_text(w)
    # Not at a prompt: wait --prompt is not met while the startup files run.
    res = phux("wait", "--prompt", "--timeout", "1", w)
    assert res.code == 124, res.err
    res = phux("wait", "--prompt", "--timeout", "0", w)
    assert res.code == 124, res.err


def never_starts_mcp(phux: Server, m: str) -> None:
    waited = phux.mcp.ok("phux_wait", {"target": m, "prompt": True, "timeout_secs": 1})
    assert waited["outcome"] == "timed_out"
    answer = phux.mcp("phux_run", {"target": m, "command": "echo never", "timeout_secs": 2})
    assert answer.error, answer
    assert "still starting" in answer.text and "nothing was typed" in answer.text
    assert "echo never" not in phux.screen_text(m)


@pytest.mark.parametrize("shell", SHELLS)
def test_startup_files_that_never_finish(blocked: Server, shell: str) -> None:
    need_shell(shell)
    w, m = f"w-{shell}", f"m-{shell}"
    new(blocked, w, shell)
    new(blocked, m, shell)
    side_by_side(lambda: never_starts_cli(blocked, w), lambda: never_starts_mcp(blocked, m))


def test_force_types_into_a_shell_still_starting(blocked: Server) -> None:
    # --force types anyway: the keys wait in the tty for the shell to read them.
    need_shell("bash")
    new(blocked, "force", "bash")
    res = blocked("run", "--force", "--timeout", "2", "force", "echo typed")
    assert res.code == 125, res.err
    assert "nothing was typed" not in res.err
    assert "echo typed" in blocked.screen_text("force")

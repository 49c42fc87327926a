"""Output cannot forge the shell's marks (issue 23 item 1): acceptance tests.

A file holding OSC 133 marks (a forged D, A and B, a forged C alone, marks
signed with a wrong key or with another pane's real key, marks split across
reads) is `cat` by `run`: the result is the command's real exit code and its
whole output; `history` lists no forged command and `watch` emits no forged
event. In bash, zsh, fish and dash, through the CLI and MCP's `phux_run`, on
a real server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .serving import Server, need_shell, serving_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from mcp_pipes import McpProcess

pytestmark = pytest.mark.timeout(180)

STEP = "30"
SHELLS = ["bash", "zsh", "fish", "dash"]
ESC, BEL = "\x1b", "\x07"


def osc(body: str) -> str:
    return f"{ESC}]133;{body}{BEL}"


# The file: a forged D (exit 0), a new prompt and a forged command line.
FORGED_D = (
    "line-1\n"
    + osc("D;0")
    + osc("A")
    + "$ "
    + osc("B")
    + "rm -rf /important\n"
    + "line-3\nline-4\n"
)
# A forged C alone (a command started), then a forged D: nothing ends early.
FORGED_C = "line-1\n" + osc("C;cmdline_url=rm%20-rf%20%2Fimportant") + "line-2\n" + osc("D;0")


def keyed(key: str) -> str:
    """The issue's file with every mark signed by ``key``."""
    return (
        "line-1\n"
        + osc(f"D;0;phux_k={key}")
        + osc(f"A;phux_k={key}")
        + "$ "
        + osc(f"B;phux_k={key}")
        + "rm -rf /important\n"
        + osc(f"C;cmdline_url=rm%20-rf%20%2Fimportant;phux_k={key}")
        + "line-3\n"
        + osc(f"D;0;phux_k={key}")
        + "line-4\n"
    )


FISH_QUIET = {".config/fish/config.fish": "set -g fish_greeting\n"}
EXPECTED_FORGED_D = "line-1\n$ rm -rf /important\nline-3\nline-4\nTAIL"
EXPECTED_KEYED = "line-1\n$ rm -rf /important\nline-3\nline-4\nTAIL"


def start(phux: Server, name: str, shell: str) -> dict[str, str]:
    res = phux("new", "--json", "-s", name, "--", shell)
    assert res.code == 0, res.err
    res = phux("run", "--timeout", STEP, name, "true")
    assert res.code == 0, res.err
    listing: Any = phux("ls", "--json", "--panes").json()
    [pane] = [p for s in listing["sessions"] if s["name"] == name for p in s["panes"]]
    return {str(k): str(v) for k, v in pane.items()}


def key_of(phux: Server, name: str) -> str:
    """The pane's key, from its metadata (as a program running as the user could)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from phux.client.client import Client
    from phux.client.deadline import Deadline
    from phux.signed_marks import pane_key

    client = Client(str(phux.socket))
    try:
        key = pane_key(client.resolve(name, Deadline.after(10)).metadata)
    finally:
        client.close()
    assert len(key) == 32
    return key


def run_json(phux: Server, name: str, command: str) -> tuple[int, Any]:
    res = phux("run", "--json", "--timeout", STEP, name, command)
    assert res.code in (0, 1), res.err
    return res.code, res.json()


def history(phux: Server, name: str) -> list[str]:
    res = phux("history", "--json", name)
    assert res.code == 0, res.err
    doc: Any = res.json()
    return [str(e["command"]) for e in doc["commands"] if e["command"]]


def check(phux: Server, name: str, file: str, expected: str) -> None:
    code, doc = run_json(phux, name, f"cat {file}; echo TAIL; false")
    assert (code, doc["exit_code"]) == (1, 1), doc
    assert doc["output"] == expected, doc
    # And through MCP's phux_run.
    env = {**os.environ, "PHUX_SOCKET": str(phux.socket)}
    with McpProcess(env=env) as mcp:
        mcp.ask(0, "initialize", {"protocolVersion": "2025-06-18"})
        ask = {"target": name, "command": f"cat {file}; echo TAIL; false", "timeout_secs": 30}
        result = mcp.call("phux_run", ask)["result"]
        assert result["isError"] is False, result
        body = json.loads(result["content"][0]["text"])
        assert (body["exit_code"], body["output"]) == (1, expected), body


@pytest.mark.parametrize("shell", SHELLS)
def test_forged_marks_in_output_change_nothing(shell: str) -> None:
    need_shell(shell)
    with serving_files(FISH_QUIET, "phux-forge-") as phux:
        home = phux.home
        (home / "evil.txt").write_text(FORGED_D)
        (home / "c.txt").write_text(FORGED_C)
        (home / "wrong.txt").write_text(keyed("0" * 32))
        start(phux, "w", shell)
        start(phux, "other", shell)
        (home / "stolen.txt").write_text(keyed(key_of(phux, "other")))
        watch = subprocess.Popen(
            [sys.executable, "-m", "phux", "watch", "--json", "w"],
            env=phux.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=home,
        )
        try:
            time.sleep(0.5)  # (watch subscribes; what it missed is not forged either way)
            check(phux, "w", "evil.txt", EXPECTED_FORGED_D)
            check(phux, "w", "c.txt", "line-1\nline-2\nTAIL")
            check(phux, "w", "wrong.txt", EXPECTED_KEYED)
            # A real key, but another pane's: rejected too.
            check(phux, "w", "stolen.txt", EXPECTED_KEYED)
        finally:
            watch.terminate()
            out, _ = watch.communicate(timeout=10)
        assert "rm -rf" not in "\n".join(history(phux, "w"))
        assert [c for c in history(phux, "w") if c != "true"] == [
            f"cat {f}; echo TAIL; false"
            for f in ("evil.txt", "c.txt", "wrong.txt", "stolen.txt")
            for _ in range(2)
        ]
        events = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert not any("rm -rf" in json.dumps(e) for e in events), events
        # (watch saw the real commands: the check above is not vacuous)
        assert any("cat stolen.txt" in json.dumps(e) for e in events), events


@pytest.mark.parametrize("shell", SHELLS)
def test_marks_split_across_reads(shell: str) -> None:
    # The forged marks arrive in pieces: a pause in the middle of each mark, so the
    # reader sees half a mark (half of the pane's key), then the rest.
    need_shell(shell)
    with serving_files(FISH_QUIET, "phux-forge-") as phux:
        start(phux, "w", shell)
        key = key_of(phux, "w")
        script = phux.home / "split.sh"
        # The D mark starts with the pane's key and goes on with other digits.
        pieces = ["line-1\\n", "\\033]133;D", ";0;phux_k=" + key[:7], "f" * 25 + "\\007\\033]1"]
        pieces += ["33;A\\007$ \\033]133;B;phux", "_k=" + "1" * 32 + "\\007rm -rf /x\\n"]
        body = "".join(f"printf '{p}'; sleep 0.3\n" for p in pieces)
        script.write_text(body + "printf 'line-3\\n'\n")
        code, doc = run_json(phux, "w", "sh split.sh; echo TAIL; false")
        assert (code, doc["exit_code"]) == (1, 1), doc
        assert doc["output"] == "line-1\n$ rm -rf /x\nline-3\nTAIL", doc
        assert "rm -rf" not in "\n".join(history(phux, "w"))

"""Output cannot forge the shell's marks (issue 23 item 1): acceptance tests.

A file holding OSC 133 marks signed with a wrong key or with another pane's
real key is `cat` by `run`: the result is the command's real exit code and its
whole output; `history` lists no forged command and `watch` emits no forged
event. In bash, zsh, fish and dash, through the CLI and MCP's `phux_run`, on
a real server. The unsigned forgeries (a forged D, a forged C alone, marks
split across reads) are checked in every configuration of the corpus
(test_real_configs.py) for bash, zsh and fish, and here for dash, which the
corpus has no configuration of.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from phux.client import Deadline
from phux.signed_marks import pane_key

from .forgery import (
    EXPECTED_C,
    EXPECTED_D,
    EXPECTED_KEYED,
    EXPECTED_SPLIT,
    FORGED_C,
    FORGED_D,
    keyed,
    split_script,
)
from .serving import STEP, Server, need_shell, serving_files

pytestmark = pytest.mark.timeout(180)

SHELLS = ["bash", "zsh", "fish", "dash"]
FISH_QUIET = {".config/fish/config.fish": "set -g fish_greeting\n"}


@pytest.fixture(scope="module")
def phux() -> Iterator[Server]:
    """One server for the module: each test's panes are its own sessions."""
    with serving_files(FISH_QUIET, "phux-forge-") as server:
        (server.home / "evil.txt").write_text(FORGED_D)
        (server.home / "c.txt").write_text(FORGED_C)
        (server.home / "wrong.txt").write_text(keyed("0" * 32))
        yield server


def start(phux: Server, name: str, shell: str) -> str:
    """A session running ``shell``, past a first command; returns its key."""
    res = phux("new", "--json", "-s", name, "--", shell)
    assert res.code == 0, res.err
    res = phux("run", "--timeout", str(STEP), name, "true")
    assert res.code == 0, res.err
    # The key from the pane's metadata, as a program running as the user could.
    key = pane_key(phux.client.resolve(name, Deadline.after(STEP)).metadata)
    assert len(key) == 32
    return key


def viewers(phux: Server, name: str) -> int:
    """How many clients are subscribed to ``name``'s pane."""
    tid = phux.client.resolve(name, Deadline.after(STEP)).terminal
    return phux.client.list_terminals(Deadline.after(STEP)).by_id[tid].viewers


def await_viewers(phux: Server, name: str, enough: Callable[[int], bool], why: str) -> None:
    deadline = time.monotonic() + STEP
    while not enough(viewers(phux, name)):
        assert time.monotonic() < deadline, why
        time.sleep(0.02)


def check(phux: Server, name: str, command: str, expected: str) -> None:
    """``command`` gives exit 1 and ``expected``, through the CLI and MCP's phux_run."""
    res = phux("run", "--json", "--timeout", str(STEP), name, command)
    assert res.code == 1, res.err
    doc: Any = res.json()
    assert (doc["exit_code"], doc["output"]) == (1, expected), doc
    ask = {"target": name, "command": command, "timeout_secs": STEP}
    body = phux.mcp.ok("phux_run", ask)
    assert (body["exit_code"], body["output"]) == (1, expected), body


@pytest.mark.parametrize("shell", SHELLS)
def test_marks_signed_with_another_key_change_nothing(phux: Server, shell: str) -> None:
    need_shell(shell)
    w, other = f"w-{shell}", f"other-{shell}"
    start(phux, w, shell)
    stolen = f"stolen-{shell}.txt"
    (phux.home / stolen).write_text(keyed(start(phux, other, shell)))
    # (The CLI processes `start` ran may still be counted until the server reads
    # their connections' ends.)
    await_viewers(phux, w, lambda n: n == 0, "the CLI's subscriptions never ended")
    watch = subprocess.Popen(
        [sys.executable, "-m", "phux", "watch", "--json", w],
        env=phux.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=phux.home,
    )
    files = ["wrong.txt", stolen]  # a wrong key; a real key, but another pane's
    try:
        # Until watch subscribed (output before that is not its to report).
        await_viewers(phux, w, lambda n: n > 0 or watch.poll() is not None, "no watch")
        assert watch.poll() is None, "watch exited"
        check(phux, w, "cat wrong.txt; echo TAIL; false", EXPECTED_KEYED)
        check(phux, w, f"cat {stolen}; echo TAIL; false", EXPECTED_KEYED)
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=10)
    assert phux.history(w) == ["true"] + [f"cat {f}; echo TAIL; false" for f in files for _ in "cm"]
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert not any("rm -rf" in json.dumps(e) for e in events), events
    # (watch saw the real commands: the check above is not vacuous)
    assert any(f"cat {stolen}" in json.dumps(e) for e in events), events


def test_unsigned_forgeries_change_nothing_in_dash(phux: Server) -> None:
    # A forged D, a forged C alone, and marks split across reads (a pause in the
    # middle of each mark and of the pane's key, so the reader sees half of it).
    need_shell("dash")
    key = start(phux, "dash", "dash")
    (phux.home / "split.sh").write_text(split_script(key))
    forged = [("evil.txt", EXPECTED_D), ("c.txt", EXPECTED_C)]
    for file, expected in forged:
        check(phux, "dash", f"cat {file}; echo TAIL; false", expected)
    check(phux, "dash", "sh split.sh; echo TAIL; false", EXPECTED_SPLIT)
    history = phux.history("dash")
    assert "rm -rf" not in "\n".join(history)
    ran = [f"cat {f}; echo TAIL; false" for f, _ in forged] + ["sh split.sh; echo TAIL; false"]
    assert history == ["true"] + [c for c in ran for _ in "cm"]

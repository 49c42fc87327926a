"""Panes set up as developers set them up (tests/shell/corpus.py): right prompts,
autosuggestions, syntax highlighting, vi modes, slow hooks, direnv, bash-preexec.
Through the CLI and MCP, on a real server whose panes take the configuration's HOME.

Issue 23's matrix, for every configuration: `new` then an immediate `run` (exact
output and code, nothing else typed, history clean), the forged-mark files, a
syntax error, a pane that is not a shell (and a program the shell runs), and
`history` after a flood of 20 000 lines (tests/shell/test_history_watch.py floods
100 000 for bash, zsh and fish). Right prompts and autosuggestions are not typed
input (item 3): `run` goes ahead at an idle prompt, and refuses text that is
really typed.

One server per configuration serves all its tests (the module's ``corpus``
fixture), and one shell pane in it ("w") takes them in turn: each test checks
what it changed (the history it added), not what others left. The flood test
comes last, so the pane's scrollback is small for the others.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from phux.client import Client, Deadline
from phux.engine import Terminal
from phux.signed_marks import pane_key

from .corpus import CONFIGS, Config, build, need
from .forgery import (
    EXPECTED_C,
    EXPECTED_D,
    EXPECTED_SPLIT,
    FORGED_C,
    FORGED_D,
    split_script,
)
from .kit import command_marks, shell_host
from .serving import STEP, Server, serving

pytestmark = pytest.mark.timeout(180)

TIMEOUT = str(int(STEP))
AT_ONCE = 8.0
"""Seconds within which a refusal or a syntax error answers (far below TIMEOUT)."""
FIRST = "echo first; false"
"""The first command the shared pane runs, at once after `new`."""


@dataclass
class Corpus:
    """One configuration's server, shared by all its tests, and its shell pane."""

    config: Config
    phux: Server
    _pane: str | None = field(default=None, init=False)
    _broken: bool = field(default=False, init=False)

    def pane(self) -> str:
        """The shell pane "w": the first test to ask makes it with `new` and runs
        FIRST at once (issue 23 item 2), checking that run on its way."""
        if self._broken:
            pytest.fail("the shared pane failed its first run (see the first failure)")
        if self._pane is None:
            self._broken = True
            res = self.phux("new", "--json", "-s", "w", "--", self.config.shell)
            assert res.code == 0, res.err
            res = self.phux("run", "--json", "--timeout", TIMEOUT, "w", FIRST)
            assert res.code == 1, res.err
            assert (res.json()["output"], res.json()["exit_code"]) == ("first", 1)
            typed_once(self.phux.client, "w", FIRST)
            assert self.phux.history("w") == [FIRST]
            key = pane_key(self.phux.client.resolve("w", Deadline.after(STEP)).metadata)
            assert len(key) == 32, key
            (self.phux.home / "split.sh").write_text(split_script(key))
            self._broken, self._pane = False, "w"
        return self._pane


def typed_once(client: Client, target: str, command: str) -> None:
    """Nothing but ``command`` was typed: no marker wrapper, the line once."""
    data = client.snapshot_data(target, scrollback=0, deadline=Deadline.after(STEP))
    text = "\n".join([*data["scrollback"], *data["lines"]])
    assert "__phx" not in text and "printf" not in text, text
    assert text.count(command) == 1, text


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest) -> Iterator[Corpus]:
    config = CONFIGS[request.param]
    need(config)
    with serving(config) as phux:
        (phux.home / "evil.txt").write_text(FORGED_D)
        (phux.home / "c.txt").write_text(FORGED_C)
        (phux.home / "log.txt").write_text("log line\n")
        yield Corpus(config, phux)


def per_config(configs: Iterable[Config] = CONFIGS.values()) -> pytest.MarkDecorator:
    """Parametrize a test by configuration, each served by its shared ``corpus``."""
    names = [c.name for c in configs]
    return pytest.mark.parametrize("corpus", names, ids=names, indirect=True)


def run(phux: Server, target: str, command: str) -> tuple[int, dict[str, Any], float]:
    """``phux run --json``: its exit code, its JSON (``{"err": STDERR}`` when it printed
    none) and the seconds it took."""
    began = time.monotonic()
    res = phux("run", "--json", "--timeout", TIMEOUT, target, command)
    took = time.monotonic() - began
    return res.code, res.json() if res.out.strip() else {"err": res.err}, took


def cli_commands(entries: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(e["command"], e["exit_code"]) for e in entries if e["command"]]


def mcp_new_then_run(phux: Server, shell: str) -> None:
    """MCP: phux_new, then phux_run at once (its client replays into an engine)."""
    phux.mcp.ok("phux_new", {"name": "m", "command": [shell]})
    ran_m = phux.mcp.ok("phux_run", {"target": "m", "command": FIRST, "timeout_secs": STEP})
    assert (ran_m["exit_code"], ran_m["output"]) == (1, "first"), ran_m
    with Client(phux.socket, env={}) as own:  # (phux.client is the test's thread's)
        typed_once(own, "m", FIRST)
    listed = phux.mcp.ok("phux_history", {"target": "m"})["commands"]
    assert cli_commands(listed) == [(FIRST, 1)]


@per_config()
def test_new_then_run(corpus: Corpus) -> None:
    # MCP's pane "m" meanwhile, in a thread: its shell starts and runs while the CLI's
    # does (both wait on the shells, not on the CPU).
    with ThreadPoolExecutor(1) as pool:
        by_mcp = pool.submit(mcp_new_then_run, corpus.phux, corpus.config.shell)
        cli_new_then_run(corpus)
        by_mcp.result(timeout=STEP * 2)


def cli_new_then_run(corpus: Corpus) -> None:
    # (corpus.pane() made the pane with `new` and ran a command at once.)
    phux, w = corpus.phux, corpus.pane()
    before = phux.commands(w)
    code, doc, _ = run(phux, w, "echo hi; false")
    assert (code, doc["output"], doc["exit_code"]) == (1, "hi", 1), doc
    res = phux("run", "--timeout", TIMEOUT, w, "printf 'a\\nb\\n'")
    assert (res.code, res.out) == (0, "a\nb\n"), res.err

    # Typed for real (no Enter): refused, with exactly what was typed.
    phux.keys(w, "echo pend")
    phux.await_typed(w, "echo pend")
    res = phux("run", "--timeout", TIMEOUT, w, "echo no")
    assert res.code == 3, res.err
    assert "input is pending at the prompt: 'echo pend'" in res.err
    phux.keys(w, "C-c")
    phux.await_prompt(w)
    # At a prompt drawn again for an empty line.
    phux.keys(w, "Enter")
    phux.await_prompt(w)
    res = phux("run", "--timeout", TIMEOUT, w, "echo after")
    assert (res.code, res.out) == (0, "after\n"), res.err

    entries = phux.history_entries(w)
    ran = [("echo hi; false", 1), ("printf 'a\\nb\\n'", 0), ("echo after", 0)]
    assert cli_commands(entries) == [*before, *ran]
    if corpus.config.marker:
        assert not any(corpus.config.marker in e["output"] for e in entries)


AUTOSUGGESTING = [
    c for c in CONFIGS.values() if c.name in ("zsh-autosuggestions", "fish-right-prompt")
]


@per_config(AUTOSUGGESTING)
def test_an_autosuggestion_is_not_typed_input(corpus: Corpus) -> None:
    # A pane of its own: the suggestion comes from the history file, not from
    # what the shared pane ran.
    phux = corpus.phux
    assert phux("new", "--json", "-s", "a", "--", corpus.config.shell).code == 0
    phux.await_prompt("a")
    # "echo s" brings the history line's rest up in grey after the cursor.
    phux.keys("a", "echo s")
    phux.await_screen("a", "echo suggested-from-history")
    res = phux("run", "--timeout", TIMEOUT, "a", "echo no")
    assert res.code == 3, res.err
    assert "input is pending at the prompt: 'echo s'" in res.err


RIGHT_PROMPTS = [c for c in CONFIGS.values() if c.rprompt]
CMDLINE = re.compile(rb";cmdline_url=[^;\x07\x1b]*")


# A transient prompt redraws the accepted line with a shorter prompt and no marks:
# read from the screen, the command starts at the old B's column (spec: known
# limits); zsh always gives cmdline_url, so history has the line as typed.
READ_FROM_SCREEN = [c for c in RIGHT_PROMPTS if c.name != "zsh-transient-prompt"]


@pytest.mark.parametrize("config", READ_FROM_SCREEN, ids=[c.name for c in READ_FROM_SCREEN])
def test_a_command_line_read_from_the_screen_leaves_the_right_prompt_out(config: Config) -> None:
    # The shells' real bytes, with the C marks' cmdline_url taken out: the engine
    # reads each command line from the screen (as for a bash command its history
    # did not record, or another terminal's integration).
    need(config)
    lines = ["echo one", "true", "ls -d /"]
    with shell_host() as host:
        home = build(config, host.dir / "rc")
        pane = host.spawn([config.shell], env={"HOME": str(home)}, cols=80, rows=24)
        # An empty line first (a theme's precmd leaves the first prompt without
        # marks), once the first prompt is drawn (whose marks cannot be awaited).
        pane.settle(0.5)
        n = pane.prompts()
        pane.type("\r")
        pane.wait_prompt(n + 1)
        for line in lines:
            pane.command(line)
        data = CMDLINE.sub(b"", pane.data)
    assert b"cmdline_url" not in data
    term = Terminal(80, 24, 1000)
    term.feed(data)
    assert [rec.command for rec in term.commands if rec.command] == lines


@per_config(RIGHT_PROMPTS)
def test_typed_input_before_the_cursor_moved_home_is_pending(corpus: Corpus) -> None:
    # The cursor back at the prompt's start: nothing before it, the typed text after.
    phux, w = corpus.phux, corpus.pane()
    # (Awaited at the cursor: test_new_then_run's "echo pend", cancelled, is still
    # on the screen, and C-a could come before the echo this test awaits.)
    phux.keys(w, "echo pend")
    start = phux.await_typed(w, "echo pend")
    phux.keys(w, "C-a")
    deadline = time.monotonic() + STEP
    while phux.cursor_x(w) != start:  # (until the shell moved the cursor home)
        assert time.monotonic() < deadline, f"the cursor never moved: {phux.cursor_line(w)}"
        time.sleep(0.02)
    res = phux("run", "--timeout", TIMEOUT, w, "echo no")
    assert res.code == 3, res.err
    assert "input is pending at the prompt: 'echo pend'" in res.err
    phux.keys(w, "C-c")
    phux.await_prompt(w)


LATE_HOOKS = [c for c in CONFIGS.values() if c.name in ("zsh-powerlevel9k", "zsh-rebuilt-prompt")]


@pytest.mark.parametrize("config", LATE_HOOKS, ids=[c.name for c in LATE_HOOKS])
def test_the_first_prompt_has_marks_when_a_later_precmd_hook_sets_it(config: Config) -> None:
    # add-zsh-hook precmd in .zshrc would run after phux's last hook at the first
    # prompt and set PROMPT without the marks: phux's .zshrc puts its hooks last
    # again after the user's.
    need(config)
    with shell_host() as host:
        home = build(config, host.dir / "rc")
        pane = host.spawn([config.shell], env={"HOME": str(home)}, cols=80, rows=24)
        pane.wait_prompt(1)
        pane.command("echo one")
        assert command_marks(pane.data) == ["C echo one", "D 0"]
        assert "one" in pane.screen()


DIRENV = [c for c in CONFIGS.values() if "direnv" in c.packages]


@per_config(DIRENV)
def test_direnv_prints_between_commands_not_in_their_output(corpus: Corpus) -> None:
    # direnv's prompt hook prints "direnv: loading" after the command's D mark;
    # in zsh its chpwd hook prints it during `cd`, which makes it cd's output.
    # A pane of its own: it changes directory.
    phux = corpus.phux
    (phux.home / "proj").mkdir()
    (phux.home / "proj/.envrc").write_text("export PROJ_VAR=from-envrc\n")
    assert phux("new", "--json", "-s", "d", "--", corpus.config.shell).code == 0
    phux.keys("d", "Enter")
    phux.await_prompt("d")
    res = phux("run", "--timeout", TIMEOUT, "d", "direnv allow proj && cd proj")
    loading = "direnv: loading ~/proj/.envrc\ndirenv: export +PROJ_VAR\n"
    assert (res.code, res.out) == (0, loading if corpus.config.shell == "zsh" else ""), res.err
    phux.await_screen("d", "direnv: loading")
    res = phux("run", "--timeout", TIMEOUT, "d", 'echo "[$PROJ_VAR]"')
    assert (res.code, res.out) == (0, "[from-envrc]\n"), res.err


@per_config([CONFIGS["bash-preexec"]])
def test_bash_preexec_keeps_its_hooks_beside_phuxs(corpus: Corpus) -> None:
    # The real bash-preexec (tools/bash_preexec.py): its DEBUG trap and PROMPT_COMMAND
    # entry coexist with phux's, so its preexec and precmd still run for every
    # command (they log to ~/fw.log), and `run` stays exact.
    phux, w = corpus.phux, corpus.pane()
    log = phux.home / "fw.log"
    logged = len(log.read_text().splitlines())
    res = phux("run", "--timeout", TIMEOUT, w, "printf 'a\\nb\\n'")
    assert (res.code, res.out) == (0, "a\nb\n"), res.err
    code, doc, _ = run(phux, w, "echo hi; false")
    assert (code, doc["output"]) == (1, "hi"), doc
    lines = log.read_text().splitlines()[logged:]
    ran = ["preexec[printf 'a\\nb\\n']", "preexec[echo hi; false]"]
    assert [line for line in lines if line.startswith("preexec")] == ran
    assert lines.count("precmd") >= 2  # one after each command


# ---------------------------------------------------------------- the matrix


def mcp_run(phux: Server, target: str, command: str) -> tuple[dict[str, Any], float]:
    """MCP's phux_run: its result (not an error) and the seconds it took."""
    began = time.monotonic()
    body = phux.mcp.ok("phux_run", {"target": target, "command": command, "timeout_secs": STEP})
    return body, time.monotonic() - began


FORGED = [
    ("cat evil.txt; echo TAIL; false", EXPECTED_D),
    ("cat c.txt; echo TAIL; false", EXPECTED_C),
    ("sh split.sh; echo TAIL; false", EXPECTED_SPLIT),
]


@per_config()
def test_forged_marks_in_output_change_nothing(corpus: Corpus) -> None:
    # A forged D (the file), a forged C alone, marks split across reads:
    # the real exit code and the whole output, and no forged command in history.
    phux, w = corpus.phux, corpus.pane()
    before = [command for command, _ in phux.commands(w)]
    for command, expected in FORGED:
        code, doc, _ = run(phux, w, command)
        assert (code, doc["exit_code"], doc["output"]) == (1, 1, expected), doc
        body, _ = mcp_run(phux, w, command)
        assert (body["exit_code"], body["output"]) == (1, expected), body
    ran = [command for command, _ in FORGED for _ in ("cli", "mcp")]
    assert phux.history(w) == [*before, *ran]
    listed = phux.mcp.ok("phux_history", {"target": w})["commands"]
    assert [e["command"] for e in listed if e["command"]] == [*before, *ran]


SYNTAX_ERROR = {"bash": "fi", "zsh": "fi", "fish": "end"}


@per_config()
def test_a_syntax_error_returns_at_once_with_the_message(corpus: Corpus) -> None:
    phux, w = corpus.phux, corpus.pane()
    line = SYNTAX_ERROR[corpus.config.shell]
    code, doc, took = run(phux, w, line)
    assert took < AT_ONCE, (took, doc)
    assert (code, doc["exit_code"]) == (2, 2), doc
    assert line in doc["output"] and corpus.config.shell in doc["output"], doc
    res = phux("run", "--timeout", TIMEOUT, w, "echo after")
    assert (res.code, res.out) == (0, "after\n"), res.err
    body, took = mcp_run(phux, w, line)
    assert took < AT_ONCE, (took, body)
    assert body["exit_code"] == 2 and line in body["output"], body
    body, _ = mcp_run(phux, w, "echo after")
    assert (body["exit_code"], body["output"]) == (0, "after"), body


def refused_at_once(phux: Server, target: str, holder: str, *by: str) -> None:
    """`run` (the CLI's, MCP's or both) refuses the pane at once: ``holder`` holds it."""
    if "cli" in by:
        code, doc, took = run(phux, target, "echo no")
        assert (code, took < AT_ONCE) == (3, True), (took, doc)
        assert f"{holder} holds the pane" in doc["err"], doc
    if "mcp" in by:
        began = time.monotonic()
        ask = {"target": target, "command": "echo no", "timeout_secs": STEP}
        answer = phux.mcp("phux_run", ask)
        assert (answer.error, time.monotonic() - began < AT_ONCE) == (True, True), answer
        assert f"{holder} holds the pane" in answer.text, answer


def await_state(phux: Server, target: str, state: str) -> None:
    deadline = time.monotonic() + STEP
    while phux.state(target) != state:
        assert time.monotonic() < deadline, f"{target} never {state}: {phux.state(target)}"
        time.sleep(0.05)


@per_config()
def test_a_pane_that_is_not_at_a_shell_prompt_is_refused_at_once(corpus: Corpus) -> None:
    # `new -- tail -f FILE` (the README's log pane), made by the CLI and by MCP.
    phux = corpus.phux
    res = phux("new", "--json", "-s", "logs", "--", "tail", "-f", "log.txt")
    assert res.code == 0, res.err
    phux.await_screen("logs", "log line")
    res = phux("snapshot", "--json", "logs")
    assert (res.json()["state"], res.json()["program"]) == ("running", "tail"), res.out
    refused_at_once(phux, "logs", "tail", "cli")
    log = str(phux.home / "log.txt")
    phux.mcp.ok("phux_new", {"name": "mlogs", "command": ["tail", "-f", log]})
    phux.await_screen("mlogs", "log line")
    state = phux.mcp.ok("phux_snapshot", {"target": "mlogs"})
    assert (state["state"], state["program"]) == ("running", "tail"), state
    refused_at_once(phux, "mlogs", "tail", "mcp")
    # A program the configured shell runs holds its pane the same way.
    w = corpus.pane()
    before = phux.commands(w)
    phux.keys(w, "sleep 1000", "Enter")
    await_state(phux, w, "running")
    refused_at_once(phux, w, "sleep", "cli", "mcp")
    phux.keys(w, "C-c")
    phux.await_prompt(w)
    code, doc, _ = run(phux, w, "echo back")
    assert (code, doc["output"]) == (0, "back"), doc
    assert [c for c, _ in phux.commands(w)] == [c for c, _ in before] + ["sleep 1000", "echo back"]


FLOOD = "seq 1 20000"


@per_config()
def test_history_after_a_flood_lists_the_earlier_commands(corpus: Corpus) -> None:
    # Defined last: the flood fills the shared pane's scrollback (20 000 rows, past the
    # engines' histories). The pane ran at least FIRST (exit 1) before.
    phux, w = corpus.phux, corpus.pane()
    before = phux.commands(w)
    assert (FIRST, 1) in before, before
    code, doc, _ = run(phux, w, FLOOD)
    assert (code, doc["exit_code"], doc["output"][-6:]) == (0, 0, "\n20000"), doc["exit_code"]
    entries = phux.history_entries(w)
    assert cli_commands(entries) == [*before, (FLOOD, 0)]
    assert {e["cwd"] for e in entries} == {str(phux.home)}
    # MCP's run floods the pane again, and its history lists them all too.
    body, _ = mcp_run(phux, w, FLOOD)
    assert (body["exit_code"], body["output"][-6:]) == (0, "\n20000"), body["exit_code"]
    listed = phux.mcp.ok("phux_history", {"target": w})["commands"]
    assert cli_commands(listed) == [*before, (FLOOD, 0), (FLOOD, 0)]

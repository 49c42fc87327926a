"""The CLI end to end: ``phux VERB`` processes against a real server.

Checks stdout, stderr and exit codes the way an agent sees them, the seed's
read -> act -> wait -> read loop, every exit code of the seed's table, bad
input, and that every --json document validates against spec/schemas/.
One server per module (per xdist worker), always stopped; sessions are
named per test so tests stay independent.

Each CLI call is a process of its own with its own argv, environment, working
directory, stdin, stdout, stderr and exit status, forked from one that imported
the CLI already (tests/shell/cli_fork.py; ``PHUX_TESTS_CLI=exec`` runs a
``python -m phux`` per call instead). The interpreter's own start-up is tested by
the calls that run ``python -m phux`` itself: ``real=True`` calls
(test_exit_codes_through_a_real_process, test_help_through_a_real_process), the
import checks (``imported_modules``), test_watch_streams_json_events,
test_broken_pipe_on_output_is_quiet and test_new_on_a_terminal_attaches.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.shell.cli_fork import CliForker

from .schemas import validate

# Longer than the verbs' own 30 s defaults (phux.timeouts): a verb that gives up says so,
# with the pane's screen, instead of being killed by the test with nothing to show.
STEP_TIMEOUT = 45.0


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def err_json(self) -> Any:
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        doc = json.loads(lines[0])
        validate("error_report", doc)
        assert doc["exit_code"] == self.code
        return doc


class Phux:
    def __init__(self, root: Path, cli: CliForker) -> None:
        self.root = root
        self.socket = root / "s"
        self.env = dict(os.environ, PHUX_SOCKET=str(self.socket), SHELL="/bin/sh", PS1="$ ")
        for var in ("PHUX_TERMINAL", "ENV", "PROMPT_COMMAND"):
            self.env.pop(var, None)
        self.server: subprocess.Popen[bytes] | None = None
        self.cli = cli

    def __call__(
        self,
        *args: str,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        real: bool = False,
    ) -> Result:
        """``phux ARGS`` in the module's directory: forked from the CLI zygote, or with
        ``real`` (or ``PHUX_TESTS_CLI=exec``) a ``python -m phux`` of its own."""
        env = self.env if env is None else env
        if real or os.environ.get("PHUX_TESTS_CLI") == "exec":
            proc = subprocess.run(
                [sys.executable, "-m", "phux", *args],
                env=env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=STEP_TIMEOUT,
                cwd=self.root,
            )
            return Result(proc.returncode, proc.stdout, proc.stderr)
        code, out, err = self.cli.run(list(args), STEP_TIMEOUT, env=env, cwd=self.root, stdin=stdin)
        return Result(code, out, err)

    def start(self) -> None:
        self.server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "phux",
                "server",
                "--socket",
                str(self.socket),
                "--log-file",
                str(self.root / "server.log"),
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.root,
        )
        deadline = time.monotonic() + 20
        while not self.socket.exists():
            assert self.server.poll() is None, "server exited at start"
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self("kill", "--server")
        if self.server is not None and self.server.poll() is None:
            try:
                self.server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(timeout=5)

    def new(self, name: str, *command: str) -> int:
        res = self("new", "--json", "-s", name, *(["--", *command] if command else []))
        assert res.code == 0, res.err
        doc = res.json()
        validate("new_result", doc)
        assert doc["session"] == name
        return int(doc["terminal_id"])

    def settle(self, target: str) -> None:
        """Wait for the shell's first prompt, so typed input is not echoed twice."""
        res = self("wait", "--regex", r"\$ ?$", "--timeout", "10", target)
        assert res.code == 0, res.err


@pytest.fixture(scope="module")
def phux(cli_forker: CliForker) -> Iterator[Phux]:
    root = Path(tempfile.mkdtemp(prefix="phux-cli-", dir="/tmp"))
    p = Phux(root, cli_forker)
    try:
        p.start()
        yield p
    finally:
        p.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def absent(cli_forker: CliForker) -> Iterator[Phux]:
    """A CLI pointed at a socket where no server runs."""
    root = Path(tempfile.mkdtemp(prefix="phux-none-", dir="/tmp"))
    try:
        yield Phux(root, cli_forker)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- the loop


def test_read_act_wait_read_loop(phux: Phux) -> None:
    tid = phux.new("loop")
    phux.settle("loop")
    first = phux("snapshot", "--json", "loop")
    assert first.code == 0, first.err
    screen = first.json()
    validate("screen_state", screen)
    assert screen["pane"] == tid and screen["schema_version"] == 4
    assert "cells" not in screen and screen["scrollback"] == []
    # act: the command's echo shows `AB""CD`, only its output shows ABCD
    act = phux("send-keys", "loop", 'echo "AB""CD"', "Enter")
    assert (act.code, act.out) == (0, "")
    waited = phux("wait", "--until", "ABCD", "--timeout", "10", "loop")
    assert (waited.code, waited.out) == (0, ""), waited.err
    after = phux("snapshot", "--json", "--scrollback", "--cells", f"@{tid}")
    doc = after.json()
    validate("screen_state", doc)
    assert "ABCD" in doc["lines"]
    assert isinstance(doc["styles"], list)
    boxed = phux("snapshot", "loop")
    assert boxed.code == 0 and boxed.out.startswith(f"┌─ @{tid} 80x24")
    assert "│ABCD" in boxed.out


def test_ls(phux: Phux) -> None:
    phux.new("ls-b")
    phux.new("ls-a")
    res = phux("ls", "--json")
    assert res.code == 0
    doc = res.json()
    validate("session_list", doc)
    names = [s["name"] for s in doc["sessions"]]
    assert names == sorted(names) and {"ls-a", "ls-b"} <= set(names)
    row = next(s for s in doc["sessions"] if s["name"] == "ls-a")
    assert row == {"name": "ls-a", "windows": 1, "attached": False, "exited": False}
    text = phux("ls")
    assert "ls-a: 1 window\n" in text.out
    doc = phux("ls", "--json", "--panes").json()
    validate("session_list", doc)
    row = next(s for s in doc["sessions"] if s["name"] == "ls-a")
    assert [(p["index"], p["state"]) for p in row["panes"]] == [(0, "prompt")]
    assert row["panes"][0]["program"]


# ---------------------------------------------------------------- run


@pytest.mark.parametrize("child", [0, 3, 124, 255])
def test_run_mirrors_the_exit_code(phux: Phux, child: int) -> None:
    name = f"run-{child}"
    phux.new(name)
    phux.settle(name)
    res = phux("run", "--json", "--timeout", "10", name, f"echo out-$((40+2)); (exit {child})")
    assert res.code == child, res.err
    doc = res.json()
    validate("run_result", doc)
    assert doc["exit_code"] == child
    assert doc["output"].strip() == "out-42"
    assert doc["truncated"] is False
    plain = phux("run", name, "echo plain")
    assert (plain.code, plain.out) == (0, "plain\n")


def test_run_timeout_is_125(phux: Phux) -> None:
    phux.new("run-slow")
    phux.settle("run-slow")
    res = phux("run", "--json", "--timeout", "0.5", "run-slow", "sleep", "30")
    assert (res.code, res.out) == (125, "")
    assert res.err_json()["error"]["code"] == "run_timed_out"
    phux("send-keys", "run-slow", "C-c")


def test_run_bad_target_is_1(phux: Phux) -> None:
    res = phux("run", "--json", "no-such-session", "true")
    assert (res.code, res.out) == (1, "")
    assert res.err_json()["error"]["code"] == "target_not_found"


def test_exit_codes_through_a_real_process(phux: Phux, absent: Phux) -> None:
    """The seed's exit codes as a real ``python -m phux`` (interpreter start-up, imports,
    its own exit) hands them to its caller; the other tests fork their calls."""
    phux.new("real")
    phux.settle("real")
    ran = phux("run", "--json", "--timeout", "10", "real", "echo r-$((40+2)); (exit 3)", real=True)
    assert ran.code == 3, ran.err
    assert ran.json()["output"].strip() == "r-42"
    pasted = phux("paste", "real", stdin="echo pas''ted-real\n", real=True)
    assert (pasted.code, pasted.out, pasted.err) == (0, "", "")
    assert phux("wait", "--until", "pasted-real", "--timeout", "10", "real", real=True).code == 0
    waited = phux("wait", "--until", "NEVER-SEEN", "--timeout", "0.3", "real", real=True)
    assert (waited.code, waited.out) == (124, "") and "timed out" in waited.err
    # (Which of run's timeouts it was, test_run_timeout_is_125 says: a real start on a
    # loaded machine may spend the 0.5 s before the command is typed, also 125.)
    slow = phux("run", "--json", "--timeout", "0.5", "real", "sleep 30", real=True)
    assert (slow.code, slow.out) == (125, ""), slow.err
    assert phux("send-keys", "real", "C-c", real=True).code == 0
    bad = phux("snapshot", "--json", "a:b:c", real=True)
    assert (bad.code, bad.out) == (1, "")
    assert bad.err_json()["error"]["code"] == "bad_selector"
    usage = phux("new", "--json", real=True)
    assert (usage.code, usage.out) == (2, "")
    unknown = phux("no-such-verb", real=True)
    assert unknown.code == 2 and "No such command" in unknown.err
    none = absent("ls", "--json", real=True)
    assert (none.code, none.out) == (1, "")
    assert none.err_json()["error"]["code"] == "no_server"
    assert phux("kill", "real", real=True).code == 0


def test_each_forked_call_has_the_environment_and_directory_it_is_given(phux: Phux) -> None:
    """The zygote's children take the caller's env and cwd (what the tests above rely
    on): the socket named in PHUX_SOCKET, the new pane's cwd the caller's."""
    assert phux("ls").code == 0
    elsewhere = phux("ls", env=dict(phux.env, PHUX_SOCKET=str(phux.root / "elsewhere")))
    assert elsewhere.code == 1 and "no server" in elsewhere.err, elsewhere.err
    made = phux("new", "--json", "-s", "forked-cwd", "--", "sh", "-c", "pwd; exec sleep 60")
    assert made.code == 0, made.err
    assert phux("wait", "--until", str(phux.root), "--timeout", "10", "forked-cwd").code == 0
    assert phux("kill", "forked-cwd").code == 0


def test_help_through_a_real_process(phux: Phux) -> None:
    top = phux("--help", real=True)
    assert top.code == 0 and top.out.startswith("Usage: phux [OPTIONS] COMMAND"), top.err
    assert "send-keys" in top.out and top.err == ""
    for verb in ("run", "send-keys", "snapshot", "wait", "new", "kill"):
        res = phux(verb, "--help", real=True)
        assert res.code == 0 and res.out.startswith(f"Usage: phux {verb} "), (verb, res.err)
    version = phux("--version", real=True)
    assert version.code == 0 and version.out.startswith("phux, version "), version.err


# ---------------------------------------------------------------- wait / watch


def test_wait_timeout_is_124_and_still_prints_the_screen(phux: Phux) -> None:
    tid = phux.new("wait-t")
    res = phux("wait", "--json", "--until", "NEVER-SEEN", "--timeout", "0.3", "wait-t")
    assert res.code == 124
    doc = res.json()
    validate("screen_state", doc)
    assert doc["pane"] == tid
    assert res.err_json()["exit_code"] == 124
    plain = phux("wait", "--until", "NEVER-SEEN", "--timeout", "0.3", "wait-t")
    assert (plain.code, plain.out) == (124, "") and "timed out" in plain.err


def test_timeout_zero_means_what_it_means_in_mcp(phux: Phux) -> None:
    """phux.timeouts: a run needs a positive timeout; a wait of 0 checks once."""
    phux.new("t-zero")
    phux.settle("t-zero")
    res = phux("run", "--timeout", "0", "t-zero", "true")
    assert res.code == 2 and "--timeout" in res.err
    start = time.monotonic()
    res = phux("wait", "--until", "NEVER-SEEN", "--timeout", "0", "t-zero")
    assert res.code == 124  # checked once, not met, no waiting
    assert time.monotonic() - start < 5
    phux("send-keys", "t-zero", "echo zero-hit", "Enter")
    assert phux("wait", "--until", "zero-hit", "--timeout", "10", "t-zero").code == 0
    assert phux("wait", "--until", "zero-hit", "--timeout", "0", "t-zero").code == 0


def test_watch_streams_json_events(phux: Phux) -> None:
    go = phux.root / "watch-go"
    # Prints ticks (dirty events) until the test says go, then sets a title and ends.
    script = (
        f"while [ ! -e {go} ]; do echo tick; sleep 0.1; done; "
        "printf '\\033]2;hello\\007'; sleep 0.2"
    )
    tid = phux.new("watch", "sh", "-c", script)
    argv = [sys.executable, "-m", "phux", "watch", "--json", "--until", "pane_closed"]
    proc = subprocess.Popen(
        [*argv, "--timeout", "20", f"@{tid}"],
        env=phux.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # bounded by --timeout: EOF at worst
        assert json.loads(first)["event"] in ("dirty", "idle"), first
        go.touch()
        rest, err = proc.communicate(timeout=STEP_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in (first + rest).splitlines()]
    for event in events:
        validate("watch_event", event)
        assert event["terminal"] == f"@{tid}"
    assert events[-1]["event"] == "pane_closed"
    assert {"event": "title_changed", "terminal": f"@{tid}", "title": "hello"} in events


# ---------------------------------------------------------------- new / kill / control verbs


def test_new_errors(phux: Phux) -> None:
    phux.new("dup")
    taken = phux("new", "--json", "-s", "dup")
    assert (taken.code, taken.out) == (1, "")
    assert taken.err_json()["error"]["code"] == "session_exists"
    missing = phux("new", "--json")
    assert (missing.code, missing.out) == (2, "")
    bad = phux("new", "--json", "-s", "a:b")
    assert (bad.code, bad.out) == (1, "")


def test_new_with_a_bare_word_that_is_no_program_suggests_s(phux: Phux) -> None:
    # `phux new demo` runs a program called demo, as tmux new-session does; a
    # person who meant to name the session learns how.
    res = phux("new", "-d", "no-such-program-xq")
    assert res.code == 1 and res.out == ""
    assert "phux new -s no-such-program-xq" in res.err, res.err
    res = phux("new", "-d", "-s", "named", "no-such-program-xq")
    assert res.code == 1 and "phux new -s" not in res.err, res.err


def test_new_without_json_picks_a_numeric_name(phux: Phux) -> None:
    res = phux("new")
    assert res.code == 0, res.err
    first = res.out.split()[2]
    assert first.isdigit()
    assert f"phux snapshot {first}" in res.out
    assert phux("kill", first).code == 0


def test_kill_session_window_pane(phux: Phux) -> None:
    tid = phux.new("doomed")
    assert phux("kill", "doomed").code == 0
    # Killed, it is listed as exited while the server retains it.
    assert "doomed: 1 window (exited)\n" in phux("ls").out
    # The name still reaches the killed pane while the server retains it.
    assert phux("snapshot", "--json", "doomed").json()["pane"] == tid
    assert phux("kill", "doomed").code == 1
    again = phux("kill", f"@{tid}")  # closed, still retained: the same answer
    assert (again.code, again.out) == (1, "")
    assert "exited" in again.err
    assert phux("kill", "no-such").code == 1
    phux.new("doomed-w")
    assert phux("kill", "doomed-w:0").code == 0
    phux.new("doomed-p")
    assert phux("kill", "doomed-p:0.0").code == 0
    assert phux("send-keys", "doomed-p", "x").code == 1


def test_control_verbs(phux: Phux) -> None:
    tid = phux.new("ctl")
    phux.settle("ctl")
    assert phux("resize", "ctl", "100x30").code == 0
    snap = phux("snapshot", "--json", "ctl").json()
    assert (snap["cols"], snap["rows"]) == (100, 30)
    assert phux("paste", "ctl", "echo pas''ted").code == 0
    assert phux("paste", "ctl", stdin="\n").code == 0
    assert phux("wait", "--until", "pasted", "--timeout", "10", "ctl").code == 0
    assert phux("rename", "ctl", "ctl2").code == 0
    assert phux("snapshot", "--json", "ctl2").json()["pane"] == tid
    assert phux("signal", "ctl2", "NOPE").code == 1
    assert phux("signal", "ctl2", "KILL").code == 0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("target", ["a:b:c", "@x", "#", "sess:", ".x."])
def test_malformed_selectors(phux: Phux, target: str) -> None:
    res = phux("snapshot", "--json", target)
    assert (res.code, res.out) == (1, "")
    assert res.err_json()["error"]["code"] == "bad_selector"


def test_unknown_key(phux: Phux) -> None:
    phux.new("keys")
    res = phux("send-keys", "keys", "C-")
    assert (res.code, res.out) == (1, "")
    assert "C-" in res.err


def test_closed_terminal(phux: Phux) -> None:
    tid = phux.new("closed", "true")
    deadline = time.monotonic() + 10
    while True:
        res = phux("send-keys", f"@{tid}", "x")
        if res.code != 0:
            break
        assert time.monotonic() < deadline, "the terminal never closed"
        time.sleep(0.1)
    assert res.code == 1 and res.out == ""


# ---------------------------------------------------------------- no server


@pytest.mark.parametrize(
    "args",
    [
        ["ls"],
        ["ls", "--json"],
        ["snapshot", "--json", "x"],
        ["send-keys", "x", "Enter"],
        ["run", "--json", "x", "true"],
        ["wait", "--timeout", "1", "x"],
        ["kill", "x"],
    ],
)
def test_no_server_is_1_and_starts_nothing(absent: Phux, args: list[str]) -> None:
    res = absent(*args)
    assert (res.code, res.out) == (1, ""), res.err
    if "--json" in args:
        assert res.err_json()["error"]["code"] == "no_server"
    else:
        assert "no server" in res.err
    assert not absent.socket.exists()


def test_kill_server_without_server_succeeds(absent: Phux) -> None:
    assert absent("kill", "--server").code == 0


def test_new_autostarts_then_kill_server(absent: Phux) -> None:
    try:
        res = absent("new", "--json", "-s", "auto")
        assert res.code == 0, res.err
        assert absent("ls", "--json").json()["sessions"][0]["name"] == "auto"
    finally:
        stop = absent("kill", "--server")
    assert stop.code == 0
    assert absent("ls").code == 1


# ---------------------------------------------------------------- process hygiene


def imported_modules(env: dict[str, str], *args: str) -> tuple[int, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "phux", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    lines = proc.stderr.splitlines()
    return proc.returncode, {line.split("|")[-1].strip() for line in lines if "|" in line}


def heavy(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in roots or m.startswith(roots))


@pytest.mark.parametrize("verb", ["ls", "snapshot", "send-keys", "run", "wait", "watch", "new"])
def test_the_cli_layer_imports_nothing_heavy(phux: Phux, verb: str) -> None:
    code, modules = imported_modules(phux.env, verb, "--help")
    assert code == 0
    assert heavy(modules, ("trio", "pyte", "msgspec", "phux.client", "phux.engine")) == []


def test_send_keys_imports_no_event_loop(phux: Phux) -> None:
    phux.new("imports")
    code, modules = imported_modules(phux.env, "send-keys", "imports", "x")
    assert code == 0
    assert heavy(modules, ("trio", "phux.server")) == []


def test_mode_independent_keys_import_no_engine(phux: Phux) -> None:
    # Cursor keys, and Enter after typed text, depend on the terminal's modes, so
    # the client replays the pane for them; keys like these need no engine.
    phux.new("imports-2")
    code, modules = imported_modules(phux.env, "send-keys", "imports-2", "x", "C-u")
    assert code == 0
    assert heavy(modules, ("pyte", "phux.engine.terminal")) == []


@pytest.mark.parametrize(
    "args",
    [
        ("send-keys", "{}", "x"),
        ("send-keys", "{}", "echo typed", "Enter"),
        ("run", "{}", "true"),
        ("snapshot", "--json", "{}"),
        ("wait", "--idle", "50", "--timeout", "5", "{}"),
    ],
)
def test_one_shot_verbs_take_the_quick_path(phux: Phux, args: tuple[str, ...]) -> None:
    # The agent's loop verbs are parsed without click (phux.cli.quick).
    name = f"quick-{args[0]}"
    if name not in phux("ls").out:
        phux.new(name)
        phux.settle(name)
    code, modules = imported_modules(phux.env, *(a.format(name) for a in args))
    assert code == 0
    assert heavy(modules, ("click", "trio", "phux.server", "wcwidth")) == []
    if args[0] in ("send-keys", "run"):
        # Modes come from scanning the bootstrap; plain output renders without the engine.
        assert heavy(modules, ("pyte", "phux.engine")) == []


@pytest.mark.parametrize(
    "args",
    [
        ("send-keys", "{}", "x", "C-u"),
        ("send-keys", "{}", "echo typed", "Enter"),
        ("run", "{}", "true"),
    ],
)
def test_plain_one_shot_verbs_import_neither_msgspec_nor_typing(
    phux: Phux, args: tuple[str, ...]
) -> None:
    # msgspec (~17 ms of a ~60 ms send-keys) is for the JSON shapes: the wire's
    # records, the client's helpers and its results without --json do not need
    # it. typing (~4 ms) is for the type checker only on this path.
    name = f"no-msgspec-{args[0]}"
    if name not in phux("ls").out:
        phux.new(name)
        phux.settle(name)
    code, modules = imported_modules(phux.env, *(a.format(name) for a in args))
    assert code == 0
    assert heavy(modules, ("msgspec", "typing")) == []


@pytest.mark.parametrize(
    "args",
    [
        ("snapshot", "--json", "{}"),
        ("snapshot", "--json", "--scrollback", "{}"),
        ("snapshot", "{}"),
    ],
)
def test_snapshot_without_cells_does_not_import_msgspec(phux: Phux, args: tuple[str, ...]) -> None:
    # msgspec's import is ~20 ms of the 80 ms snapshot budget: the projection is
    # printed from plain data (a property test holds it to the Struct's bytes).
    name = "no-msgspec-snapshot"
    if name not in phux("ls").out:
        phux.new(name)
        phux.settle(name)
    code, modules = imported_modules(phux.env, *(a.format(name) for a in args))
    assert code == 0
    assert heavy(modules, ("msgspec",)) == []


def test_snapshot_json_is_the_structs_encoding(phux: Phux) -> None:
    # The CLI prints plain data without msgspec (and with it for --cells); both
    # must be the bytes msgspec writes for the ScreenState Struct.
    import msgspec

    from phux.engine.screen_state import PaletteColor, RgbColor, ScreenState

    name = "struct-bytes"
    phux.new(name)
    phux.settle(name)
    phux(
        "send-keys",
        name,
        "printf '\\033]0;t\\007\\033[1;31mred\\033[0m \\033[38;2;1;2;3mrgb\\n'",
        "Enter",
    )
    phux("wait", "--until", "rgb", "--timeout", "10", name)
    for extra in (
        (),
        ("--cells",),
        ("--scrollback",),
        ("--cells", "--scrollback=3"),
        ("--cells", "--schema-version", "3"),
    ):
        out = phux("snapshot", "--json", *extra, name).out
        struct = msgspec.json.decode(out, type=ScreenState, strict=True)
        assert out == msgspec.json.encode(struct).decode() + "\n", extra
        old = "3" in extra
        assert struct.schema_version == (3 if old else 4)
        assert (struct.styles is not None) == ("--cells" in extra and not old)
        assert (struct.cells is not None) == old
        fgs = {c.style.fg for c in struct.cells or struct.styles or []}
        if "--cells" in extra:
            assert RgbColor(r=1, g=2, b=3) in fgs and PaletteColor(index=1) in fgs


def test_ls_without_json_does_not_import_msgspec(phux: Phux) -> None:
    phux.new("no-msgspec-ls")
    code, modules = imported_modules(phux.env, "ls")
    assert code == 0
    assert heavy(modules, ("msgspec",)) == []


def test_broken_pipe_on_output_is_quiet(phux: Phux) -> None:
    phux.new("pipe")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "phux", "snapshot", "--json", "--scrollback", "pipe"],
            env=phux.env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=STEP_TIMEOUT,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == b""


def test_scrollback_tristate(phux: Phux) -> None:
    phux.new("hist")
    phux.settle("hist")
    assert phux("run", "hist", "seq 1 100").code == 0
    viewport = phux("snapshot", "--json", "hist").json()
    assert viewport["scrollback"] == []
    last5 = phux("snapshot", "--json", "--scrollback", "5", "hist").json()
    assert len(last5["scrollback"]) == 5
    every = phux("snapshot", "--json", "--scrollback", "hist").json()
    assert len(every["scrollback"]) > 70
    assert every["scrollback"][-5:] == last5["scrollback"]
    assert every == phux("snapshot", "--json", "--scrollback=0", "hist").json()


def test_signal_interrupts_the_foreground_program(phux: Phux) -> None:
    phux.new("sig")
    phux.settle("sig")
    assert phux("send-keys", "sig", "sleep 30; echo after-$((6*7))", "Enter").code == 0
    assert phux("wait", "--idle", "300", "--timeout", "10", "sig").code == 0
    assert phux("signal", "sig", "INT").code == 0
    # sh abandons the whole list on SIGINT: the prompt comes back without `after-42`.
    assert phux("wait", "--regex", r"^\$ ?$", "--timeout", "10", "sig").code == 0
    assert "after-42" not in phux("snapshot", "--json", "sig").json()["lines"]


def test_wait_bad_regex_is_1(phux: Phux) -> None:
    phux.new("wait-re")
    res = phux("wait", "--json", "--regex", "(", "--timeout", "1", "wait-re")
    assert (res.code, res.out) == (1, "")
    assert res.err_json()["error"]["code"] == "invalid_argument"


def test_ls_with_a_server_but_no_sessions(absent: Phux) -> None:
    absent.start()
    try:
        res = absent("ls", "--json")
        assert res.code == 0
        assert res.json() == {"schema_version": 1, "sessions": []}
        text = absent("ls")
        assert (text.code, text.out) == (0, "")
    finally:
        absent.stop()


def test_new_on_a_terminal_attaches(phux: Phux) -> None:
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 70, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "phux", "new", "-s", "tty"],
        env=dict(phux.env, TERM="xterm-256color"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        cwd=phux.root,
    )
    os.close(slave)
    seen = b""

    def read_until(needle: bytes, seconds: float) -> None:
        nonlocal seen
        deadline = time.monotonic() + seconds
        while needle not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {needle!r} in {seen[-400:]!r}"
            ready, _, _ = select.select([master], [], [], left)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the tty
                    chunk = b""
                if not chunk:
                    break
                seen += chunk

    try:
        read_until(b"$", 15)  # the new session's prompt, painted through attach
        # While attached, the session is PRIMARY: ls shows it attached, at our size.
        deadline = time.monotonic() + 10
        while not any(
            s["name"] == "tty" and s["attached"] for s in phux("ls", "--json").json()["sessions"]
        ):
            assert time.monotonic() < deadline, "never shown as attached"
            time.sleep(0.1)
        snap = phux("snapshot", "--json", "tty").json()
        assert (snap["cols"], snap["rows"]) == (70, 20)
        os.write(master, b"\x02d")  # C-b d: detach
        read_until(b"detached", 10)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    assert phux("kill", "tty").code == 0  # detaching left the session running

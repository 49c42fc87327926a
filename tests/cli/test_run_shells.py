"""`phux run`, `wait --prompt/--exit` and the pane state through the CLI, on real shells.

What an agent sees: exit codes, stdout, the one JSON error line on stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .schemas import validate
from .test_e2e import Phux, phux

__all__ = ["phux"]


def ready(phux: Phux, name: str) -> None:
    res = phux("wait", "--prompt", "--timeout", "15", name)
    assert res.code == 0, res.err


def test_run_quotes_words_and_mirrors_codes(phux: Phux) -> None:
    phux.new("sh-quote", "bash")
    ready(phux, "sh-quote")
    res = phux("run", "sh-quote", "echo", "it's", "two words")
    assert (res.code, res.out) == (0, "it's two words\n"), res.err
    res = phux("run", "--json", "sh-quote", "echo out; exit_with() { return $1; }; exit_with 42")
    assert res.code == 42, res.err
    doc = res.json()
    validate("run_result", doc)
    assert doc["output"] == "out" and doc["exit_code"] == 42
    snap = phux("snapshot", "--json", "sh-quote").json()
    validate("screen_state", snap)
    assert (snap["program"], snap["state"]) == ("bash", "prompt")
    assert not any("__phx" in line for line in snap["lines"])


def test_run_refuses_busy_pane_with_exit_3(phux: Phux) -> None:
    phux.new("sh-busy", "bash")
    ready(phux, "sh-busy")
    assert phux("send-keys", "sh-busy", "cat", "Enter").code == 0
    assert phux("wait", "--idle", "300", "--timeout", "10", "sh-busy").code == 0
    res = phux("run", "--json", "sh-busy", "echo nope")
    assert (res.code, res.out) == (3, ""), res.err
    report = json.loads(res.err)
    validate("error_report", report)
    assert report["error"]["code"] == "pane_busy" and "cat" in report["error"]["message"]
    plain = phux("run", "sh-busy", "echo nope")
    assert plain.code == 3 and "cat holds the pane" in plain.err
    listing = phux("ls", "--json", "--panes").json()
    validate("session_list", listing)
    row = next(s for s in listing["sessions"] if s["name"] == "sh-busy")
    assert [(p["program"], p["state"]) for p in row["panes"]] == [("cat", "running")]
    assert phux("send-keys", "sh-busy", "C-d").code == 0
    ready(phux, "sh-busy")
    assert phux("run", "sh-busy", "echo yes").out == "yes\n"


def test_unbalanced_quote_is_exit_4(phux: Phux) -> None:
    phux.new("sh-quote4", "bash")
    ready(phux, "sh-quote4")
    res = phux("run", "--json", "sh-quote4", "echo 'open")
    assert (res.code, res.out) == (4, ""), res.err
    assert json.loads(res.err)["error"]["code"] == "incomplete_command"
    assert phux("run", "sh-quote4", "echo closed").out == "closed\n"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_an_unbalanced_quote_with_slow_prompt_hooks_is_one_c_c(
    phux: Phux, tmp_path: Path, shell: str
) -> None:
    """After its C-c, run waited a second for the prompt, then pressed C-c again (three
    times): with prompt hooks slower than that (a git prompt in a big repository, a
    loaded machine) each press killed the hook's job, and run gave up while the hook
    still held the pane, so the next run was refused (exit 3). A shell that shows it
    took the C-c is waited for instead: bash leaves readline (the tty's modes change;
    its hook here blocks in a builtin: no job, no output), zsh runs a plain `precmd`
    before phux's hooks (its job takes the terminal, no mark yet)."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    args: list[str] = []
    env: list[str] = []
    if shell == "bash":
        rc = tmp_path / "slowrc"
        rc.write_text(f"exec 9<>{fifo}\nPROMPT_COMMAND='read -t 1.1 -u 9 _'\n")
        args = ["--rcfile", str(rc)]
    else:
        (tmp_path / ".zshrc").write_text("precmd() { command sleep 1.1 }\n")
        env = ["-e", f"ZDOTDIR={tmp_path}"]
    name = f"sh-quote-slow-{shell}"
    assert phux("new", *env, "-s", name, "--", shell, *args).code == 0
    ready(phux, name)
    res = phux("run", "--json", "--timeout", "20", name, "echo 'open")
    assert (res.code, res.out) == (4, ""), res.err
    audit = phux("audit", "--json", name).json()["entries"]
    ctrl_c = hashlib.sha256(b"\x03").hexdigest()
    assert [e["bytes"] for e in audit if e["sha256"] == ctrl_c] == [1], audit
    res = phux("run", "--timeout", "20", name, "echo closed")
    assert (res.code, res.out) == (0, "closed\n"), res.err


def _pane_process(phux: Phux, mark: str) -> int:
    """The pid of the server's child started with ``-e PHUX_TEST_PANE=<mark>``."""
    assert phux.server is not None
    children = Path(f"/proc/{phux.server.pid}/task/{phux.server.pid}/children").read_text()
    for pid in map(int, children.split()):
        with contextlib.suppress(OSError):
            if f"PHUX_TEST_PANE={mark}".encode() in Path(f"/proc/{pid}/environ").read_bytes():
                return pid
    raise AssertionError(f"no pane process marked {mark}")


def test_a_command_typed_just_before_run_is_not_taken_for_its_own(
    phux: Phux, tmp_path: Path
) -> None:
    """A line someone typed just before run's runs first: its C names it, and run waits
    for a C naming its own line. It gave up on that half a second after the other
    command's prompt (a shell may name a line otherwise: fish's abbreviations) and took
    the other command's output and status for its own, while its own line still ran
    its slow preexec hook. It now does so only once the shell is back at its editor."""
    (tmp_path / ".zshrc").write_text("preexec() { command sleep 1 }\n")
    name = "sh-foreign-first"
    env = ["-e", f"ZDOTDIR={tmp_path}", "-e", f"PHUX_TEST_PANE={name}"]
    assert phux("new", *env, "-s", name, "--", "zsh").code == 0
    ready(phux, name)
    zsh = _pane_process(phux, name)
    os.kill(zsh, signal.SIGSTOP)  # both lines wait in the tty for the shell to read them
    try:
        assert phux("send-keys", name, "echo foreign", "Enter").code == 0
        run = subprocess.Popen(
            [sys.executable, "-m", "phux", "run", "--json", "--timeout", "20", name, "echo mine"],
            env=phux.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        typed = hashlib.sha256(b"echo mine\r").hexdigest()
        deadline = time.monotonic() + 20
        while typed not in phux("audit", "--json", name).out:
            assert run.poll() is None and time.monotonic() < deadline, "run did not type"
    finally:
        os.kill(zsh, signal.SIGCONT)
    out, _ = run.communicate(timeout=30)
    doc = json.loads(out)
    assert (doc["exit_code"], doc["output"]) == (0, "mine"), doc


def test_a_line_the_shell_names_otherwise_is_still_its_own(phux: Phux, tmp_path: Path) -> None:
    """fish expands an abbreviation as it is typed: its C names `echo via-abbr`, not the
    line run typed. Once fish is back at its editor with no C naming run's line, the
    command it ran was run's."""
    config = tmp_path / "fish"
    config.mkdir()
    (config / "config.fish").write_text("abbr -a say echo\n")
    name = "sh-fish-abbr"
    assert phux("new", "-e", f"XDG_CONFIG_HOME={tmp_path}", "-s", name, "--", "fish").code == 0
    ready(phux, name)
    res = phux("run", "--json", "--timeout", "10", name, "say via-abbr")
    assert res.code == 0, res.err
    assert res.json()["output"] == "via-abbr"


def test_a_shell_that_ignores_c_c_is_not_said_to_be_interrupted(phux: Phux, tmp_path: Path) -> None:
    """No sign of three C-c (SIGINT ignored): run still reports the unfinished line,
    without claiming it interrupted it, and the pane reads as the continuation it is."""
    rc = tmp_path / "deafrc"
    rc.write_text("trap '' INT\n")
    name = "sh-quote-deaf"
    phux.new(name, "bash", "--rcfile", str(rc))
    ready(phux, name)
    res = phux("run", "--json", "--timeout", "20", name, "echo 'open")
    assert res.code == 4, res.err
    message = json.loads(res.err)["error"]["message"]
    assert "no sign of the 3 C-c" in message and "may still wait" in message, message
    assert phux("snapshot", "--json", name).json()["state"] == "continuation"
    assert phux("kill", name).code == 0


def test_a_continuation_prompt_is_its_own_state(phux: Phux) -> None:
    phux.new("sh-ps2", "bash")
    ready(phux, "sh-ps2")
    assert phux("send-keys", "sh-ps2", "echo 'open", "Enter").code == 0
    assert phux("wait", "--regex", "^> ?$", "--timeout", "10", "sh-ps2").code == 0
    snap = phux("snapshot", "--json", "sh-ps2").json()
    validate("screen_state", snap)
    assert (snap["program"], snap["state"]) == ("bash", "continuation")
    # Not an idle prompt: wait --prompt is not met, run refuses.
    assert phux("wait", "--prompt", "--timeout", "0.5", "sh-ps2").code == 124
    assert phux("run", "sh-ps2", "echo no").code == 3
    assert phux("send-keys", "sh-ps2", "C-c").code == 0
    ready(phux, "sh-ps2")
    assert phux("run", "sh-ps2", "echo yes").out == "yes\n"


def test_a_quiet_builtin_is_waited_for_without_spinning(phux: Phux) -> None:
    # `read -t` runs in the shell itself with the tty canonical: quiet, not a prompt
    # the hooks missed. run reads on until the D mark, without burning the CPU.
    import resource

    phux.new("sh-quiet", "bash")
    ready(phux, "sh-quiet")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = phux("run", "--timeout", "10", "sh-quiet", 'read -t 2 x; echo "got:[$x]"; false')
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (res.code, res.out) == (1, "got:[]\n"), res.err
    assert after.ru_utime - before.ru_utime < 1.0


def test_pane_dying_is_exit_5(phux: Phux) -> None:
    phux.new("sh-die", "bash")
    ready(phux, "sh-die")
    res = phux("run", "--json", "sh-die", "kill -9 $$")
    assert (res.code, res.out) == (5, ""), res.err
    report = json.loads(res.err)
    assert report["error"]["code"] == "pane_exited" and "signal 9" in report["error"]["message"]


def test_wait_exit_mirrors_the_status(phux: Phux) -> None:
    tid = phux.new("sh-exit", "bash")
    ready(phux, "sh-exit")
    assert phux("send-keys", "sh-exit", "exit 9", "Enter").code == 0
    res = phux("wait", "--exit", "--json", "--timeout", "10", f"@{tid}")
    assert res.code == 9, res.err
    doc = res.json()
    validate("screen_state", doc)
    assert doc["state"] == "exited" and "program" not in doc
    alive = phux.new("sh-alive", "bash")
    res = phux("wait", "--exit", "--timeout", "0.3", f"@{alive}")
    assert res.code == 124


def test_wait_conditions_are_exclusive(phux: Phux) -> None:
    res = phux("wait", "--prompt", "--exit", "x")
    assert res.code == 2 and "one condition" in res.err


@pytest.mark.parametrize(
    ("shell", "code"),
    # zsh without `setopt interactivecomments` runs `#` as a command, as typed at
    # its prompt; the other shells run nothing.
    [("bash", 0), ("zsh", 127), ("fish", 0), ("dash", 0)],
)
def test_a_line_that_runs_no_command_returns_at_once(phux: Phux, shell: str, code: int) -> None:
    # bash prints no C and no D for a comment (PS0 is not expanded, the status is
    # not a command's): the next prompt cycle answers it.
    name = f"sh-note-{shell}"
    phux.new(name, shell)
    ready(phux, name)
    started = time.monotonic()
    res = phux("run", "--json", "--timeout", "20", name, "# just a note")
    assert time.monotonic() - started < 8, res.err
    assert res.code == code, res.err
    doc = res.json()
    validate("run_result", doc)
    assert doc["exit_code"] == code
    if code == 0:
        assert doc["output"] == ""
    assert phux("run", name, "echo after").out == "after\n"


@pytest.mark.parametrize("shell", ["bash", "zsh", "dash"])
def test_a_syntax_error_returns_at_once_with_the_message(phux: Phux, shell: str) -> None:
    name = f"sh-syntax-{shell}"
    phux.new(name, shell)
    ready(phux, name)
    started = time.monotonic()
    res = phux("run", "--json", "--timeout", "20", name, "fi")
    assert time.monotonic() - started < 8, res.err
    assert res.code == 2, res.err
    doc = res.json()
    assert doc["exit_code"] == 2
    assert "fi" in doc["output"] and "error" in doc["output"], doc
    assert phux("run", name, "echo after").out == "after\n"


def test_dash_output_is_not_marked_as_input(phux: Phux) -> None:
    # dash prints no C mark: the input the B mark started ends at the line feed
    # after it (spec/shell-integration.md), so the rows the command prints are
    # output, in the cells' marks as in history.
    phux.new("sh-dash-sem", "dash")
    ready(phux, "sh-dash-sem")
    assert phux("run", "sh-dash-sem", "seq 1 3").out == "1\n2\n3\n"
    snap = phux("snapshot", "--json", "--cells", "sh-dash-sem").json()
    validate("screen_state", snap)
    row = snap["lines"].index("1")
    assert snap["lines"][row - 1].endswith("seq 1 3")
    marked = [(run["row"] - row, run["text"], run.get("semantic")) for run in snap["styles"]]
    assert (-1, "seq 1 3", "input") in marked
    assert [m for m in marked if 0 <= m[0] <= 2] == []
    assert any(m[0] == 3 and m[2] == "prompt" for m in marked), marked
    doc = phux("history", "--json", "sh-dash-sem").json()
    assert [(c["command"], c["output"]) for c in doc["commands"]] == [("seq 1 3", "1\n2\n3")]


@pytest.mark.parametrize(("n", "line"), enumerate(["end", "echo )", "echo $"]))
def test_a_fish_syntax_error_returns_at_once_with_the_message(
    phux: Phux, n: int, line: str
) -> None:
    """fish's editor does not run a line it cannot parse: it prints the error and keeps
    the line. run reports it as bash does (exit 2, the message) and clears the line."""
    name = f"sh-fish-syntax-{n}"
    phux.new(name, "fish")
    ready(phux, name)
    started = time.monotonic()
    res = phux("run", "--json", "--timeout", "20", name, line)
    assert time.monotonic() - started < 8, res.err
    assert res.code == 2, (res.err, res.out)
    doc = res.json()
    validate("run_result", doc)
    assert doc["exit_code"] == 2
    assert doc["output"].startswith("fish:"), doc
    assert phux("run", name, "echo after").out == "after\n"


def test_a_line_longer_than_the_canonical_limit_is_refused_in_dash(phux: Phux) -> None:
    """dash reads its command line in the tty's canonical mode, whose line holds at most
    4095 bytes: typed whole, the line would be cut and another command run."""
    name = "sh-dash-long"
    phux.new(name, "dash")
    ready(phux, name)
    long = "echo " + "x" * 5000
    started = time.monotonic()
    res = phux("run", "--json", "--timeout", "20", name, long)
    assert time.monotonic() - started < 8, res.err
    assert res.code == 1, (res.err, res.out)
    err = json.loads(res.err)["error"]
    assert err["code"] == "invalid_argument" and "canonical" in err["message"], err
    assert phux("run", name, "echo after").out == "after\n"
    assert "x" * 100 not in phux("snapshot", name).out  # nothing of it was typed
    short = "echo " + "y" * 3000  # under the limit: typed and run whole
    assert phux("run", name, short).out == "y" * 3000 + "\n"


def test_run_from_inside_its_own_pane_is_refused_at_once(phux: Phux) -> None:
    """`phux run .` typed in a pane runs while that pane's shell runs it: the pane is
    busy (with phux itself), so run refuses at once rather than wait its timeout."""
    name = "sh-self"
    phux.new(name, "bash")
    ready(phux, name)
    inner = f"{sys.executable} -m phux run --timeout 20 . 'echo inner'; echo rc=$?"
    started = time.monotonic()
    out = phux("run", "--timeout", "30", name, inner)
    assert time.monotonic() - started < 10, out.err
    assert "rc=3" in out.out, out.out
    assert "inner\n" not in out.out


def test_a_fish_command_whose_preexec_hooks_take_long_is_not_taken_for_unfinished(
    phux: Phux, tmp_path: Path
) -> None:
    """fish runs an event's handlers in the order they were defined, and phux's are
    defined after config.fish: a user's fish_preexec handler that waits on a job kept the
    C mark back, fish quiet at what looks like its editor (its tty raw between the
    handler's job and the command), and run took the line for unfinished: it pressed
    C-c and reported exit 4, once after the command had run. phux.fish defines the
    user's handlers again after its own, so C comes first. Nor does run spin meanwhile."""
    import resource

    config = tmp_path / "fish"
    config.mkdir()
    (config / "config.fish").write_text(
        "function slow_hook --on-event fish_preexec\n    command sleep 1.1\nend\n"
    )
    name = "sh-fish-slow-preexec"
    res = phux("new", "-e", f"XDG_CONFIG_HOME={tmp_path}", "-s", name, "--", "fish")
    assert res.code == 0, res.err
    ready(phux, name)
    for n in range(2):  # (without the fix each run lost the race more often than not)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = phux("run", "--json", "--timeout", "20", name, f"echo ran{n}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert res.code == 0, (n, res.err)
        assert res.json()["output"] == f"ran{n}", res.out
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert used < 1.0, f"run {n} spent {used:.2f} s of CPU waiting on fish's hook"

"""Targets as an agent uses them (issue 14, "Targets"), end to end through
``python -m phux VERB`` against a real server: the default target follows last
use, names of exited panes stay resolvable while retained, windows, panes and
tags made from the CLI are reachable by every selector form."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from .schemas import validate
from .test_e2e import STEP_TIMEOUT, Phux, phux  # noqa: F401  (the module-scoped server fixture)


def _until(predicate, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _pane_of_default(phux: Phux) -> int:  # noqa: F811
    res = phux("snapshot", "--json")
    assert res.code == 0, res.err
    return int(res.json()["pane"])


def test_the_default_target_follows_writes_not_reads(phux: Phux) -> None:  # noqa: F811
    """The default target is the active pane of the session last acted on: a write
    (send-keys, run, paste) moves it there, a read (snapshot, wait, history, watch)
    never does (issue 23 item 8)."""
    used = phux.new("lastuse-a")
    phux.settle("lastuse-a")
    newer = phux.new("lastuse-b")  # creating a session selects it
    phux.settle("lastuse-b")
    assert _pane_of_default(phux) == newer
    for read in (
        ("snapshot", "lastuse-a"),
        ("wait", "--timeout", "5", "--regex", ".", "lastuse-a"),
        ("history", "lastuse-a"),
        ("ls", "--panes"),
    ):
        assert phux(*read).code == 0, read
        assert _pane_of_default(phux) == newer, read
    assert phux("watch", "--until", "dirty", "--timeout", "0.3", "lastuse-a").code in (0, 124)
    assert _pane_of_default(phux) == newer
    for write in (
        ("send-keys", "lastuse-a", "echo hi", "Enter"),
        ("run", "lastuse-a", "true"),
        ("paste", "lastuse-a", " "),
    ):
        assert phux("send-keys", "lastuse-b", "").code == 0  # the other one was written last...
        assert _pane_of_default(phux) == newer
        res = phux(*write)
        assert res.code == 0, (write, res.err)
        assert _pane_of_default(phux) == used, write  # ...until this write went to `used`
    res = phux("snapshot", "--json", ".")
    assert res.code == 0 and int(res.json()["pane"]) == used
    assert phux("kill", "lastuse-a").code == 0
    assert phux("kill", "lastuse-b").code == 0


def test_a_session_name_does_not_drift_to_a_pane_read_or_made(phux: Phux) -> None:  # noqa: F811
    """`run build` keeps going to build's active pane after a `snapshot build:logs`,
    a `new-window` and a `split` (tmux's session target); `--select` moves it, and
    the @N each creation printed pins a pane."""
    seed = phux.new("drift")
    phux.settle("drift")
    made = phux("new-window", "drift", "-n", "logs", "--", "sh", "-c", "echo L; exec sleep 60")
    assert made.code == 0, made.err
    name, at = made.out.split()
    logs = int(at.removeprefix("@"))
    assert name == "drift:1.0"
    split = phux("split", "--json", "drift:1", "--", "sh", "-c", "echo S; exec sleep 60")
    assert split.code == 0, split.err
    assert phux("wait", "--until", "L", "--timeout", "10", "drift:logs").code == 0
    assert phux("snapshot", "drift:logs").code == 0
    assert phux("history", "drift:1.1").code == 0
    res = phux("run", "--json", "drift", "echo still-here")
    assert res.code == 0, res.err
    assert res.json()["output"] == "still-here"
    assert int(phux("snapshot", "--json", "drift").json()["pane"]) == seed
    # --select makes the new pane the session's active one; `=` is the one before.
    sel = phux("split", "--json", "--select", "drift:0", "--", "sh", "-c", "exec sleep 60")
    assert sel.code == 0, sel.err
    picked = int(sel.json()["terminal_id"])
    assert int(phux("snapshot", "--json", "drift").json()["pane"]) == picked
    assert int(phux("snapshot", "--json", "=").json()["pane"]) == seed
    assert int(phux("snapshot", "--json", f"@{logs}").json()["pane"]) == logs
    assert phux("kill", "drift").code == 0


def test_an_exited_sessions_name_stays_resolvable(phux: Phux) -> None:  # noqa: F811
    tid = phux.new("jobdone", "sh", "-c", "echo final words; exit 7")
    res = phux("wait", "--json", "--until", "never", "--timeout", "10", "jobdone")
    # The pane exits: wait says so with its exit status rather than waiting on.
    assert res.code == 1, res.err
    assert "exit" in res.err and "7" in res.err
    idle = phux("wait", "--idle", "100", "jobdone")  # by its name, after it exited
    assert idle.code == 1 and "exited with status 7" in idle.err, idle.err
    snap = phux("snapshot", "--json", "jobdone")
    assert snap.code == 0, snap.err
    assert int(snap.json()["pane"]) == tid
    assert any("final words" in line for line in snap.json()["lines"])
    # ls lists it, marked, while the server keeps it (text and JSON).
    listing = phux("ls")
    assert "jobdone: 1 window (exited)\n" in listing.out, listing.out
    doc = phux("ls", "--json", "--panes")
    assert doc.code == 0, doc.err
    validate("session_list", doc.json())
    (row,) = [r for r in doc.json()["sessions"] if r["name"] == "jobdone"]
    assert row["exited"] is True and row["attached"] is False
    assert [p["id"] for p in row["panes"]] == [f"@{tid}"]
    assert row["panes"][0]["state"] == "exited"
    # A live session of the same name wins over the retained one.
    again = phux.new("jobdone")
    (row,) = [r for r in phux("ls", "--json").json()["sessions"] if r["name"] == "jobdone"]
    assert row["exited"] is False
    assert int(phux("snapshot", "--json", "jobdone").json()["pane"]) == again
    assert phux("kill", "jobdone").code == 0


def test_killing_twice_is_one_answer(phux: Phux) -> None:  # noqa: F811
    tid = phux.new("killtwice")
    assert phux("kill", "killtwice").code == 0
    by_name = phux("kill", "killtwice")
    by_id = phux("kill", f"@{tid}")
    assert by_name.code == by_id.code == 1, (by_name.err, by_id.err)
    assert "exited" in by_name.err and "exited" in by_id.err


def test_watch_until_idle_on_an_idle_pane_ends(phux: Phux) -> None:  # noqa: F811
    phux.new("idlewatch", "sh", "-c", "echo quiet; exec sleep 60")
    assert phux("wait", "--until", "quiet", "--timeout", "10", "idlewatch").code == 0
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "phux",
            "watch",
            "--json",
            "--until",
            "idle",
            "--timeout",
            "10",
            "idlewatch",
        ],
        env=phux.env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 8
    events = [json.loads(line)["event"] for line in proc.stdout.splitlines()]
    assert events[-1] == "idle"
    assert phux("kill", "idlewatch").code == 0


def test_windows_panes_and_tags_from_the_cli(phux: Phux) -> None:  # noqa: F811
    """Every selector form can match once windows, panes and tags can be made."""
    seed = phux.new("layout", "sh", "-c", "echo seed-pane; exec sleep 60")
    res = phux(
        "new-window",
        "--json",
        "layout",
        "-n",  # tmux's order: options after SESSION, up to `--`
        "logs",
        "--",
        "sh",
        "-c",
        "echo win-one; exec sleep 60",
    )
    assert res.code == 0, res.err
    validate("new_pane_result", res.json())
    win = res.json()
    assert (win["session"], win["window"], win["pane"]) == ("layout", 1, 0)
    res = phux("split", "layout:1", "--json", "--", "sh", "-c", "echo split-pane; exec sleep 60")
    assert res.code == 0, res.err
    split = res.json()
    assert (split["window"], split["pane"]) == (1, 1)
    res = phux("tag", "layout:1.1", "builder", "ci")
    assert (res.code, res.out) == (0, "builder,ci\n"), res.err
    for target, marker, tid in (
        ("layout:0", "seed-pane", seed),
        ("layout:1.0", "win-one", win["terminal_id"]),
        ("layout:logs.1", "split-pane", split["terminal_id"]),
        ("#builder", "split-pane", split["terminal_id"]),
        (f"@{win['terminal_id']}", "win-one", win["terminal_id"]),
    ):
        res = phux("wait", "--json", "--until", marker, "--timeout", "10", target)
        assert res.code == 0, (target, res.err)
        assert res.json()["pane"] == tid, target
    # Reads and unselected creations leave the session's active pane where it was.
    res = phux("snapshot", "--json", "layout")
    assert res.code == 0, res.err
    assert res.json()["pane"] == seed
    assert phux("untag", "layout:1.1", "builder").out == "ci\n"
    assert phux("snapshot", "#builder").code == 1
    listing = phux("ls", "--json", "--panes")
    assert listing.code == 0, listing.err
    validate("session_list", listing.json())
    (row,) = [s for s in listing.json()["sessions"] if s["name"] == "layout"]
    assert row["windows"] == 2
    panes = {p["id"]: p for p in row["panes"]}
    assert list(panes) == [f"@{seed}", f"@{win['terminal_id']}", f"@{split['terminal_id']}"]
    pane = panes[f"@{split['terminal_id']}"]
    assert (pane["window"], pane["window_name"], pane["index"], pane["tags"]) == (
        1,
        "logs",
        1,
        ["ci"],
    )
    assert (pane["cols"], pane["rows"]) == (80, 24)
    assert pane["program"] == "sleep" and pane["cwd"] == str(phux.root)
    assert "panes" not in phux("ls", "--json").json()["sessions"][0]
    assert phux("new-window", "no-such-session").code == 1
    assert phux("kill", "layout").code == 0


def test_boxed_snapshot_keeps_zero_width_joiners(phux: Phux) -> None:  # noqa: F811
    """An emoji ZWJ sequence (man + ZWJ + laptop) is shown as such, not with U+FFFD."""
    phux.new(
        "zwj",
        "sh",
        "-c",
        r"printf 'dev: \360\237\221\250\342\200\215\360\237\222\273 ok\n'; exec sleep 60",
    )
    assert phux("wait", "--until", "ok", "--timeout", "10", "zwj").code == 0
    res = phux("snapshot", "zwj")
    assert res.code == 0, res.err
    assert "\ufffd" not in res.out
    assert "\U0001f468\u200d\U0001f4bb" in res.out
    assert phux("kill", "zwj").code == 0


def test_run_says_the_pane_died(phux: Phux) -> None:  # noqa: F811
    phux.new("runkill")
    phux.settle("runkill")
    res = phux("run", "runkill", "kill -9 $$")
    assert res.code == 5, (res.code, res.err)  # pane_exited: not the command's own status
    assert "died" in res.err and "signal 9" in res.err


def test_run_with_an_empty_command_is_a_usage_error(phux: Phux) -> None:  # noqa: F811
    res = phux("run", "--json", "anything", "")
    assert (res.code, res.out) == (2, "")
    doc = res.err_json()
    assert doc["remedy"]


def test_remedies_are_never_empty(phux: Phux) -> None:  # noqa: F811
    tid = phux.new("remedy", "true")
    _until(lambda: phux("send-keys", f"@{tid}", "x").code != 0)
    for args in (
        ("send-keys", "--json", f"@{tid}", "x"),  # terminal_exited
        ("new", "--json", "-s", "remedy2", "--", "/no/such/program"),  # invalid_argument
        ("wait", "--json", "--timeout", "0.2", "--until", "never", "remedy2"),  # miss
    ):
        res = phux(*args)
        assert res.code != 0
        doc = res.err_json()
        assert doc["remedy"], args
    phux.new("remedy3")
    res = phux("rename", "remedy3", "remedy3b")
    assert res.code == 0
    phux.new("remedy4")
    res = phux("rename", "remedy4", "remedy3b")
    assert res.code == 1 and "-s" not in res.err


def test_e_sets_variables_in_new_panes(phux: Phux) -> None:  # noqa: F811
    """tmux's -e VAR=VALUE on new, new-window and split: the pane's environment is the
    server's plus these; the caller's own environment does not reach it."""
    env = dict(phux.env, PHUX_T_CALLER="caller")
    show = 'echo "v=[$PHUX_T_A][$PHUX_T_CALLER]"; exec sleep 60'
    res = phux("new", "--json", "-s", "envs", "-e", "PHUX_T_A=a=1", "--", "sh", "-c", show, env=env)
    assert res.code == 0, res.err
    assert phux("wait", "--until", "v=[a=1][]", "--timeout", "10", "envs").code == 0
    for verb, where in (("new-window", "envs"), ("split", "envs:0")):
        res = phux(verb, "--json", where, "-e", f"PHUX_T_A={verb}", "--", "sh", "-c", show)
        assert res.code == 0, res.err
        pinned = f"@{res.json()['terminal_id']}"
        assert phux("wait", "--until", f"v=[{verb}][]", "--timeout", "10", pinned).code == 0
    for bad in ("NOEQUALS", "1X=y", "=y", "PHUX_TERMINAL=1"):
        res = phux("split", "envs:0", "-e", bad)
        assert res.code == 2 and "-e" in res.err, (bad, res.err)
    assert phux("kill", "envs").code == 0


def test_a_check_once_counts_its_quiet_time_from_when_it_sees_the_pane(
    phux: Phux,  # noqa: F811
) -> None:
    """`--timeout 0 --idle MS` on a quiet pane whose replay takes longer than the check's
    slack (a big scrollback to bootstrap, a loaded machine): met. The quiet time was
    counted from the call, before the pane was even subscribed, and timed out."""
    phux.new("bigback", "sh", "-c", "seq 1 300000 | sed 's/$/ padding padding padding/'; read x")
    assert phux("wait", "--until", "300000 padding", "--timeout", "30", "bigback").code == 0
    for _ in range(3):
        res = phux("wait", "--timeout", "0", "--idle", "100", "bigback")
        assert res.code == 0, res.err
    assert phux("kill", "bigback").code == 0


def test_wait_with_timeout_0_checks_the_current_state(phux: Phux) -> None:  # noqa: F811
    """On an idle shell, --prompt and --idle with --timeout 0 are met (exit 0), and
    --until text that is not there is not (124), at once."""
    phux.new("once")
    phux.settle("once")
    for condition in (("--prompt",), ("--idle", "200"), ()):
        started = time.monotonic()
        res = phux("wait", "--timeout", "0", *condition, "once")
        assert res.code == 0, (condition, res.err)
        assert time.monotonic() - started < 8
    assert phux("wait", "--timeout", "0", "--until", "not-on-screen", "once").code == 124
    busy = phux.new("busy", "sh", "-c", "while :; do echo tick; sleep 0.05; done")
    assert phux("wait", "--until", "tick", "--timeout", "10", f"@{busy}").code == 0
    assert phux("wait", "--timeout", "0", "--idle", "300", f"@{busy}").code == 124
    assert phux("kill", "once").code == 0
    assert phux("kill", "busy").code == 0

"""The click front end in-process, over a fake client: parsing, printing, exit codes.

These pin what the CLI itself decides (argument grammar, tri-states, output
streams, exit-code mapping); the end-to-end tests run the real client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from phux.cli import actions, verbs
from phux.cli.main import cli, run_cli
from phux.client import errors
from phux.client import models as m
from phux.client.run_base import RunOutcome
from phux.client.selectors import Session
from phux.engine.screen_state import Cursor, ScreenState

SCREEN = ScreenState(
    schema_version=4,
    pane=4,
    cols=20,
    rows=2,
    cursor=Cursor(x=0, y=1, visible=True),
    lines=["$ true", "$"],
    scrollback=[],
    title="",
    wrapped=[],
    alternate=False,
)


class FakeStream:
    """Stands in for the client's WatchStream: iterable, closable, with met / timed_out."""

    def __init__(self, events: list[Any], until: str | None, timed_out: bool = False) -> None:
        self.events = events
        self.until = until
        self.met = False
        self.timed_out = timed_out

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        for event in self.events:
            yield event
            if self.until is not None and m.event_name(event) == self.until:
                self.met = True
                return


class FakeClient:
    """Records every call; answers from ``replies`` (an exception is raised)."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            assert "deadline" in kwargs, f"{name} called without a deadline"
            kwargs.pop("deadline")
            self.calls.append((name, args, kwargs))
            reply = self.replies.get(name)
            if isinstance(reply, BaseException):
                raise reply
            if name == "watch":
                events, timed_out = reply
                return FakeStream(events, kwargs["until_event"], timed_out)
            return reply

        return call


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient(
        {
            "snapshot_data": msgspec.to_builtins(SCREEN),
            "ls": [
                Session(name="zeta", window_count=1, attached_client_count=0, terminals=[3]),
                Session(name="alpha", window_count=2, attached_client_count=1, terminals=[1]),
            ],
            "run": RunOutcome(
                command="true", exit_code=0, output="ok", duration_ms=5, truncated=False
            ),
            "wait": m.WaitResult(met=True, checks=1, screen=SCREEN),
            "new": m.NewResult(session="s", terminal_id=9),
            "kill": [1, 2],
            "watch": ([], False),
        }
    )
    monkeypatch.setattr(actions, "open_client", lambda socket: client)

    def ensure_server(socket: object, deadline: object) -> str:
        client.calls.append(("ensure_server", (socket,), {}))
        return "/tmp/fake.sock"

    def kill_server(socket: object, deadline: object) -> bool:
        client.calls.append(("kill_server", (socket,), {}))
        return False

    import phux.client

    monkeypatch.setattr(phux.client, "ensure_server", ensure_server, raising=False)
    monkeypatch.setattr(phux.client, "kill_server", kill_server, raising=False)
    return client


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- snapshot


@pytest.mark.parametrize(
    ("args", "scrollback", "target"),
    [
        ([], None, None),
        (["work"], None, "work"),
        (["--scrollback"], 0, None),
        (["--scrollback", "work"], 0, "work"),
        (["--scrollback", "--json", "work"], 0, "work"),
        (["--scrollback", "5", "work"], 5, "work"),
        (["--scrollback=7"], 7, None),
        (["--scrollback", "0", "@3"], 0, "@3"),
        (["--scrollback", "--", "9"], 0, "9"),
    ],
)
def test_snapshot_scrollback_tristate(
    fake: FakeClient,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    scrollback: int | None,
    target: str | None,
) -> None:
    code, _, err = invoke(capsys, "snapshot", *args)
    assert code == 0, err
    assert fake.calls == [
        ("snapshot_data", (target,), {"scrollback": scrollback, "cells": False, "version": None})
    ]


def test_snapshot_json_and_box(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "snapshot", "--json", "--cells", "w")
    assert code == 0
    assert json.loads(out)["pane"] == 4
    assert out.count("\n") == 1
    assert fake.calls[0][2]["cells"] is True
    code, out, _ = invoke(capsys, "snapshot", "w")
    assert out.startswith("┌─ @4 20x2")


def test_options_may_follow_target_where_no_cmd_follows(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seed 001's own example: `phux snapshot build --json --scrollback 200`.
    code, out, err = invoke(capsys, "snapshot", "build", "--json", "--scrollback", "200")
    assert code == 0 and json.loads(out)["schema_version"], err
    assert fake.calls[-1][1:] == (
        ("build",),
        {"scrollback": 200, "cells": False, "version": None},
    )
    invoke(capsys, "wait", "work", "--until", "x", "--timeout", "1")
    assert fake.calls[-1][0] == "wait" and fake.calls[-1][1] == ("work",)


def test_an_option_word_after_cmd_is_refused_with_the_remedy(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = invoke(capsys, "run", "build", "cargo test", "--json")
    assert (code, out) == (2, "")
    doc = json.loads(err)  # --json was (mis)placed but asked: the error is JSON
    message = doc["error"]["message"]
    assert doc["exit_code"] == 2 and "'--json'" in message and "before TARGET" in message
    code, _, err = invoke(capsys, "send-keys", "w", "ls", "--timeout=3")
    assert code == 2 and "before TARGET" in err
    assert fake.calls == []


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.NoServer("no server running on /x"), 1),
        (errors.TargetNotFound("no session nope"), 1),
        (errors.SelectorSyntax("bad selector 'a:b:c'"), 1),
        (errors.TerminalGone("terminal @3 has exited"), 1),
        (errors.ServerRefused("refused"), 1),
        (errors.DeadlineExceeded("deadline exceeded"), 1),
    ],
)
def test_snapshot_errors_json(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], exc: errors.PhuxError, code: int
) -> None:
    fake.replies["snapshot_data"] = exc
    rc, out, err = invoke(capsys, "snapshot", "--json", "x")
    assert (rc, out) == (code, "")
    assert err.count("\n") == 1
    doc = json.loads(err)
    assert doc["error"] == {"code": exc.code, "message": exc.message}
    assert doc["exit_code"] == code and doc["schema_version"] == 1
    rc, out, err = invoke(capsys, "snapshot", "x")
    assert (rc, out) == (code, "")
    assert err.startswith("phux snapshot: ") and err.count("\n") == 1


# ---------------------------------------------------------------- ls


def test_ls(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "ls", "--json")
    assert code == 0
    assert json.loads(out) == {
        "schema_version": 1,
        "sessions": [
            {"name": "alpha", "windows": 2, "attached": True, "exited": False},
            {"name": "zeta", "windows": 1, "attached": False, "exited": False},
        ],
    }
    code, out, _ = invoke(capsys, "ls")
    assert out == "alpha: 2 windows (attached)\nzeta: 1 window\n"
    fake.replies["ls"] = errors.NoServer("no server running on /x")
    code, out, err = invoke(capsys, "ls")
    assert (code, out) == (1, "") and "no server" in err


# ---------------------------------------------------------------- send-keys / paste


def test_send_keys_takes_everything_after_target_literally(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = invoke(capsys, "send-keys", "--socket", "/s", "w", "-l", "--json", "Enter")
    assert (code, out) == (0, "")
    assert fake.calls == [("send_keys", ("w", ["-l", "--json", "Enter"]), {"literal": False})]
    invoke(capsys, "send-keys", "w", "--scrollback", "x")
    assert fake.calls[-1] == ("send_keys", ("w", ["--scrollback", "x"]), {"literal": False})
    invoke(capsys, "send-keys", "-l", "w", "Enter")
    assert fake.calls[-1] == ("send_keys", ("w", ["Enter"]), {"literal": True})
    invoke(capsys, "send-keys", "--", "w", "--timeout")
    assert fake.calls[-1] == ("send_keys", ("w", ["--timeout"]), {"literal": False})
    fake.calls.clear()
    code, _, err = invoke(capsys, "send-keys", "w")
    assert code == 2 and "KEYS" in err
    fake.replies["send_keys"] = errors.UnknownKey("unknown key C-")
    code, _, err = invoke(capsys, "send-keys", "w", "C-")
    assert code == 1 and "unknown key" in err


def test_paste_text_argument(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert invoke(capsys, "paste", "w", "a b\nc")[0] == 0
    assert fake.calls == [("paste", ("w", "a b\nc"), {})]


# ---------------------------------------------------------------- run


def run_result(code: int) -> RunOutcome:
    return RunOutcome(command="x", exit_code=code, output="out", duration_ms=1, truncated=False)


@pytest.mark.parametrize(
    ("child", "mirrored"), [(0, 0), (3, 3), (124, 124), (255, 255), (256, 255), (-1, 255)]
)
def test_run_mirrors_the_child(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], child: int, mirrored: int
) -> None:
    fake.replies["run"] = run_result(child)
    code, out, _ = invoke(capsys, "run", "--json", "w", "exit", str(child))
    assert code == mirrored
    assert json.loads(out)["exit_code"] == child
    assert fake.calls[0][1] == ("w", ["exit", str(child)])
    code, out, _ = invoke(capsys, "run", "w", "x")
    assert (code, out) == (mirrored, "out\n")


def test_run_passes_cmd_words_and_keeps_late_options_in_them(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = invoke(capsys, "run", "--timeout", "3", "w", "ls", "-l", "--color")
    assert (code, out) == (0, "ok\n")
    assert fake.calls == [("run", ("w", ["ls", "-l", "--color"]), {"timeout": 3.0, "force": False})]
    # After --, even the verb's own option names are part of CMD.
    code, out, _ = invoke(capsys, "run", "--timeout", "3", "--", "w", "echo", "--json")
    assert (code, out) == (0, "ok\n")
    assert fake.calls[-1] == ("run", ("w", ["echo", "--json"]), {"timeout": 3.0, "force": False})
    fake.calls.clear()
    invoke(capsys, "run", "--force", "w", "ls")
    assert fake.calls == [("run", ("w", ["ls"]), {"timeout": 30.0, "force": True})]


@pytest.mark.parametrize(
    ("error", "exit_code"),
    [
        (errors.PaneBusy("vim holds the pane", holder="vim", state="tui"), 3),
        (errors.IncompleteCommand("more input"), 4),
        (errors.PaneDied("died", status=137), 5),
    ],
)
def test_run_refusals_have_their_own_exit_codes(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], error: Exception, exit_code: int
) -> None:
    fake.replies["run"] = error
    code, out, err = invoke(capsys, "run", "--json", "w", "true")
    assert (code, out) == (exit_code, "")
    report = json.loads(err)
    assert report["exit_code"] == exit_code
    assert report["error"]["code"] == error.code  # type: ignore[attr-defined]


def test_run_timeout_is_125_without_json(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.replies["run"] = errors.RunTimedOut("sleep 9", 1000)
    code, out, err = invoke(capsys, "run", "--json", "--timeout", "1", "w", "sleep", "9")
    assert (code, out) == (125, "")
    assert json.loads(err)["exit_code"] == 125
    fake.replies["run"] = errors.DeadlineExceeded("deadline exceeded")
    assert invoke(capsys, "run", "w", "sleep", "9")[0] == 125
    fake.replies["run"] = errors.TargetNotFound("no session w")
    assert invoke(capsys, "run", "w", "true")[0] == 1


# ---------------------------------------------------------------- wait


def test_wait_met_and_timeout(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "wait", "--until", "done", "--timeout", "2", "w")
    assert (code, out) == (0, "")
    assert fake.calls[-1] == (
        "wait",
        ("w",),
        {
            "until": "done",
            "regex": None,
            "idle_ms": None,
            "timeout": 2.0,
            "prompt": False,
            "exit": False,
        },
    )
    fake.replies["wait"] = m.WaitResult(met=False, checks=3, screen=SCREEN)
    code, out, err = invoke(capsys, "wait", "--json", "--regex", "d.ne", "w")
    assert code == 124
    assert json.loads(out)["pane"] == 4  # the last screen is still printed
    assert json.loads(err)["exit_code"] == 124
    code, out, err = invoke(capsys, "wait", "--idle", "100")
    assert (code, out) == (124, "") and "timed out" in err
    code, out, err = invoke(capsys, "wait", "--prompt", "w")
    assert code == 124 and "idle prompt" in err
    assert fake.calls[-1][2]["prompt"] is True


def test_wait_exit_mirrors_the_status(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    fake.replies["wait"] = m.WaitResult(met=True, checks=1, screen=SCREEN, exit_code=42)
    code, out, _ = invoke(capsys, "wait", "--exit", "w")
    assert (code, out) == (42, "")
    assert fake.calls[-1][2]["exit"] is True
    code, _, _ = invoke(capsys, "wait", "--exit", "--prompt", "w")
    assert code == 2


def test_wait_until_and_regex_are_exclusive(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = invoke(capsys, "wait", "--until", "a", "--regex", "b", "w")
    assert code == 2 and fake.calls == []


# ---------------------------------------------------------------- watch


def test_watch_lines(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    events: list[m.WatchEvent] = [
        m.TitleChanged(terminal="@4", title="vim"),
        m.PaneClosed(terminal="@4", exit_status=0),
    ]
    fake.replies["watch"] = (events, False)
    code, out, _ = invoke(capsys, "watch", "--json", "w")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"event": "title_changed", "terminal": "@4", "title": "vim"},
        {"event": "pane_closed", "terminal": "@4", "exit_status": 0, "signal": None},
    ]
    code, out, _ = invoke(capsys, "watch", "--until", "pane_closed", "w")
    assert code == 0
    assert out.splitlines()[0] == "title_changed\t@4\ttitle=vim"
    assert fake.calls[-1][2] == {"until_event": "pane_closed", "timeout": None}
    fake.replies["watch"] = (events[:1], True)
    code, _, err = invoke(capsys, "watch", "--json", "--until", "bell", "--timeout", "1", "w")
    assert code == 124 and json.loads(err)["exit_code"] == 124
    fake.replies["watch"] = (events, False)  # the pane closed before the bell
    code, _, err = invoke(capsys, "watch", "--until", "bell", "w")
    assert code == 1 and "ended before" in err
    assert invoke(capsys, "watch", "--until", "nope", "w")[0] == 2


def test_watch_event_names_match_the_models() -> None:
    assert verbs.WATCH_EVENTS == m.WATCH_EVENT_NAMES


# ---------------------------------------------------------------- new


def test_new(fake: FakeClient, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    code, out, err = invoke(capsys, "new", "--json")
    assert (code, out) == (2, "")
    assert "-s" in json.loads(err)["error"]["message"]
    code, out, _ = invoke(capsys, "new", "--json", "-s", "s", "-c", str(tmp_path), "--", "top")
    assert code == 0
    assert json.loads(out) == {"session": "s", "terminal_id": 9}
    assert fake.calls[-1] == (
        "new",
        ("s",),
        {"cwd": str(tmp_path), "command": ["top"], "env": {}, "shell_integration": True},
    )
    code, out, _ = invoke(capsys, "new", "--json", "-s", "s", "--no-shell-integration")
    assert code == 0 and fake.calls[-1][2]["shell_integration"] is False
    code, out, _ = invoke(capsys, "new")
    assert code == 0 and "phux snapshot s" in out
    assert fake.calls[-1][2]["cwd"] == os.getcwd()
    fake.replies["new"] = errors.SessionExists("session s exists")
    code, out, err = invoke(capsys, "new", "--json", "-s", "s")
    assert (code, out) == (1, "") and json.loads(err)["error"]["code"] == "session_exists"


# ---------------------------------------------------------------- kill and the rest


def test_kill(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert invoke(capsys, "kill", "w")[0] == 0
    assert invoke(capsys, "kill", "--server")[0] == 0
    assert [c[0] for c in fake.calls] == ["kill", "kill_server"]
    assert invoke(capsys, "kill")[0] == 2
    assert invoke(capsys, "kill", "--server", "w")[0] == 2
    fake.replies["kill"] = errors.ServerRefused("refused")
    assert invoke(capsys, "kill", "w")[0] == 2
    fake.replies["kill"] = errors.TargetNotFound("no such pane")
    assert invoke(capsys, "kill", "w")[0] == 1


def test_rename_resize_signal(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert invoke(capsys, "rename", "a", "b")[0] == 0
    assert invoke(capsys, "resize", "w", "120x40")[0] == 0
    assert invoke(capsys, "signal", "w", "INT")[0] == 0
    assert fake.calls == [
        ("rename", ("a", "b"), {}),
        ("resize", ("w", 120, 40), {}),
        ("signal", ("w", "INT"), {}),
    ]
    for bad in ("120", "0x10", "10x1001", "axb"):
        assert invoke(capsys, "resize", "w", bad)[0] == 2


# ---------------------------------------------------------------- help


@pytest.mark.parametrize("verb", sorted(verbs_.name for verbs_ in verbs.VERBS))
def test_every_verb_has_helpful_help(capsys: pytest.CaptureFixture[str], verb: str) -> None:
    code, out, _ = invoke(capsys, verb, "-h")
    assert code == 0
    assert "Exit codes:" in out
    assert "--socket" in out
    if verb not in ("ls", "new", "rename", "new-window"):
        assert "name:N.M" in out and "#tag" in out and "@N" in out
    if verb in ("run", "send-keys", "tag", "untag"):
        assert "Options go before TARGET" in out
    elif verb in ("split", "new-window"):
        assert "Options may come anywhere before `--`" in out
    elif verb not in ("ls", "new"):
        assert "Options may come anywhere" in out


def test_group_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "--help")
    assert code == 0
    for verb in cli.commands:
        assert verb in out


def test_broken_pipe_is_quiet() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "phux", "snapshot", "--help"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=30,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == b""
    assert proc.returncode == 1  # click's convention for EPIPE


def test_a_bug_is_still_one_error_line(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHUX_DEBUG", raising=False)
    fake.replies["snapshot_data"] = ZeroDivisionError("oops")
    code, out, err = invoke(capsys, "snapshot", "--json", "w")
    assert (code, out) == (1, "")
    doc = json.loads(err)
    assert doc["error"] == {"code": "internal_error", "message": "ZeroDivisionError: oops"}
    monkeypatch.setenv("PHUX_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run_cli(["snapshot", "w"])


def test_new_attaches_only_on_a_terminal_and_without_d(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import phux.tui.attach

    attached: list[tuple[str, object]] = []

    def run_attach(target: str, *, socket: object = None, detach_key: object = None) -> int:
        attached.append((target, socket))
        return 7

    monkeypatch.setattr(phux.tui.attach, "run_attach", run_attach)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert invoke(capsys, "new", "-s", "s")[0] == 7
    assert attached == [("@9", "/tmp/fake.sock")]
    code, out, _ = invoke(capsys, "new", "-d", "-s", "s")
    assert code == 0 and "phux attach s" in out
    assert invoke(capsys, "new", "--json", "-s", "s")[0] == 0
    assert len(attached) == 1


def test_watch_until_choices_are_the_client_event_names() -> None:
    # The CLI keeps its own copy so that `--help` imports no client code.
    from phux.cli.verbs import WATCH_EVENTS
    from phux.client.models import WATCH_EVENT_NAMES

    assert WATCH_EVENTS == WATCH_EVENT_NAMES

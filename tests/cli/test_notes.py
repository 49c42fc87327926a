"""Notes, tasks and summaries against one real server: CLI, MCP, a second client,
--read-only, limits, concurrent edits, and a summary of a bash pane whose command
failed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.mcp_pipes import McpProcess, notification

from phux import __version__
from phux.client import Client
from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import TargetNotFound, TerminalGone
from phux.client.notes import REBASES, NotesConflict, append, edit_notes, get_notes
from phux.client.summary import pane_summary
from phux.wire.frames import Input, MetadataChanged, MetaSet, MetaSubscribe, Role, Subscribe

T = 20.0


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    # Short: the socket path must fit in sun_path.
    directory = Path(tempfile.mkdtemp(prefix="phux-nt-", dir="/tmp"))
    os.chmod(directory, 0o700)
    try:
        done = phux(directory, "new", "-s", "w", "cat")
        assert done.returncode == 0, done.stderr
        yield directory
    finally:
        phux(directory, "kill", "--server")
        shutil.rmtree(directory, ignore_errors=True)


def env_for(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHUX_")}
    env.update(
        PHUX_SOCKET=str(directory / "s"),
        XDG_STATE_HOME=str(directory / "state"),
        SHELL="/bin/sh",
    )
    return env


def phux(directory: Path, *args: str, stdin: str | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "phux", *args],
        env=env_for(directory),
        capture_output=True,
        text=True,
        input=stdin,
        timeout=T,
        check=False,
    )


def mcp_session(directory: Path, *args: str) -> McpProcess:
    mcp = McpProcess(*args, env=env_for(directory))
    mcp.ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    mcp.send(notification("notifications/initialized"))
    return mcp


def tool(mcp: McpProcess, name: str, arguments: dict[str, Any]) -> Any:
    reply = mcp.call(name, arguments)
    result = reply["result"]
    assert result["isError"] is False, result
    return json.loads(result["content"][0]["text"])


def notes_of(directory: Path, target: str) -> str:
    """The notes ``target`` names, read in-process (cheaper than a `phux note`)."""
    with Client(str(directory / "s")) as client:
        return get_notes(client, target, Deadline.after(T)).notes


def error_of(done: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    return doc


# ---------------------------------------------------------------- notes


def test_notes_round_trip_through_cli_and_mcp_and_reach_a_second_client(home: Path) -> None:
    socket = str(home / "s")
    watcher = Connection.open(socket, Deadline.after(T), "watcher")
    watcher.call(lambda rid: MetaSubscribe(request_id=rid, prefix="phux.notes"), Deadline.after(T))

    assert phux(home, "note", "w", "--set", "# plan\n- [ ] build").returncode == 0
    # The other client is told at once (the notes are the server's, not a client's).
    changed = watcher.receive(Deadline.after(T))
    assert isinstance(changed, MetadataChanged)
    assert (changed.key, changed.terminal) == ("phux.notes.w", None)
    assert changed.value == b"# plan\n- [ ] build"
    watcher.close()

    assert phux(home, "note", "w:0", "--append", "window line").returncode == 0
    assert phux(home, "note", "w:0.0", "--file", "-", stdin="pane text\n").returncode == 0
    with mcp_session(home) as mcp:
        got = tool(mcp, "phux_notes", {"target": "w"})
        assert got == {
            "scope": "session",
            "target": "w",
            "notes": "# plan\n- [ ] build",
            "tasks": [{"index": 1, "done": False, "text": "build", "line": 2}],
            "schema_version": 1,
        }
        assert tool(mcp, "phux_notes", {"target": "w:0"})["notes"] == "window line\n"
        pane = tool(mcp, "phux_notes", {"target": "w:0.0"})
        assert (pane["scope"], pane["target"], pane["notes"]) == ("pane", "@1", "pane text\n")
        # scope lifts a pane target to its window's notes.
        assert tool(mcp, "phux_notes", {"target": "@1", "scope": "window"})["target"] == "w:0"
        after = tool(mcp, "phux_set_notes", {"target": "w", "append": "- [ ] from mcp"})
        assert after["notes"] == "# plan\n- [ ] build\n- [ ] from mcp\n"
    done = phux(home, "note", "w")
    assert done.stdout == "# plan\n- [ ] build\n- [ ] from mcp\n"

    # The notes follow a renamed session; the old name has none left.
    with Client(str(home / "s")) as client:
        client.rename("w", "w2", Deadline.after(T))
        try:
            assert get_notes(client, "w2:0", Deadline.after(T)).notes == "window line\n"
            with pytest.raises(TargetNotFound):
                get_notes(client, "w", Deadline.after(T))
        finally:
            client.rename("w2", "w", Deadline.after(T))

    assert phux(home, "note", "w:0", "--clear").returncode == 0
    cleared = phux(home, "note", "w:0")
    assert cleared.returncode == 0 and cleared.stdout == ""
    assert "no notes" in cleared.stderr


def test_tasks_are_the_notes_checkbox_lines(home: Path) -> None:
    seed = "intro\n- [ ] first\n* [ ] second one"
    assert phux(home, "note", "w:0.0", "--scope", "window", "--set", seed).returncode == 0
    assert notes_of(home, "w:0") == seed
    assert phux(home, "task", "w:0", "add", "third").returncode == 0
    assert phux(home, "task", "w:0", "done", "2").returncode == 0
    assert phux(home, "task", "w:0", "undo", "2").returncode == 0
    done = phux(home, "task", "w:0", "rm", "1")
    assert done.stdout == "  1 [ ] second one\n  2 [ ] third\n"
    listed = json.loads(phux(home, "tasks", "w:0", "--open", "--json").stdout)
    assert listed["tasks"] == [
        {"index": 1, "done": False, "text": "second one", "line": 2},
        {"index": 2, "done": False, "text": "third", "line": 3},
    ]

    missing = phux(home, "task", "--json", "w:0", "done", "9")
    assert missing.returncode == 1
    assert error_of(missing)["error"]["code"] == "task_not_found"

    with mcp_session(home) as mcp:
        out = tool(mcp, "phux_update_task", {"target": "w:0", "action": "done", "n": 2})
        assert [t["done"] for t in out["tasks"]] == [False, True]
        out = tool(mcp, "phux_update_task", {"target": "w:0", "action": "add", "text": "more"})
        assert out["tasks"][-1] == {"index": 3, "done": False, "text": "more", "line": 4}
        assert out["tasks"][0]["text"] == "second one"
        opened = tool(mcp, "phux_tasks", {"target": "w:0", "open": True})["tasks"]
        assert [t["text"] for t in opened] == ["second one", "more"]
        bad = mcp.call("phux_update_task", {"target": "w:0", "action": "rm"})["result"]
        assert bad["isError"] is True and "needs n" in bad["content"][0]["text"]
    assert notes_of(home, "w:0") == "intro\n* [ ] second one\n- [x] third\n- [ ] more\n"


def test_read_only_mcp_refuses_note_writes(home: Path) -> None:
    with mcp_session(home, "--read-only") as mcp:
        names = {t["name"] for t in mcp.ask(1, "tools/list")["result"]["tools"]}
        assert {"phux_notes", "phux_tasks", "phux_summary"} <= names
        assert not names & {"phux_set_notes", "phux_update_task"}
        for name, args in (
            ("phux_set_notes", {"target": "w", "notes": "x"}),
            ("phux_update_task", {"target": "w", "action": "add", "text": "x"}),
        ):
            reply = mcp.call(name, args)
            refused = reply.get("error") or reply["result"]
            assert "error" in reply or refused["isError"] is True, reply
    assert "x" not in notes_of(home, "w")


def test_notes_limit_is_the_servers_metadata_limit(home: Path) -> None:
    limit = 64 * 1024
    assert phux(home, "note", "w:0", "--set", "k" * limit).returncode == 0
    over = phux(home, "note", "--json", "w:0", "--append", "more")
    assert over.returncode == 1
    err = error_of(over)
    assert err["error"]["code"] == "too_large" and str(limit) in err["error"]["message"]
    assert notes_of(home, "w:0") == "k" * limit  # unchanged
    # Text only: a file that is not UTF-8 is refused before anything is sent.
    blob = home / "blob"
    blob.write_bytes(b"\xff\xfe")
    assert phux(home, "note", "w", "--file", str(blob)).returncode == 1
    # A name with no session and no notes is not created by a write.
    assert phux(home, "note", "nosuch", "--set", "x").returncode == 1

    # A pane's notes end with it: read-only once it exited, as all its metadata.
    with Client(str(home / "s")) as client:
        made = client.new("gone", command=["cat"], deadline=Deadline.after(T))
        pane = f"@{made.terminal_id}"
        edit_notes(client, pane, lambda _: "kept", Deadline.after(T))
        client.kill(pane, deadline=Deadline.after(T))
        assert get_notes(client, pane, Deadline.after(T)).notes == "kept"
        with pytest.raises(TerminalGone, match="read-only"):
            edit_notes(client, pane, lambda _: "x", Deadline.after(T))


def test_concurrent_appends_are_all_kept(home: Path) -> None:
    socket = str(home / "s")
    writers, each = 4, 8
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            with Client(socket) as client:
                for j in range(each):
                    line = f"w{i}-{j}"
                    edit_notes(
                        client,
                        "w:0.0",
                        lambda old, line=line: append(old, line),  # type: ignore[misc]
                        Deadline.after(T),
                    )
        except BaseException as exc:  # reported below
            errors.append(exc)

    with Client(socket) as client:
        edit_notes(client, "w:0.0", lambda _: "", Deadline.after(T))
    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(T)
    assert not errors
    with Client(socket) as client:
        text = get_notes(client, "w:0.0", Deadline.after(T)).notes
    assert sorted(text.split()) == sorted(f"w{i}-{j}" for i in range(writers) for j in range(each))


def test_an_edit_replaced_by_a_client_without_the_lock_is_made_again(home: Path) -> None:
    """A client on another machine does not share the lock: its write between our
    read and our write is seen on the key's changes, and our edit is redone on it."""
    socket = str(home / "s")
    other = Connection.open(socket, Deadline.after(T), "elsewhere")
    seen: list[str] = []

    def change(old: str) -> str:
        seen.append(old)
        if len(seen) == 1:  # the other machine appends meanwhile, without the lock
            value = (old + "theirs\n").encode()
            other.call(
                lambda rid: MetaSet(request_id=rid, key="phux.notes.w", value=value),
                Deadline.after(T),
            )
        return append(old, "ours")

    try:
        with Client(socket) as client:
            edit_notes(client, "w", lambda _: "base\n", Deadline.after(T))
            after = edit_notes(client, "w", change, Deadline.after(T)).notes
            assert get_notes(client, "w", Deadline.after(T)).notes == after
    finally:
        other.close()
    assert seen == ["base\n", "base\ntheirs\n"]
    assert after == "base\ntheirs\nours\n"


def test_an_edit_that_is_always_replaced_gives_up_saying_so(home: Path) -> None:
    socket = str(home / "s")
    other = Connection.open(socket, Deadline.after(T), "elsewhere")
    tries: list[str] = []

    def change(old: str) -> str:
        tries.append(old)
        value = f"theirs {len(tries)}".encode()
        other.call(
            lambda rid: MetaSet(request_id=rid, key="phux.notes.w", value=value),
            Deadline.after(T),
        )
        return "ours"

    try:
        with Client(socket) as client, pytest.raises(NotesConflict, match="8 edits"):
            edit_notes(client, "w", change, Deadline.after(T))
    finally:
        other.close()
    assert len(tries) == REBASES == 8


# ---------------------------------------------------------------- summary


def test_summary_of_a_bash_pane_with_a_failed_command(home: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    with Client(str(home / "s")) as client:
        made = client.new(
            "b", command=["bash", "--norc", "--noprofile"], deadline=Deadline.after(T)
        )
        pane = f"@{made.terminal_id}"
        assert client.run("b", "echo ok", timeout=T, deadline=Deadline.after(T)).exit_code == 0
        failed = client.run(
            "b", "printf 'line1\\nline2\\nline3\\n'; false", timeout=T, deadline=Deadline.after(T)
        )
        assert failed.exit_code == 1
        edit_notes(client, "b:0.0", lambda _: "pane note\n- [ ] look at line2", Deadline.after(T))
        edit_notes(client, "b", lambda _: "- [ ] session task\n", Deadline.after(T))
        # The commands' times come with the server's checkpoint, which its replica
        # writes once it has caught up: wait for it, as the history tests do.
        limit = Deadline.after(T)
        while any(c.duration_ms is None for c in client.history(pane, deadline=limit).commands):
            limit.remaining()  # raises once the deadline passed
            time.sleep(0.05)

    done = phux(home, "summary", "b", "--json", "--tail", "2")
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)
    assert (s["pane"], s["session"], s["window"], s["index"]) == (pane, "b", 0, 0)
    assert (s["program"], s["state"], s["alive"]) == ("bash", "prompt", True)
    assert [(c["command"], c["exit_code"]) for c in s["commands"]] == [
        ("echo ok", 0),
        ("printf 'line1\\nline2\\nline3\\n'; false", 1),
    ]
    assert all(c["duration_ms"] is not None and not c["running"] for c in s["commands"]), s[
        "commands"
    ]
    assert s["last_failed"]["exit_code"] == 1
    assert s["last_failed"]["output_tail"] == ["line2", "line3"]
    assert s["last_failed"]["truncated"] is True  # --tail 2 of 3 lines
    assert s["screen_tail"][-2:][0] == "line3"
    assert s["cwd"] and s["state_for_ms"] is not None and s["state_for_ms"] >= 0
    assert s["attached"] is False
    assert s["last_input"]["client"] == f"phux/{__version__}"  # the run above
    assert s["last_input"]["person"] is False
    assert s["notes"] == "pane note\n- [ ] look at line2"
    assert [(t["scope"], t["text"]) for t in s["open_tasks"]] == [
        ("session", "session task"),
        ("pane", "look at line2"),
    ]
    # A person attaches (a primary subscriber) and types: the summary says so.
    tid = int(pane[1:])
    person = Connection.open(str(home / "s"), Deadline.after(T), "phux-attach")
    try:
        person.submit(lambda rid: Subscribe(request_id=rid, terminal=tid, role=Role.PRIMARY))
        person.call(
            lambda rid: Input(request_id=rid, terminal=tid, data=b"\x15"), Deadline.after(T)
        )
        with Client(str(home / "s")) as client:
            seen = pane_summary(client, pane, deadline=Deadline.after(T))
        assert seen.attached is True
        assert seen.last_input is not None and seen.last_input.person is True
        assert seen.last_input.client == f"phux-attach/{__version__}"
    finally:
        person.close()

    text = phux(home, "summary", "b").stdout
    assert "last failed (exit 1)" in text and "| line3" in text and "open tasks:" in text

    with mcp_session(home) as mcp:
        got = tool(mcp, "phux_summary", {"target": pane, "last": 1})
    assert [c["exit_code"] for c in got["commands"]] == [1]
    assert got["last_failed"]["output_tail"] == ["line1", "line2", "line3"]

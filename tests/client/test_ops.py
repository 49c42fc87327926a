"""Session verbs and bad input against a real server."""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec
import pytest

from phux.client import (
    Client,
    Deadline,
    InvalidArgument,
    InvalidName,
    NoServer,
    SelectorSyntax,
    SessionExists,
    TargetNotFound,
    TerminalGone,
    UnknownKey,
)
from phux.client.models import SessionList, to_json

from .conftest import BASH, SH, SHELL_ENV, new_shell, short_tmpdir, unique


def test_ls_without_a_server_never_starts_one() -> None:
    directory = short_tmpdir()
    path = directory / "s"
    with pytest.raises(NoServer) as info, Client(path) as c:
        c.ls(Deadline.after(5))
    assert info.value.exit_code == 1
    assert not path.exists()
    directory.rmdir()


def test_new_ls_rename_kill(client: Client) -> None:
    a = unique("a")
    made = client.new(a, command=SH, cwd="/tmp", deadline=Deadline.after(5))
    assert made.session == a and made.terminal_id > 0
    assert msgspec.json.decode(to_json(made)) == {"session": a, "terminal_id": made.terminal_id}
    with pytest.raises(SessionExists) as info:
        client.new(a, command=SH, deadline=Deadline.after(5))
    assert info.value.exit_code == 1
    with pytest.raises(InvalidName):
        client.new("bad:name", command=SH, deadline=Deadline.after(5))
    sessions = {s.name: s for s in client.ls(Deadline.after(5))}
    assert sessions[a].window_count == 1
    assert sessions[a].attached_client_count == 0
    assert sessions[a].terminals == [made.terminal_id]
    listing = msgspec.json.decode(to_json(SessionList.from_infos(sessions.values())))
    assert listing["schema_version"] == 1
    assert {"name": a, "windows": 1, "attached": False, "exited": False} in listing["sessions"]
    infos, panes = client.ls_panes(Deadline.after(5))
    with_panes = msgspec.json.decode(to_json(SessionList.from_infos(infos, panes)))
    row = next(r for r in with_panes["sessions"] if r["name"] == a)
    assert [(p["id"], p["state"]) for p in row["panes"]] == [(f"@{made.terminal_id}", "prompt")]
    assert row["panes"][0]["program"] in ("sh", "dash")
    names = [row["name"] for row in listing["sessions"]]
    assert names == sorted(names)

    b = unique("b")
    client.rename(a, b, Deadline.after(5))
    assert client.resolve(b, Deadline.after(5)).terminal == made.terminal_id
    with pytest.raises(TargetNotFound):
        client.resolve(a, Deadline.after(5))
    with pytest.raises(TargetNotFound):
        client.rename(a, unique(), Deadline.after(5))

    assert client.kill(b, Deadline.after(5)) == [made.terminal_id]
    # The closed terminal is still addressable by name and by id while retained;
    # killing it again is the same answer either way.
    for again in (b, f"@{made.terminal_id}"):
        with pytest.raises(TerminalGone) as gone:
            client.kill(again, Deadline.after(5))
        assert gone.value.exit_code == 1


def test_auto_numeric_names(server: Path) -> None:
    with Client(server, env={}) as c:
        taken = {s.name for s in c.ls(Deadline.after(5))}
        first = c.new(None, command=SH, deadline=Deadline.after(5))
        second = c.new(None, command=SH, deadline=Deadline.after(5))
        assert first.session.isdigit() and second.session.isdigit()
        assert first.session not in taken and first.session != second.session
        expected = 0
        while str(expected) in taken:
            expected += 1
        assert first.session == str(expected)
        c.kill(first.session, Deadline.after(5))
        c.kill(second.session, Deadline.after(5))


def test_ten_concurrent_new_same_name(server: Path) -> None:
    name = unique("race")
    outcomes: list[str] = []

    def make() -> None:
        with Client(server, env={}) as c:
            try:
                c.new(name, command=SH, deadline=Deadline.after(10))
                outcomes.append("made")
            except SessionExists:
                outcomes.append("exists")

    threads = [threading.Thread(target=make) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(outcomes) == ["exists"] * 9 + ["made"]
    with Client(server, env={}) as c:
        c.kill(name, Deadline.after(5))


def test_kill_window_and_session_atomically(client: Client) -> None:
    name = unique("k")
    made = client.new(name, command=SH, deadline=Deadline.after(5))
    assert client.kill(f"{name}:0", Deadline.after(5)) == [made.terminal_id]
    # Listed as exited while the server keeps its panes (issue 23 item 10).
    assert {s.name: s.exited for s in client.ls(Deadline.after(5))}[name] is True


def test_resize_and_signal(client: Client) -> None:
    name = new_shell(client)
    client.resize(name, 120, 40, Deadline.after(5))
    pane = client.resolve(name, Deadline.after(5))
    assert (pane.cols, pane.rows) == (120, 40)
    state = client.snapshot(name, deadline=Deadline.after(5))
    assert (state.cols, state.rows) == (120, 40)
    with pytest.raises(InvalidArgument):
        client.resize(name, 0, 10, Deadline.after(5))
    with pytest.raises(InvalidArgument):
        client.signal(name, "SIGNOPE", Deadline.after(5))
    client.send_keys(name, ["sleep 30; echo after-sleep", "Enter"], Deadline.after(5))
    assert client.wait(name, idle_ms=100, timeout=10, deadline=Deadline.after(15)).met
    client.signal(name, "INT", Deadline.after(5))
    result = client.run(name, "echo alive", timeout=10, deadline=Deadline.after(15))
    assert (result.exit_code, result.output) == (0, "alive")


def test_snapshot_scrollback_and_cells(client: Client) -> None:
    name = new_shell(client)
    client.run(
        name,
        "seq 1 100; printf '\\033[1;31mRED\\033[0m\\n'",
        timeout=10,
        deadline=Deadline.after(15),
    )
    plain = client.snapshot(name, deadline=Deadline.after(5))
    assert plain.scrollback == [] and plain.cells is None and plain.styles is None
    assert b'"cells"' not in to_json(plain)
    everything = client.snapshot(name, scrollback=0, cells=True, deadline=Deadline.after(5))
    assert "1" in everything.scrollback
    assert everything.styles is not None
    assert any(run.style.bold for run in everything.styles)
    old = client.snapshot(name, cells=True, version=3, deadline=Deadline.after(5))
    assert old.schema_version == 3 and old.cells is not None and old.styles is None
    assert any(cell.style.bold for cell in old.cells)
    some = client.snapshot(name, scrollback=5, deadline=Deadline.after(5))
    assert len(some.scrollback) == 5
    with pytest.raises(InvalidArgument):
        client.snapshot(name, scrollback=-1, deadline=Deadline.after(5))


def test_bad_selectors_and_keys(client: Client) -> None:
    for bad in ["", "@x", "a:", "a:1.b", "#"]:
        with pytest.raises(SelectorSyntax):
            client.snapshot(bad, deadline=Deadline.after(5))
    with pytest.raises(TargetNotFound) as info:
        client.snapshot("no-such-session", deadline=Deadline.after(5))
    assert "no session named" in info.value.message
    name = new_shell(client)
    for bad_key in ["C-", "F13", "Foo-x"]:
        with pytest.raises(UnknownKey):
            client.send_keys(name, ["ok", bad_key], Deadline.after(5))


def test_closed_terminal(client: Client) -> None:
    name = unique("c")
    made = client.new(
        name, command=["sh", "-c", "echo final-words; exit 7"], deadline=Deadline.after(5)
    )
    target = f"@{made.terminal_id}"
    # Wait for it to end: watch its pane_closed.
    stream = client.watch(
        target, until_event="pane_closed", timeout=10, deadline=Deadline.after(15)
    )
    events = list(stream)
    assert events and events[-1].exit_status == 7  # type: ignore[union-attr]
    state = client.snapshot(target, deadline=Deadline.after(5))
    assert "final-words" in state.lines[0]
    with pytest.raises(TerminalGone):
        client.send_keys(target, ["x"], Deadline.after(5))
    with pytest.raises(TerminalGone):
        client.run(target, "true", timeout=5, deadline=Deadline.after(5))
    # Its session name still reaches it while the server retains it (spec/L3.md §1).
    assert "final-words" in client.snapshot(name, deadline=Deadline.after(5)).lines[0]
    assert {s.name: s.exited for s in client.ls(Deadline.after(5))}[name] is True


def test_one_mebibyte_paste(client: Client) -> None:
    name = new_shell(client)
    line = "abcdefghij" * 9 + "abcdefgh\n"  # 99 bytes
    count = (1 << 20) // len(line) + 1
    text = line * count
    client.send_keys(
        name, ["stty -echo; cat > /tmp/phux-paste-$$; stty echo", "Enter"], Deadline.after(5)
    )
    assert client.wait(name, idle_ms=100, timeout=10, deadline=Deadline.after(15)).met
    client.paste(name, text, Deadline.after(30))
    client.send_keys(name, ["C-d"], Deadline.after(5))
    # run refuses while cat (echo off) still holds the pane: wait for the shell.
    assert client.wait(name, prompt=True, timeout=20, deadline=Deadline.after(25)).met
    result = client.run(
        name,
        "wc -c < /tmp/phux-paste-$$; rm -f /tmp/phux-paste-$$",
        timeout=30,
        deadline=Deadline.after(35),
    )
    assert result.output.strip() == str(len(text))


def test_bracketed_paste_when_enabled(client: Client) -> None:
    name = new_shell(client, BASH)
    # A program that turns bracketed paste on and dumps what it reads.
    client.send_keys(
        name,
        ["printf '\\033[?2004h'; stty raw -echo; head -c 20 | od -An -c; stty sane", "Enter"],
        Deadline.after(5),
    )
    assert client.wait(name, idle_ms=150, timeout=10, deadline=Deadline.after(15)).met
    client.paste(name, "hi\r", Deadline.after(5))
    client.send_keys(name, ["x" * 5], Deadline.after(5))
    waited = client.wait(name, regex=r"2   0   0   ~", timeout=10, deadline=Deadline.after(15))
    assert waited.met, waited.screen.lines
    assert any("h   i" in line for line in waited.screen.lines)


def test_env_and_cwd(client: Client) -> None:
    name = unique("e")
    client.new(
        name, command=BASH, cwd="/usr", env={**SHELL_ENV, "FOO": "bar"}, deadline=Deadline.after(5)
    )
    result = client.run(
        name, "echo $FOO; pwd; echo $PHUX_TERMINAL", timeout=15, deadline=Deadline.after(20)
    )
    pane = client.resolve(name, Deadline.after(5))
    assert result.output == f"bar\n/usr\n{pane.terminal}"


def test_tag_and_window_selectors_end_to_end(client: Client) -> None:
    from phux.client.connection import Connection
    from phux.wire.frames import MetaSet

    name = unique("t")
    first = client.new(name, command=SH, deadline=Deadline.after(5))
    tag = unique("tag")
    deadline = Deadline.after(10)
    with Connection.open(client.socket_path, deadline) as conn:
        for key, value in [("phux.tags", f"x,{tag}"), ("phux.window_name", "editor")]:
            conn.call(
                lambda rid, k=key, v=value: MetaSet(
                    request_id=rid, key=k, value=v.encode(), terminal=first.terminal_id
                ),
                deadline,
            )
    assert client.resolve(f"#{tag}", deadline).terminal == first.terminal_id
    assert client.resolve(f"{name}:editor", deadline).terminal == first.terminal_id
    assert client.resolve(f"{name}:0.0", deadline).terminal == first.terminal_id
    with Client(client.socket_path, env={"PHUX_TERMINAL": str(first.terminal_id)}) as inside:
        assert inside.resolve(".", deadline).terminal == first.terminal_id
        later = client.new(unique("t"), command=SH, deadline=Deadline.after(5))
        assert inside.kill(".", deadline) == [first.terminal_id]
        # $PHUX_TERMINAL names a closed pane now: `.` is the most recently active
        # session's pane, which the listing of that one terminal cannot say.
        assert inside.resolve(".", deadline).terminal == later.terminal_id

"""``phux record`` and ``phux new --record`` against a real server.

A recording is checked three ways: its lines against the asciicast v2 format
(strictly, by hand), its output and resize events replayed into a fresh
engine against ``phux snapshot`` of the pane, and ``asciinema cat`` (the
asciinema package from PyPI) printing it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from phux.engine import Terminal
from server.harness import interruptible

from .test_e2e import Phux, phux  # noqa: F401  (the module-scoped server fixture)

DEADLINE = 20.0


def read_cast(path: Path) -> tuple[dict[str, Any], list[list[Any]]]:
    """Parse ``path`` and hold it to the asciicast v2 format."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines, "empty recording"
    header = json.loads(lines[0])
    assert isinstance(header, dict)
    assert header["version"] == 2
    assert isinstance(header["width"], int) and header["width"] > 0
    assert isinstance(header["height"], int) and header["height"] > 0
    assert isinstance(header["timestamp"], int)
    assert isinstance(header.get("title", ""), str)
    env = header["env"]
    assert env["TERM"] == "xterm-256color"
    assert set(env) <= {"TERM", "SHELL"}
    events = [json.loads(line) for line in lines[1:]]
    last = 0.0
    for event in events:
        assert isinstance(event, list) and len(event) == 3, event
        t, code, data = event
        assert isinstance(t, int | float) and t >= last, event
        last = t
        assert code in ("o", "r", "i"), event
        assert isinstance(data, str)
        if code == "r":
            cols, _, rows = data.partition("x")
            assert cols.isdigit() and rows.isdigit(), event
    return header, events


def replay(header: dict[str, Any], events: list[list[Any]]) -> Terminal:
    term = Terminal(header["width"], header["height"])
    for _, code, data in events:
        if code == "o":
            term.feed(data.encode("utf-8"))
        elif code == "r":
            cols, _, rows = data.partition("x")
            term.resize(int(cols), int(rows))
    return term


def wait_for(predicate: Any, what: str) -> None:
    limit = time.monotonic() + DEADLINE
    while not predicate():
        assert time.monotonic() < limit, f"timed out waiting for {what}"
        time.sleep(0.02)


def replays_to_the_screen(phux: Phux, pane: str, cast: Path) -> dict[str, Any]:  # noqa: F811
    """The pane's screen (``snapshot --json``), once the recording in ``cast`` replays
    to it: the recorder follows asynchronously."""
    snap = phux("snapshot", "--json", pane)
    assert snap.code == 0, snap.err
    screen: dict[str, Any] = snap.json()

    def caught_up() -> bool:
        mine = replay(*read_cast(cast)).project_data()
        return bool(mine["lines"] == screen["lines"] and mine["cursor"] == screen["cursor"])

    wait_for(caught_up, "the recording to replay to the pane's screen")
    return screen


def start_recorder(phux: Phux, *args: str) -> subprocess.Popen[str]:  # noqa: F811
    return subprocess.Popen(
        [sys.executable, "-m", "phux", "record", *args],
        env=phux.env,
        cwd=phux.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )


def test_record_replays_to_the_panes_screen(phux: Phux) -> None:  # noqa: F811
    phux.new("rec")
    phux.settle("rec")
    res = phux("send-keys", "rec", "printf 'before \\033[1mbold\\033[0m\\n'", "Enter")
    assert res.code == 0, res.err
    assert phux("wait", "--until", "before bold", "--timeout", "10", "rec").code == 0
    cast = phux.root / "rec.cast"
    recorder = start_recorder(phux, "--since", "rec", str(cast))
    try:
        wait_for(lambda: cast.exists() and cast.read_text().count("\n") >= 2, "the header")
        keys = "printf 'live \\033[32mgreen\\033[0m w\\303\\266rld\\n'"
        assert phux("send-keys", "rec", keys, "Enter").code == 0
        assert phux("wait", "--until", "live green", "--timeout", "10", "rec").code == 0
        assert phux("resize", "rec", "50x15").code == 0
        assert phux("send-keys", "rec", "seq 1 30", "Enter").code == 0
        assert phux("wait", "--regex", "^30$", "--timeout", "10", "rec").code == 0
        assert phux("wait", "--regex", r"\$ ?$", "--timeout", "10", "rec").code == 0
        screen = replays_to_the_screen(phux, "rec", cast)
    finally:
        recorder.send_signal(signal.SIGINT)
        out, err = recorder.communicate(timeout=DEADLINE)
    assert recorder.returncode == 0, err
    assert "interrupted" in err
    assert out == ""
    header, events = read_cast(cast)
    assert header["title"] == "rec:0.0"
    assert (header["width"], header["height"]) == (80, 24)
    assert ["r", "50x15"] in [[code, data] for _, code, data in events]
    assert any(t > 0 for t, _, _ in events), "live events carry their time"
    at_zero = "".join(data for t, code, data in events if t == 0 and code == "o")
    assert "before" in at_zero, "--since starts with what the pane printed before"

    term = replay(header, events)
    mine = term.project_data()
    assert (mine["cols"], mine["rows"]) == (50, 15)
    assert mine["lines"] == screen["lines"]
    assert mine["cursor"] == screen["cursor"]

    played = subprocess.run(
        [sys.executable, "-m", "asciinema", "cat", str(cast)],
        capture_output=True,
        timeout=DEADLINE,
    )
    assert played.returncode == 0, played.stderr
    text = played.stdout.decode("utf-8")
    assert text == "".join(data for _, code, data in events if code == "o")
    assert "w\u00f6rld" in text
    assert phux("kill", "rec").code == 0


def test_record_input_holds_what_every_client_typed(phux: Phux) -> None:  # noqa: F811
    phux.new("reci")
    phux.settle("reci")
    cast = phux.root / "reci.cast"
    recorder = start_recorder(phux, "--input", "--since", "reci", str(cast))
    try:
        wait_for(lambda: cast.exists() and cast.read_text().count("\n") >= 1, "the header")
        assert phux("send-keys", "reci", "echo typed-h\u00e9re", "Enter").code == 0
        assert phux("wait", "--regex", "^typed-h\u00e9re$", "--timeout", "10", "reci").code == 0
        ran = phux("run", "reci", "echo via-run")
        assert ran.code == 0, ran.err
        assert ran.out == "via-run\n"
        screen = replays_to_the_screen(phux, "reci", cast)
    finally:
        recorder.send_signal(signal.SIGINT)
        out, err = recorder.communicate(timeout=DEADLINE)
    assert recorder.returncode == 0, err
    assert out == ""
    header, events = read_cast(cast)
    typed = "".join(data for _, code, data in events if code == "i")
    # Both clients' input, whole and in order; nothing else (run types its command and Enter).
    assert typed.startswith("echo typed-h\u00e9re\r")
    assert "echo via-run\r" in typed.removeprefix("echo typed-h\u00e9re\r")
    # In order with the output: the typed line is written before the shell prints its result.
    codes = [(code, data) for _, code, data in events]
    first_input = next(i for i, (c, d) in enumerate(codes) if c == "i")
    result = next(i for i, (c, d) in enumerate(codes) if c == "o" and "typed-h\u00e9re\r\n" in d)
    assert first_input < result
    # The output alone still replays to the pane's screen, and asciinema plays the file.
    mine = replay(header, events).project_data()
    assert mine["lines"] == screen["lines"]
    played = subprocess.run(
        [sys.executable, "-m", "asciinema", "cat", str(cast)],
        capture_output=True,
        timeout=DEADLINE,
    )
    assert played.returncode == 0, played.stderr
    assert played.stdout.decode("utf-8") == "".join(data for _, code, data in events if code == "o")
    assert phux("kill", "reci").code == 0


def test_record_without_since_starts_now_and_ends_with_the_pane(phux: Phux) -> None:  # noqa: F811
    phux.new("recx", "sh", "-c", "echo old; read x; echo new-$x; sleep 0.2; exit 3")
    assert phux("wait", "--until", "old", "--timeout", "10", "recx").code == 0
    recorder = start_recorder(phux, "recx", "-")
    try:
        # Wait for the header on stdout before typing, so "new" is live output.
        assert recorder.stdout is not None
        header_line = recorder.stdout.readline()
        assert phux("send-keys", "recx", "x", "Enter").code == 0
        out, err = recorder.communicate(timeout=DEADLINE)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    assert recorder.returncode == 0, err
    assert "the pane exited" in err
    path = phux.root / "recx.cast"
    path.write_text(header_line + out, encoding="utf-8")
    _, events = read_cast(path)
    text = "".join(data for _, code, data in events if code == "o")
    assert "new-x" in text
    assert "old" not in text


def test_record_since_with_timeout_holds_earlier_output(phux: Phux) -> None:  # noqa: F811
    phux.new("recd", "sh", "-c", "echo printed-before; read x")
    assert phux("wait", "--until", "printed-before", "--timeout", "10", "recd").code == 0
    path = phux.root / "recd.cast"
    res = phux("record", "--since", "--timeout", "0.5", "recd", str(path))
    assert res.code == 0, res.err
    assert "--timeout passed" in res.err
    _, events = read_cast(path)
    assert [t for t, _, _ in events] == [0.0] * len(events)
    assert "printed-before" in "".join(data for _, _, data in events)
    assert phux("kill", "recd").code == 0


def test_a_recording_never_carries_the_panes_key(phux: Phux) -> None:  # noqa: F811
    # The key signs the shell integration's marks (spec/shell-integration.md): a
    # recording holds a placeholder, so `cat` of it in a pane forges nothing.
    from phux.client.client import Client
    from phux.client.deadline import Deadline
    from phux.signed_marks import pane_key

    phux.new("reck", "bash")
    assert phux("run", "--timeout", "15", "reck", "echo one").code == 0
    client = Client(str(phux.socket))
    try:
        key = pane_key(client.resolve("reck", Deadline.after(10)).metadata)
    finally:
        client.close()
    assert len(key) == 32
    path = phux.root / "reck.cast"
    recorder = start_recorder(phux, "--since", "reck", str(path))
    try:
        wait_for(lambda: path.exists() and path.read_text().count("\n") >= 2, "the header")
        assert phux("run", "--timeout", "15", "reck", "echo two; false").code == 1
        # (The recorder follows on its own: the run's marks reach it a moment later.)
        wait_for(lambda: "phux_k=" + "x" * 32 in path.read_text(), "the live marks")
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.communicate(timeout=DEADLINE)
    text = path.read_text()
    assert key not in text
    assert "phux_k=" + "x" * 32 in text  # the live marks, with the placeholder
    # Played back into the pane, its marks are output like any other.
    res = phux("run", "--json", "--timeout", "15", "reck", f"cat {path}; echo TAIL; false")
    assert res.code == 1, res.err
    assert res.json()["output"].endswith("TAIL")
    assert phux("kill", "reck").code == 0


def test_record_default_file_name(phux: Phux) -> None:  # noqa: F811
    phux.new("recf", "sh", "-c", "echo x; read x")
    res = phux("record", "--timeout", "0.2", "recf")
    assert res.code == 0, res.err
    made = sorted(phux.root.glob("recf-*.cast"))
    assert len(made) == 1, made
    assert made[0].name in res.err
    _, events = read_cast(made[0])
    assert events == [], "without --since only what comes next"
    assert phux("kill", "recf").code == 0


def test_record_unknown_target_fails(phux: Phux) -> None:  # noqa: F811
    res = phux("record", "--timeout", "1", "no-such-session", "-")
    assert res.code == 1
    assert res.out == ""
    assert "no-such-session" in res.err


@pytest.mark.parametrize("flag", ["--record"])
def test_new_record_starts_a_background_recorder(phux: Phux, flag: str) -> None:  # noqa: F811
    path = phux.root / "new.cast"
    res = phux("new", "-d", "-s", "recn", flag, str(path), "--", "sh", "-c", "read x; echo got-$x")
    assert res.code == 0, res.err
    wait_for(lambda: path.exists() and path.read_text().count("\n") >= 1, "the header")
    assert phux("send-keys", "recn", "y", "Enter").code == 0
    # The recorder ends by itself when the pane exits; its last event is the echo.
    wait_for(lambda: "got-y" in path.read_text(), "the recorder to see the output")
    _, events = read_cast(path)
    assert "got-y" in "".join(data for _, _, data in events)


def test_new_record_input_records_the_typing(phux: Phux) -> None:  # noqa: F811
    path = phux.root / "newi.cast"
    res = phux(
        "new",
        "-d",
        "-s",
        "recni",
        "--record",
        str(path),
        "--record-input",
        "--",
        "sh",
        "-c",
        "read x; echo got-$x",
    )
    assert res.code == 0, res.err
    wait_for(lambda: path.exists() and path.read_text().count("\n") >= 1, "the header")
    assert phux("send-keys", "recni", "yes", "Enter").code == 0
    wait_for(lambda: "got-yes" in path.read_text(), "the recorder to see the output")
    _, events = read_cast(path)
    assert "".join(data for _, code, data in events if code == "i") == "yes\r"


def test_new_record_input_needs_record(phux: Phux) -> None:  # noqa: F811
    res = phux("new", "-d", "-s", "recnx", "--record-input")
    assert res.code == 2 and "--record-input needs --record" in res.err


def test_new_record_to_an_unwritable_file_creates_nothing(phux: Phux) -> None:  # noqa: F811
    res = phux("new", "--json", "-s", "recbad", "--record", str(phux.root / "no" / "such.cast"))
    assert res.code == 1
    assert res.out == ""
    error = json.loads(res.err)["error"]  # the verb's one JSON error line, no traceback
    assert error["code"] == "cannot_write" and "such.cast" in error["message"], res.err
    assert phux("snapshot", "recbad").code == 1, "the session was not created"


def test_record_input_leaves_out_what_is_typed_where_nothing_echoes(phux: Phux) -> None:  # noqa: F811
    """A password typed at a no-echo prompt (the pane's state `hidden_input`) is not in
    the file; the header says such input is left out; input typed after it is kept."""
    script = 'stty -echo; printf "pw: "; read pw; stty echo; echo; echo got-${#pw}; read x'
    phux.new("recpw", "sh", "-c", script)
    assert phux("wait", "--until", "pw:", "--timeout", "10", "recpw").code == 0
    cast = phux.root / "recpw.cast"
    recorder = start_recorder(phux, "--input", "--since", "recpw", str(cast))
    try:
        wait_for(lambda: cast.exists() and cast.read_text().count("\n") >= 1, "the header")
        assert phux("send-keys", "recpw", "hunter2", "Enter").code == 0
        assert phux("wait", "--regex", "^got-7$", "--timeout", "10", "recpw").code == 0
        assert phux("send-keys", "recpw", "visible").code == 0
        wait_for(lambda: cast.read_text().count("visible") >= 2, "the input and its echo")
    finally:
        recorder.send_signal(signal.SIGINT)
        _, err = recorder.communicate(timeout=DEADLINE)
    assert recorder.returncode == 0, err
    assert "hunter2" not in cast.read_text()
    header, events = read_cast(cast)
    assert "".join(data for _, code, data in events if code == "i") == "visible"
    assert "echo" in header["phux"]["input"]  # what is left out, and why
    assert "hidden" in err  # the summary says input was left out


def test_recordings_are_private_and_never_follow_a_symlink(phux: Phux) -> None:  # noqa: F811
    phux.new("recperm", "sh", "-c", "echo x; read x")
    cast = phux.root / "perm.cast"
    res = phux("record", "--timeout", "0.2", "recperm", str(cast))
    assert res.code == 0, res.err
    assert cast.stat().st_mode & 0o777 == 0o600
    victim = phux.root / "victim.txt"
    victim.write_text("keep me\n")
    link = phux.root / "link.cast"
    link.symlink_to(victim)
    res = phux("record", "--timeout", "0.2", "recperm", str(link))
    assert res.code == 1
    assert "link.cast" in res.err and "symbolic link" in res.err, res.err
    assert victim.read_text() == "keep me\n"
    assert phux("kill", "recperm").code == 0


def test_record_to_a_full_disk_is_a_clear_error(phux: Phux) -> None:  # noqa: F811
    phux.new("recfull", "sh", "-c", "echo x; read x")
    res = phux("record", "--since", "--timeout", "1", "recfull", "/dev/full")
    assert res.code == 1, res.err
    assert "/dev/full" in res.err and "No space left on device" in res.err, res.err
    assert "bug" not in res.err
    assert phux("kill", "recfull").code == 0

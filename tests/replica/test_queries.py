"""The server answers terminal queries (DA1, DA2, DSR 5/6, XTVERSION, size reports,
colours, DECRQSS: spec/L1.md §5.2) once, whoever is attached."""

from __future__ import annotations

import ast
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phux import __version__
from phux.client.deadline import Deadline
from phux.wire.frames import ListTerminals, TerminalList
from server.harness import spawn, subscribe, wait_exit

from .helpers import ASK, go, program, replica_server

QUESTIONS = (
    ASK
    + """
out = {}
os.read(0, 1)
out["da1"] = ask(b"\\x1b[c", b"c")
out["da2"] = ask(b"\\x1b[>c", b"c")
out["dsr5"] = ask(b"\\x1b[5n", b"n")
out["dsr6"] = ask(b"\\x1b[5;10H\\x1b[6n", b"R")
out["da1_params"] = ask(b"\\x1b[0;0c", b"c")
out["xtversion"] = ask(b"\\x1b[>q", b"\\x1b\\\\")
out["size"] = ask(b"\\x1b[18t", b"t")
out["pixels"] = ask(b"\\x1b[14t", b"t")
out["fg"] = ask(b"\\x1b]10;?\\x07", b"\\x07")
out["bg"] = ask(b"\\x1b]11;?\\x1b\\\\", b"\\x1b\\\\")
out["decrqss"] = ask(b"\\x1b[1m\\x1bP$qm\\x1b\\\\\\x1b[0m", b"\\x1b\\\\")
# After a lot of output, the position reflects all of it (the replica parsed it first).
w(b"".join(b"line %d\\r\\n" % i for i in range(30000)) + b"\\x1b[3;7H")
out["dsr6_after_flood"] = ask(b"\\x1b[6n", b"R", timeout=60)
out["extra"] = linger(0.5)
open(sys.argv[1], "w").write(repr(out))
"""
)


def _answers(path: Path) -> dict[str, bytes]:
    value = ast.literal_eval(path.read_text())
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("mode", ["auto", "process", "thread"])
def test_queries_are_answered_with_no_client(tmp_path: Path, mode: str) -> None:
    result = tmp_path / "answers"
    with replica_server(tmp_path, mode=mode) as server, server.connect() as conn:
        tid = spawn(conn, [*program(QUESTIONS), str(result)])
        go(conn, tid)
        subscribe(conn, tid)
        wait_exit(conn, tid, timeout=90)
    answers = _answers(result)
    assert answers == {
        "da1": b"\x1b[?1;2c",
        "da2": b"\x1b[>1;10;0c",
        "dsr5": b"\x1b[0n",
        "dsr6": b"\x1b[5;10R",
        "da1_params": b"\x1b[?1;2c",
        "xtversion": f"\x1bP>|phux({__version__})\x1b\\".encode(),
        "size": b"\x1b[8;24;80t",
        "pixels": b"\x1b[4;768;1280t",
        "fg": b"\x1b]10;rgb:ffff/ffff/ffff\x07",
        "bg": b"\x1b]11;rgb:0000/0000/0000\x1b\\",
        "decrqss": b"\x1bP1$r0;1m\x1b\\",
        "dsr6_after_flood": b"\x1b[3;7R",
        "extra": b"",
    }


@pytest.mark.parametrize(
    ("args", "env_mode"),
    [((), "off"), (("--replicas", "off"), "process")],
    ids=["environment", "flag-overrides-environment"],
)
def test_queries_are_not_answered_with_replicas_off(
    tmp_path: Path, args: tuple[str, ...], env_mode: str
) -> None:
    script = ASK + "os.read(0, 1)\nopen(sys.argv[1], 'w').write(repr(ask(b'\\x1b[c', b'c', 1)))\n"
    result = tmp_path / "answers"
    with replica_server(tmp_path, *args, mode=env_mode) as server, server.connect() as conn:
        tid = spawn(conn, [*program(script), str(result)])
        go(conn, tid)
        subscribe(conn, tid)
        wait_exit(conn, tid, timeout=30)
    assert ast.literal_eval(result.read_text()) == b""


ONE_DA1 = (
    ASK
    + """
os.read(0, 1)
first = ask(b"\\x1b[c", b"c")
open(sys.argv[1], "w").write(repr({"first": first, "extra": linger(1.0)}))
os.read(0, 1)
"""
)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_one_answer_while_a_human_is_attached(tmp_path: Path) -> None:
    """``phux attach`` in a real terminal (tmux, which answers DA1 itself): the program
    still gets exactly one answer, the server's; attach keeps the query from tmux."""
    result = tmp_path / "answers"
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock"), "-f", "/dev/null"]
    with replica_server(tmp_path) as server, server.connect() as conn:
        tid = spawn(conn, [*program(ONE_DA1), str(result)])
        attach = f"{sys.executable} -m phux attach --socket {server.socket} @{tid}"
        try:
            subprocess.run(
                [*tmux, "new-session", "-d", "-x", "80", "-y", "24", attach],
                check=True,
                timeout=30,
            )
            deadline = time.monotonic() + 30
            while True:
                listing = conn.call_expect(
                    lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
                )
                if any(t.terminal == tid and t.primaries for t in listing.terminals):
                    break
                assert time.monotonic() < deadline, "phux attach did not attach"
                time.sleep(0.05)
            go(conn, tid)
            deadline = time.monotonic() + 30
            while not result.exists() or not result.read_text():
                assert time.monotonic() < deadline, "the program did not finish"
                time.sleep(0.05)
            # A complete write is a complete repr; retry a partial read.
            while True:
                try:
                    answers = _answers(result)
                    break
                except SyntaxError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30, check=False)
    assert answers == {"first": b"\x1b[?1;2c", "extra": b""}


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_tmux_answers_queries_it_sees(tmp_path: Path) -> None:
    """The control for the test above: a query that reaches tmux is answered by it, so
    the single answer there means ``phux attach`` kept the query from tmux."""
    result = tmp_path / "answers"
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock"), "-f", "/dev/null"]
    command = " ".join([*map(shlex.quote, program(ONE_DA1)), shlex.quote(str(result))])
    try:
        subprocess.run(
            [*tmux, "new-session", "-d", "-x", "80", "-y", "24", command], check=True, timeout=30
        )
        deadline = time.monotonic() + 30
        while (
            "R"
            not in subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=30
            ).stdout
        ):
            assert time.monotonic() < deadline, "the program did not start"
            time.sleep(0.05)
        subprocess.run([*tmux, "send-keys", "g"], check=True, timeout=30)
        while not result.exists() or not result.read_text().endswith("}"):
            assert time.monotonic() < deadline, "the program did not finish"
            time.sleep(0.05)
        answers = _answers(result)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30, check=False)
    assert answers["first"].startswith(b"\x1b[?") and answers["first"].endswith(b"c")

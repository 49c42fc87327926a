"""Hostile text through a real server (issue 15): endless combining marks must not
stall the replica process, and C1 code points must not hide text from agents."""

from __future__ import annotations

import ast
import time
import unicodedata
from pathlib import Path

from server.harness import spawn, subscribe, wait_exit

from .helpers import ASK, go, program, read_bootstrap, replica_server, send

MARKS = (
    ASK
    + """
os.read(0, 1)
w(("a" + "\\u0301" * 100000 + " marks\\r\\n").encode())
w(b"visible-1 \\xc2\\x9fHIDDEN\\x07 visible-2\\r\\n")
start = time.monotonic()
answer = ask(b"\\x1b[c", b"c", timeout=10)
open(sys.argv[1], "w").write(repr({"da1": answer, "seconds": time.monotonic() - start}))
os.read(0, 1)
"""
)


def test_combining_flood_and_c1_through_the_replica(tmp_path: Path) -> None:
    result = tmp_path / "answers"
    # A small journal bound: the bootstrap below is a replica checkpoint.
    with (
        replica_server(tmp_path, "--journal-bytes", str(64 * 1024)) as server,
        server.connect() as conn,
    ):
        tid = spawn(conn, [*program(MARKS), str(result)])
        go(conn, tid)
        deadline = time.monotonic() + 30
        while not result.exists() or not result.read_text().endswith("}"):
            assert time.monotonic() < deadline, "the program got no answer in time"
            time.sleep(0.05)
        answers = ast.literal_eval(result.read_text())
        # The replica drew 100,000 marks and still answered at once (it took minutes).
        assert answers["da1"] == b"\x1b[?1;2c", answers
        assert answers["seconds"] < 5, answers

        deadline = time.monotonic() + 30
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if boot.checkpoint is not None:
                break
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.1)
        start = time.monotonic()
        lines = boot.engine(history=300).project().lines
        assert time.monotonic() - start < 2
        # The cell keeps its base and ten marks (phux.engine._screen.MAX_COMBINING).
        assert lines[0] == "R" + unicodedata.normalize("NFC", "a" + "\u0301" * 10) + " marks"
        assert lines[1] == "visible-1 HIDDEN visible-2"
        assert len(boot.checkpoint) < 16 * 1024

        subscribe(conn, tid)
        send(conn, tid, b"x")
        wait_exit(conn, tid, timeout=30)

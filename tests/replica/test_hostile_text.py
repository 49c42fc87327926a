"""Hostile text through a real server (issue 15): endless combining marks must not
stall the replica process, and C1 code points must not hide text from agents."""

from __future__ import annotations

import ast
import contextlib
import os
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
answer = ask(b"\\x1b[c", b"c", timeout=30)
open(sys.argv[1], "w").write(repr({"da1": answer, "seconds": time.monotonic() - start}))
os.read(0, 1)
"""
)


def replicas_cpu(server: int) -> float:
    """The CPU seconds (user and system) the server's replica workers used so far."""
    total, workers = 0, 0
    for task in Path(f"/proc/{server}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    if b"phux.server.replica" not in Path(f"/proc/{child}/cmdline").read_bytes():
                        continue
                    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
                    workers += 1
    assert workers, "the server runs no replica worker"
    return total / os.sysconf("SC_CLK_TCK")


def test_combining_flood_and_c1_through_the_replica(tmp_path: Path) -> None:
    result = tmp_path / "answers"
    # A small journal bound: the bootstrap below is a replica checkpoint.
    with (
        replica_server(tmp_path, "--journal-bytes", str(64 * 1024)) as server,
        server.connect() as conn,
    ):
        tid = spawn(conn, [*program(MARKS), str(result)])
        assert server.proc is not None
        before = replicas_cpu(server.proc.pid)
        go(conn, tid)
        deadline = time.monotonic() + 40
        while not result.exists() or not result.read_text().endswith("}"):
            assert time.monotonic() < deadline, "the program got no answer in time"
            time.sleep(0.05)
        answers = ast.literal_eval(result.read_text())
        # The replica drew 100,000 marks and still answered (it took minutes): within
        # the program's 30 s of wall time, and within 5 s of the replica's own CPU time,
        # which a loaded machine does not stretch as it stretches wall time.
        assert answers["da1"] == b"\x1b[?1;2c", answers
        assert replicas_cpu(server.proc.pid) - before < 5, (
            answers,
            replicas_cpu(server.proc.pid) - before,
        )

        deadline = time.monotonic() + 30
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if boot.checkpoint is not None:
                break
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.1)
        start = time.process_time()  # (this process's CPU: the engine's work alone)
        lines = boot.engine(history=300).project().lines
        assert time.process_time() - start < 2
        # The cell keeps its base and ten marks (phux.engine._screen.MAX_COMBINING).
        assert lines[0] == "R" + unicodedata.normalize("NFC", "a" + "\u0301" * 10) + " marks"
        assert lines[1] == "visible-1 HIDDEN visible-2"
        assert len(boot.checkpoint) < 16 * 1024

        subscribe(conn, tid)
        send(conn, tid, b"x")
        wait_exit(conn, tid, timeout=30)

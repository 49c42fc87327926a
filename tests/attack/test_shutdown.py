"""Nothing a terminal started outlives a server that is shut down.

A background job in its own process group that ignores SIGHUP was left running,
an orphan, after the server had gone. On shutdown every process still in a
terminal's session gets SIGHUP, then SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from phux.client.deadline import Deadline
from phux.wire.frames import BootstrapChunk, Output
from server.harness import ServerProcess, spawn, subscribe

# Job control on (the job gets its own process group), SIGHUP ignored in the job,
# its pid printed; the shell itself waits.
SCRIPT = "set -m; (trap '' HUP; exec sleep 300) & echo JOB=$!; exec sleep 300"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_shutdown_kills_background_jobs_that_ignore_sighup(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    server.start()
    job = 0
    try:
        with server.connect() as conn:
            tid = spawn(conn, ["sh", "-c", SCRIPT])
            subscribe(conn, tid)
            seen = b""
            deadline = Deadline.after(10)
            while b"\n" not in seen.partition(b"JOB=")[2]:
                frame = conn.receive(deadline)
                if isinstance(frame, Output | BootstrapChunk) and not getattr(
                    frame, "checkpoint", False
                ):
                    seen += frame.data
            job = int(seen.partition(b"JOB=")[2].split()[0])
            assert _alive(job)
            assert os.getpgid(job) == job  # its own group: not the terminal's
        server.stop()
        assert server.proc is not None and server.proc.poll() is not None
        end = time.monotonic() + 10
        while _alive(job):
            assert time.monotonic() < end, f"job {job} outlived the server"
            time.sleep(0.05)
    finally:
        server.stop()
        if job and _alive(job):
            subprocess.run(["kill", "-9", str(job)], check=False)

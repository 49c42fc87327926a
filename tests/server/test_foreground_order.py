"""TERMINAL_STATE comes after the output the program wrote before the change
(spec/L1.md §8.1): a shell prints its continuation prompt, then gives the terminal
to a job, and a client that takes the job for the command's start must see that
prompt first (spec/shell-integration.md, "A command's start without C").

The server's reader and its foreground check run as separate tasks; when both are
due at once (a loaded machine) the check could report before the reader read. The
check is driven here on a real terminal with its output still unread."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from phux.server import foreground as fgread
from phux.server.config import ServerConfig
from phux.server.journal import Chunk
from phux.server.pty_process import spawn_on_pty
from phux.server.terminal import Terminal

# Writes a line, then gives the terminal to a process group of its own, as a shell
# with job control runs a job.
JOB = r"""
import os, time
os.write(1, b"before the job\n")
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    time.sleep(30)
    os._exit(0)
os.setpgid(pid, pid)
os.tcsetpgrp(0, pid)
time.sleep(30)
"""


def test_a_change_is_reported_after_the_output_before_it(tmp_path: Path) -> None:
    process = spawn_on_pty([sys.executable, "-c", JOB], None, dict(os.environ), 80, 24)
    seen: list[bytes | str] = []

    def output(_: Terminal, chunk: Chunk) -> None:
        seen.append(chunk.data)

    def state(_: Terminal, frame: bytes) -> None:
        seen.append("state")

    term = Terminal(
        1,
        process,
        ServerConfig(socket_path=tmp_path / "s"),
        80,
        24,
        {},
        on_closed=lambda _: None,
        on_state=state,
    )
    term.output_hooks.append(output)
    try:
        end = time.monotonic() + 15
        while True:  # the job holds the terminal; nothing was read yet
            found = fgread.read_key(process.master_fd, process.pid)
            if found is not None and os.tcgetpgrp(process.master_fd) != process.pid:
                break
            assert time.monotonic() < end, "the job never took the terminal"
            time.sleep(0.02)
        assert term.check_foreground()
        assert seen[-1] == "state"
        assert b"".join(s for s in seen if isinstance(s, bytes)) == b"before the job\r\n"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.tcgetpgrp(process.master_fd), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.proc.wait(10)
        os.close(process.master_fd)

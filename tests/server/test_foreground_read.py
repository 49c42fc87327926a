"""phux.server.foreground on real processes and PTYs: caps, odd names, gone processes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator

import pytest

from phux.server import foreground as fg

T = 10.0


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + T
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


def _ctty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    try:
        yield master, slave
    finally:
        for fd in (master, slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def test_argv_is_capped_in_count_and_bytes() -> None:
    script = "sleep 30; :"  # the shell stays, with all of its arguments
    many = subprocess.Popen(["sh", "-c", script, "sh", *["x"] * 40], start_new_session=True)
    long = subprocess.Popen(["sh", "-c", script, "sh", "y" * 5000], start_new_session=True)
    try:
        _wait_for(lambda: (fg.read_argv(many.pid) or [])[:1] == ["sh"], "sh exec'd")
        _wait_for(lambda: (fg.read_argv(long.pid) or [])[:1] == ["sh"], "sh exec'd")
        got = fg.read_argv(many.pid)
        assert got is not None and len(got) == fg.MAX_ARGS and got[:4] == ["sh", "-c", script, "sh"]
        assert fg.read_argv(long.pid) == ["sh", "-c", script, "sh"]  # the cut one is left out
    finally:
        for p in (many, long):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_a_name_with_spaces_and_parentheses_is_read_whole(pty_pair: tuple[int, int]) -> None:
    master, slave = pty_pair
    code = "open('/proc/self/comm','w').write('a) b (c'); import time; time.sleep(30)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=_ctty,
    )
    try:

        def renamed() -> bool:
            now = fg.read_foreground(master, proc.pid)
            return now is not None and now.name == "a) b (c"

        _wait_for(renamed, "comm")
        got = fg.read_foreground(master, proc.pid)
        assert got is not None and got.pgrp == proc.pid and got.argv[0] == sys.executable
    finally:
        proc.kill()
        proc.wait()


def test_gone_processes_read_as_nothing() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert fg.read_argv(proc.pid) == []
    assert fg._stat(proc.pid) is None


def test_a_process_without_arguments_yet_reads_as_none() -> None:
    # A zombie's cmdline is empty, as a program's is for a moment during exec (its
    # name is already the new program's, its arguments not set up yet): not [""].
    proc = subprocess.Popen(["true"])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    try:
        assert (fg._stat(proc.pid) or ("", "", 0))[1] == "Z"
        assert fg.read_argv(proc.pid) is None
    finally:
        proc.wait()


_GROUP = """
import os, sys, time
leader = os.fork()
if leader == 0:
    os.setpgid(0, 0)
    time.sleep(0.3)
    os._exit(0)  # its parent never reaps it: a zombie leader
os.setpgid(leader, leader)
member = os.fork()
if member == 0:
    os.setpgid(0, leader)
    os.execvp("sleep", ["sleep", "30"])
try:
    os.setpgid(member, leader)
except OSError:
    pass
print(leader, member, flush=True)
time.sleep(30)
"""


def test_a_zombie_leader_gives_way_to_a_live_member() -> None:
    """A group whose leader exited (unreaped, or reaped: ``cat f | less``) is named
    after a live member found among the session leader's descendants."""
    root = subprocess.Popen([sys.executable, "-c", _GROUP], stdout=subprocess.PIPE, text=True)
    leader = 0
    try:
        assert root.stdout is not None
        leader, member = map(int, root.stdout.readline().split())
        _wait_for(lambda: (fg.read_argv(member) or [])[:1] == ["sleep"], "member exec'd")
        _wait_for(lambda: (fg._stat(leader) or ("", "", 0))[1] == "Z", "leader a zombie")
        found = fg._live_member(leader, root.pid)
        assert found == (member, "sleep")
        assert fg.read_argv(member) == ["sleep", "30"]
    finally:
        if leader:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)
        root.kill()
        root.wait()
        if root.stdout is not None:
            root.stdout.close()


def test_a_pty_nobody_holds_has_no_foreground(pty_pair: tuple[int, int]) -> None:
    master, slave = pty_pair
    proc = subprocess.Popen(
        ["true"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True, preexec_fn=_ctty
    )
    proc.wait()
    assert fg.read_foreground(master, proc.pid) is None
    os.close(master)
    assert fg.read_key(master, proc.pid) is None  # a closed fd: no exception either

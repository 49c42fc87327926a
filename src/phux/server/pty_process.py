"""Start a program on a fresh PTY: its own session, the PTY as controlling tty.

Everything here is synchronous and quick (one fork/exec); exec failures
(no such program, bad cwd, not executable) come back as OSError from
:func:`spawn_on_pty` because :mod:`subprocess` reports them through its
close-on-exec error pipe.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import resource
import select
import signal
import struct
import subprocess
import termios
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass


def set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


_child_nofile: tuple[int, int] | None = None
_UNCATCHABLE = (signal.SIGKILL, signal.SIGSTOP)


_TIOCGPTPEER = getattr(termios, "TIOCGPTPEER", 0x5441)
"""Open the slave side of a PTY from its master (Linux 4.13+; not in Python's termios)."""


@contextlib.contextmanager
def _slave_of(master_fd: int) -> Iterator[int | None]:
    """The PTY's slave side, opened from its master for one ioctl (None when it cannot
    be: the master is closed)."""
    try:
        slave = fcntl.ioctl(master_fd, _TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield slave
    finally:
        os.close(slave)


def flush_unread_input(master_fd: int) -> None:
    """Discard the input the program on the PTY has not read yet (TCIFLUSH on the
    slave side, what a tty does on an interrupt key). Best effort."""
    with _slave_of(master_fd) as slave, contextlib.suppress(OSError):
        if slave is not None:
            termios.tcflush(slave, termios.TCIFLUSH)


def unread_input(master_fd: int) -> int:
    """Bytes of input the program on the PTY could read now and has not (FIONREAD on
    the slave side; in canonical mode the kernel counts whole lines only). 0 when
    unreadable."""
    with _slave_of(master_fd) as slave:
        if slave is None:
            return 0
        try:
            # Input written to the master reaches the line discipline later, from a
            # kernel worker: a count taken just after the write may miss it. A poll
            # of the slave that finds nothing waits for that worker first (n_tty).
            poller = select.poll()
            poller.register(slave, select.POLLIN)
            poller.poll(0)
            raw = fcntl.ioctl(slave, termios.FIONREAD, bytes(4))
        except OSError:
            return 0
        return int(struct.unpack("i", raw)[0])


def discards_input_on(master_fd: int, data: bytes) -> bool:
    """Whether the line discipline discards the unread input when it reads ``data``:
    it starts with the tty's INTR, QUIT or SUSP character while ISIG is on and NOFLSH
    off. Written behind input the program does not read, the kernel may never get to
    it (a canonical tty holding whole lines takes nothing more), so the server
    discards that input first, which changes nothing the program could see."""
    if not data:
        return False
    try:
        attrs = termios.tcgetattr(master_fd)
    except (OSError, termios.error):
        return False
    lflag, cc = attrs[3], attrs[6]
    if not lflag & termios.ISIG or lflag & termios.NOFLSH:
        return False
    first = data[:1]
    return any(cc[i] == first for i in (termios.VINTR, termios.VQUIT, termios.VSUSP))


def raise_fd_limit(want: int = 65536) -> None:
    """Let the server hold many terminals; children get the original limit back."""
    global _child_nofile
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        _child_nofile = (soft, hard)


def _child_setup() -> None:  # runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # exec resets handled signals but keeps ignored ones: a server started by a
    # background job (SIGINT, SIGQUIT ignored) or nohup (SIGHUP) would hand that on,
    # and C-\ or C-z would do nothing in its panes. A terminal starts from defaults.
    for sig in signal.valid_signals():
        if sig not in _UNCATCHABLE and signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    if _child_nofile is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, _child_nofile)


@dataclass
class PtyProcess:
    proc: subprocess.Popen[bytes]
    master_fd: int

    @property
    def pid(self) -> int:
        return self.proc.pid


def spawn_on_pty(
    argv: Sequence[str], cwd: str | None, env: Mapping[str, str], cols: int, rows: int
) -> PtyProcess:
    """Fork/exec ``argv`` on a new PTY of ``cols`` x ``rows``; the master is non-blocking."""
    master, slave = pty.openpty()
    try:
        set_winsize(master, cols, rows)
        proc = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=_child_setup,
            close_fds=True,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return PtyProcess(proc=proc, master_fd=master)


def foreground_pgrp(master_fd: int, fallback: int) -> int:
    """The PTY's foreground process group, or ``fallback`` when it has none."""
    try:
        pgrp = os.tcgetpgrp(master_fd)
    except OSError:
        return fallback
    return pgrp if pgrp > 0 else fallback


def signal_group(pgrp: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgrp, signum)


def session_groups(sessions: set[int]) -> set[int]:
    """The process groups of every live process in one of ``sessions`` (each terminal's
    program leads its own session, so its sid is its pid). Background jobs in groups
    of their own are in it; a process that left the session (``setsid``) is not."""
    groups: set[int] = set()
    if not sessions:
        return groups
    try:
        entries = os.listdir("/proc")
    except OSError:
        return groups
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parens
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) in sessions:
            groups.add(int(fields[2]))
    return groups


def describe_spawn_error(argv: Sequence[str], cwd: str | None, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    missing = isinstance(exc, FileNotFoundError | NotADirectoryError)
    if missing and cwd is not None and (exc.filename == cwd or not os.path.isdir(cwd)):
        return f"cannot change directory to {cwd!r}: {reason}"
    return f"cannot start {argv[0]!r}: {reason}"

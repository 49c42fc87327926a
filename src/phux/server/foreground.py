"""What holds a PTY: its foreground process group, that group's program, the tty's modes.

Facts read from the kernel, never from the output: ``tcgetpgrp`` and
``tcgetattr`` on the master (on Linux both act on the slave side of the pair),
and ``/proc`` for the group's program. Every read here is a handful of cheap,
non-blocking syscalls, so the event loop calls them directly. Any of them can
race with the processes they describe (a program that exits or execs between
two reads); every failure degrades to less information, never to an
exception.
"""

from __future__ import annotations

import os
import termios

from phux.wire.frames import Foreground

MAX_ARGS = 32
"""Arguments kept from a foreground program's command line."""
MAX_CMDLINE_BYTES = 4096
"""Bytes of /proc/<pid>/cmdline read; an argument cut by the cap is dropped."""
_MAX_SCAN = 256
"""Processes looked at when a group's leader has gone and another member is sought."""

Key = tuple[int, str, bool, bool, bool]
"""What a change is judged by: pgrp, name, echo, canonical, isig (argv is read only when
it changes)."""


def _stat(pid: int) -> tuple[str, str, int] | None:
    """(comm, state, pgrp) of ``pid`` from /proc/<pid>/stat, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(1024)
    except OSError:
        return None
    # "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so split at the last ')'.
    open_at = raw.find(b"(")
    close_at = raw.rfind(b")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = raw[close_at + 2 :].split(None, 3)
    if len(rest) < 3:
        return None
    try:
        pgrp = int(rest[2])
    except ValueError:
        return None
    comm = raw[open_at + 1 : close_at].decode("utf-8", "replace")
    return comm, rest[0].decode("ascii", "replace"), pgrp


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _live_member(pgrp: int, root: int) -> tuple[int, str] | None:
    """A live (not zombie) process of group ``pgrp`` and its comm.

    The leader first; when it has exited (``cat file | less`` once cat is done)
    the session leader's descendants are searched, which is where a job's
    members live, so the whole of /proc is never scanned.
    """
    stat = _stat(pgrp)
    if stat is not None and stat[2] == pgrp and stat[1] not in ("Z", "X"):
        return pgrp, stat[0]
    todo = [root]
    seen = 0
    while todo and seen < _MAX_SCAN:
        pid = todo.pop()
        seen += 1
        stat = _stat(pid)
        if stat is None:
            continue
        if stat[2] == pgrp and stat[1] not in ("Z", "X"):
            return pid, stat[0]
        todo.extend(_children(pid))
    return None


def read_argv(pid: int) -> list[str] | None:
    """``pid``'s arguments (at most MAX_ARGS from the first MAX_CMDLINE_BYTES); [] if
    unreadable; None if it has none yet: a process caught in exec, whose name is the
    new program's already but whose arguments the kernel sets up after it (or a zombie)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(MAX_CMDLINE_BYTES)
    except OSError:
        return []
    if not raw:
        return None
    parts = raw.split(b"\0")
    if raw.endswith(b"\0"):
        parts.pop()
    elif len(raw) >= MAX_CMDLINE_BYTES:
        parts.pop()  # cut by the cap: a partial argument would be a false one
    return [p.decode("utf-8", "replace") for p in parts[:MAX_ARGS]]


Modes = tuple[int, bool, bool, bool]
"""What the kernel tells of a PTY without /proc: pgrp, echo, canonical, isig."""


def read_modes(master_fd: int) -> Modes | None:
    """The foreground group and the tty's modes (two ioctls); None when unreadable.

    None means the PTY has no foreground any more (every process let go of the
    slave, or the master is closed).
    """
    try:
        pgrp = os.tcgetpgrp(master_fd)
        lflag = termios.tcgetattr(master_fd)[3]
    except (OSError, termios.error):
        return None
    if pgrp <= 0:
        return None
    echo = bool(lflag & termios.ECHO)
    canonical = bool(lflag & termios.ICANON)
    isig = bool(lflag & termios.ISIG)  # off: raw mode (vim, fzf), not a line editor (readline)
    return pgrp, echo, canonical, isig


def key_of(modes: Modes, session_pid: int) -> tuple[Key, int]:
    """The change key for ``modes`` (the group's program read from /proc) and the pid
    its name came from."""
    pgrp, echo, canonical, isig = modes
    member = _live_member(pgrp, session_pid)
    pid, name = member if member is not None else (pgrp, "")
    return (pgrp, name, echo, canonical, isig), pid


def read_key(master_fd: int, session_pid: int) -> tuple[Key, int] | None:
    """The foreground's change key and the pid its name came from; None when unreadable
    (see :func:`read_modes`)."""
    modes = read_modes(master_fd)
    return None if modes is None else key_of(modes, session_pid)


def build(key: Key, pid: int, *, settled: bool = True) -> Foreground | None:
    """The record for ``key``, with the argv of ``pid`` (none when no member was found).
    Not ``settled``: None while ``pid`` is caught in exec (see :func:`read_argv`), so
    that the caller looks again rather than report the new name with no arguments."""
    pgrp, name, echo, canonical, isig = key
    argv = read_argv(pid) if name else []
    if argv is None:
        if not settled:
            return None
        argv = []
    return Foreground(pgrp=pgrp, name=name, argv=argv, echo=echo, canonical=canonical, isig=isig)


def read_foreground(master_fd: int, session_pid: int) -> Foreground | None:
    """The PTY's foreground now (see :class:`phux.wire.frames.Foreground`)."""
    found = read_key(master_fd, session_pid)
    if found is None:
        return None
    return build(*found)

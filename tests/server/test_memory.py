"""What an idle terminal costs, held exactly (issue 28; the figures are
tools/bench/bench_memory.py's): its trio tasks, its fds, no thread of its own,
and a replica put away when idle and built again, right, when output comes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.server.config import ServerConfig
from phux.server.exits import ExitWatch
from phux.server.journal import Journal
from phux.server.pty_process import spawn_on_pty
from phux.server.terminal import Terminal
from phux.wire.frames import Input, Kill, MetadataValue, MetaGet

from .harness import ServerProcess, Stream, read_until, running_server, spawn, subscribe

IDLE_S = 0.3


# ---------------------------------------------------------------- trio tasks


class _Owner:
    """The connection an INPUT came on, as the input queue sees it."""

    minor = 99

    def __init__(self) -> None:
        self.done: list[int] = []

    def input_done(self, request_id: int, size: int, exited: str | None = None) -> None:
        self.done.append(request_id)

    def input_cancelled(self, request_id: int, size: int, message: str) -> None:
        raise AssertionError("nothing is cancelled here")

    def awaiting_unit(self, term: Terminal, waiting: bool) -> None:
        pass


def _tasks_under(task: trio.lowlevel.Task) -> int:
    return 1 + sum(_tasks_under(t) for n in task.child_nurseries for t in n.child_tasks)


def _find(task: trio.lowlevel.Task, name: str) -> trio.lowlevel.Task | None:
    if task.name == name:
        return task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            found = _find(child, name)
            if found is not None:
                return found
    return None


def test_an_idle_terminal_is_one_task_the_writer_and_watcher_run_only_when_needed() -> None:
    followed = False

    async def main() -> None:
        nonlocal followed
        proc = spawn_on_pty(["cat"], None, dict(os.environ), 80, 24)
        exits = ExitWatch()  # (the server's: one for all terminals)
        term = Terminal(
            1,
            proc,
            ServerConfig(Path("unused"), replica_mode="off"),
            80,
            24,
            {},
            on_closed=lambda t: None,
            on_state=lambda t, encoded: None,
            interested=lambda t: followed,
            exits=exits,
        )

        async def tasks(want: int) -> None:
            """The terminal's tasks settle at ``want`` (they may take a moment to end)."""
            with trio.fail_after(5):
                while True:
                    await trio.testing.wait_all_tasks_blocked()
                    root = trio.lowlevel.current_root_task()
                    assert root is not None
                    run = _find(root, "terminal")
                    assert run is not None
                    if _tasks_under(run) == want:
                        return
                    await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(exits.run)
            nursery.start_soon(term.run, name="terminal")
            await tasks(1)  # run, which reads (its exit comes through ``exits``)
            owner = _Owner()
            term.queue_input(owner, 7, b"hello\n")
            await tasks(1)  # the writer came, wrote, and went
            assert owner.done == [7]
            assert not _holds_a_deque(term)  # (the queue went with the last input)
            followed = True
            term.baseline_foreground()
            await tasks(2)  # the foreground watcher, while someone follows
            followed = False
            term.baseline_foreground()  # (wakes it: it sees nobody follows and goes)
            await tasks(1)
            proc.proc.kill()
            with trio.fail_after(5):
                while not term.closed:  # (the exit came through ``exits``)
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)


def _holds_a_deque(obj: object) -> bool:
    slots = getattr(type(obj), "__slots__", ())
    values = [getattr(obj, n, None) for n in slots] if slots else list(vars(obj).values())
    return any(isinstance(v, deque) for v in values)


def test_an_empty_journal_holds_no_deque() -> None:
    # An empty deque is 624 bytes: a thousand idle terminals' journals are empty
    # once checkpointed.
    journal = Journal(4096, 80, 24)
    assert not _holds_a_deque(journal)
    journal.compacting = True
    journal.append(b"$ ")
    journal.append(b"ls")
    assert _holds_a_deque(journal)
    journal.compact(2, 80, 24, b"checkpoint")
    assert _holds_a_deque(journal)  # ("ls" is after it)
    journal.compact(4, 80, 24, b"checkpoint")
    assert journal.bootstrap().items == [] and not _holds_a_deque(journal)


# ---------------------------------------------------------------- a real server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(
        tmp_path_factory.mktemp("memory"), PHUX_REPLICA_IDLE_S=str(IDLE_S), PHUX_REPLICAS="process"
    ) as srv:
        yield srv


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def _helpers(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        with contextlib.suppress(OSError), open(f"/proc/{child}/cmdline", "rb") as f:
            if b"phux.server.replica" in f.read():
                found.append(child)
    return found


def _count(pid: int, what: str) -> int:
    """Open fds (or threads) of ``pid`` once the count holds (a new terminal's
    reaper opens its pidfd when it first runs, just after SPAWN's answer)."""
    deadline = Deadline.after(5)
    last = -1
    while True:
        now = len(os.listdir(f"/proc/{pid}/{what}"))
        if now == last or deadline.expired():
            return now
        last = now
        time.sleep(0.05)


def test_a_terminal_costs_two_fds_and_no_thread(server: ServerProcess) -> None:
    # (The replica helper holds nothing per terminal: a pipe each way, whatever
    # their number; it may come and go here, as it is let go when idle.)
    assert server.proc is not None
    pid = server.proc.pid
    with server.connect() as conn:
        first = spawn(conn, ["sleep", "60"])
        fds, threads = _count(pid, "fd"), _count(pid, "task")
        more = [spawn(conn, ["sleep", "60"]) for _ in range(10)]
        assert _count(pid, "fd") - fds == 2 * 10
        assert _count(pid, "task") == threads
        conn.call(lambda rid: Kill(request_id=rid, terminals=[first, *more]), Deadline.after(10))


def _type(conn: Connection, tid: int, text: str) -> None:
    conn.call(
        lambda rid: Input(request_id=rid, terminal=tid, data=text.encode()), Deadline.after(5)
    )


def _fact(conn: Connection, name: str) -> bytes | None:
    reply = conn.call_expect(
        lambda rid: MetaGet(request_id=rid, key=f"phux.server.{name}"),
        MetadataValue,
        Deadline.after(5),
    )
    return reply.value


def test_an_idle_server_lets_its_helper_go_and_a_query_after_is_answered_rightly(
    server: ServerProcess,
) -> None:
    # After ``clear`` and ``abcdef`` the cursor is at row 1, column 7. The query
    # comes once every replica was idle past IDLE_S: put away, and the helper let
    # go; a new one is started and re-seeded from the journal's checkpoint to answer.
    assert server.proc is not None
    script = (
        "stty -echo; clear; printf 'abcdef'; read -r go; printf '\\033[6n'; "
        "IFS= read -rs -d R a; printf '\\n<%s>\\n' \"${a#*[}\"\r"
    )
    with server.connect() as conn:
        tid = spawn(conn, ["bash", "--norc", "--noprofile"], env=[], cols=80, rows=24)
        subscribe(conn, tid)
        stream = Stream(tid)
        _type(conn, tid, script)
        read_until(conn, stream, lambda s: b"abcdef" in s.data)
        deadline = Deadline.after(10)
        while _helpers(server.proc.pid) or _fact(conn, "replica_pids") != b"":
            assert not deadline.expired(), "the idle helper was not let go"
            time.sleep(0.05)
        _type(conn, tid, "go\r")
        read_until(conn, stream, lambda s: b">\r\n" in s.data)
        assert b"<1;7>" in stream.data
        assert _helpers(server.proc.pid)  # (started again)


# What the helper process needs is the engine: trio's import (ssl among its modules) is
# ~15 MB of a process, dataclasses' (inspect, ast, dis, tokenize) ~1 MB, msgspec's and
# click's are the server's and the CLI's. ARCHITECTURE.md, "Memory".
_NOT_IN_THE_HELPER = ("trio", "ssl", "dataclasses", "inspect", "msgspec", "click")

_HELPER_AT_WORK = """
import sys
from phux.server.replica_worker import FEED, NEW, WorkerCore
core = WorkerCore(100, 1 << 10, 1 << 20, 0.0)
out = []
core.handle((NEW, 1, 0, 80, 24, b""), out)
data = b"".join(b"line %d\\r\\n\\x1b[6n" % i for i in range(100))
core.handle((FEED, 1, 0, 0, 0, data), out)
assert core.replicas[1].engine is not None and out  # (parsed, answered, checkpointed)
print(" ".join(sorted(sys.modules)))
"""


def test_the_replica_helper_imports_the_engine_and_not_trio_dataclasses_or_msgspec() -> None:
    # A worker core that has built an engine, parsed, answered and checkpointed: every
    # module the helper process loads (its main loop adds only signal and fcntl).
    done = subprocess.run(
        [sys.executable, "-c", _HELPER_AT_WORK], capture_output=True, check=True, timeout=30
    )
    loaded = set(done.stdout.decode().split())
    assert {"phux.engine", "phux.engine.checkpoint"} <= loaded
    assert [m for m in _NOT_IN_THE_HELPER if m in loaded] == []

"""A 200 MB flood with replicas and compaction: byte-exact relay, bounded memory,
a responsive loop, and a small checkpointed bootstrap again once it is over."""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
from pathlib import Path

from phux.client.deadline import Deadline
from phux.wire.frames import ListTerminals, TerminalList
from server.harness import spawn
from server.test_flow import follow_to_close, go, started

from .helpers import read_bootstrap, replica_server

MB = 1_000_000
MiB = 1 << 20
JOURNAL = 1 * MiB
QUEUE = 64 * MiB
LAG = 32 * MiB  # ServerConfig.replica_lag_bytes
TOTAL = 200 * MB
LINES = """
def block(k):
    line = b"%08d " + b"log line " * 7 + b"\\r\\n"
    return b"".join(line % i for i in range(k * 10000, k * 10000 + 10000))
"""


def flood_program() -> list[str]:
    script = (
        "import os, tty\n"
        "tty.setraw(0)\n"
        "os.write(1, b'R')\n"
        "os.read(0, 1)\n" + LINES + f"total = {TOTAL}\n"
        "k = sent = 0\n"
        "while sent < total:\n"
        "    view = memoryview(block(k))[: total - sent]\n"
        "    sent += len(view)\n"
        "    k += 1\n"
        "    while view:\n"
        "        view = view[os.write(1, view):]\n"
    )
    return ["python3", "-c", script]


def expected_digest() -> str:
    scope: dict[str, object] = {}
    exec(LINES, scope)
    block = scope["block"]
    digest = hashlib.sha256()
    k = sent = 0
    while sent < TOTAL:
        data = block(k)[: TOTAL - sent]  # type: ignore[operator]
        digest.update(data)
        sent += len(data)
        k += 1
    return digest.hexdigest()


def _vm(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(key)


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def test_flood_relay_exact_memory_bounded_loop_responsive(tmp_path: Path) -> None:
    args = ("--journal-bytes", str(JOURNAL), "--subscriber-queue-bytes", str(QUEUE))
    with replica_server(tmp_path, *args) as server:
        assert server.proc is not None
        pid = server.proc.pid
        rtts: list[float] = []
        stop = threading.Event()

        def prober() -> None:
            with server.connect() as conn:
                while not stop.is_set():
                    start = time.perf_counter()
                    conn.call_expect(
                        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
                    )
                    rtts.append(time.perf_counter() - start)
                    stop.wait(0.02)

        with server.connect() as conn:
            tid = spawn(conn, flood_program())
            stream = started(conn, tid)
            worker = [p for p in _children(pid) if p != 0]
            baseline = _vm(pid, "VmRSS")
            thread = threading.Thread(target=prober)
            thread.start()
            try:
                go(conn, tid)
                digest, count = follow_to_close(conn, stream, timeout=100)
            finally:
                stop.set()
                thread.join(30)
        assert count == TOTAL
        assert digest == expected_digest()
        # Bounded: the subscriber's queue, the replica's allowed lag, the journal and
        # change; never anything like the 200 MB that went through.
        growth = _vm(pid, "VmHWM") - baseline
        assert growth < QUEUE + LAG + 48 * MiB, growth / MiB
        for child in worker:
            if child in _children(pid):  # the replica process: its engine and a buffer
                assert _vm(child, "VmHWM") < 200 * MiB
        assert rtts and statistics.median(rtts) < 0.1 and max(rtts) < 2.0, (
            statistics.median(rtts),
            max(rtts),
        )
        # Once the replica has caught up, bootstraps are small and checkpointed again.
        deadline = time.monotonic() + 60
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if boot.checkpoint is not None and len(boot.journal) <= JOURNAL:
                break
            assert time.monotonic() < deadline, "no checkpoint after the flood"
            time.sleep(0.2)
        assert boot.ready is not None and boot.ready.next_seq == TOTAL + 1
        assert boot.size < JOURNAL + 512 * 1024

"""A 200 MB flood with replicas and compaction: byte-exact relay, bounded memory,
a responsive loop, and an exact small bootstrap again once it is over."""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
from pathlib import Path

from phux.client.deadline import Deadline
from phux.wire.frames import ListTerminals, TerminalList
from server.harness import spawn
from server.test_flow import follow_to_close, go, pattern, producer, started

from .helpers import read_bootstrap, replica_server

MB = 1_000_000
MiB = 1 << 20
JOURNAL = 1 * MiB
QUEUE = 64 * MiB
LAG = 32 * MiB  # ServerConfig.replica_lag_bytes


def _vm(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(key)


def test_flood_relay_exact_memory_bounded_loop_responsive(tmp_path: Path) -> None:
    total = 200 * MB
    args = ("--journal-bytes", str(JOURNAL), "--subscriber-queue-bytes", str(QUEUE))
    with replica_server(tmp_path, *args) as server:
        assert server.proc is not None
        pid = server.proc.pid
        rtts: list[float] = []
        stop = threading.Event()

        def pinger() -> None:
            with server.connect() as conn:
                while not stop.is_set():
                    start = time.perf_counter()
                    conn.call_expect(
                        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
                    )
                    rtts.append(time.perf_counter() - start)
                    stop.wait(0.02)

        with server.connect() as conn:
            tid = spawn(conn, producer(total))
            stream = started(conn, tid)
            baseline = _vm(pid, "VmRSS")
            thread = threading.Thread(target=pinger)
            thread.start()
            try:
                go(conn, tid)
                digest, count = follow_to_close(conn, stream, timeout=120)
            finally:
                stop.set()
                thread.join(30)
        assert count == total
        assert digest == hashlib.sha256(pattern(0, total)).hexdigest()
        # Bounded: the subscriber's queue, the replica's allowed lag, the journal and
        # change; never anything like the 200 MB that went through.
        growth = _vm(pid, "VmHWM") - baseline
        assert growth < QUEUE + LAG + 48 * MiB, growth / MiB
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
        assert boot.ready is not None and boot.ready.next_seq == total + 1

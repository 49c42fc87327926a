"""Listing benchmarks: what LIST_TERMINALS costs the server with many terminals.

Every CLI verb starts with a listing to resolve its target, so its cost is
paid by every call and, while the server's loop builds it, by every other
client (issue 24 item 1, issue 28 item 2).

- **listing, server side**: the round trip of one LIST_TERMINALS on a raw
  socket (the reply's bytes are read, not decoded: the client's decoding is
  not the server's loop time) with N idle terminals (``sleep``, each with the
  metadata a ``phux new`` pane carries), median of many; baseline: a PING's
  round trip in the same run. Target: at most 5 ms with 1,000 terminals.
- **listing, loop time**: CPU time of the server's main thread (the trio loop;
  ``/proc/PID/schedstat``, nanoseconds) per LIST_TERMINALS over a run of them,
  which a loaded machine does not inflate as it does a round trip; baseline: the
  same per PING. Target: at most 5 ms with 1,000 terminals (issue 28 item 2).
  Also a filtered listing naming one terminal (since 1.4), the way a client
  resolves ``@N`` or a session name.
- **one-shot snapshot**: ``phux snapshot SESSION`` and ``phux snapshot @ID`` (a
  process each, start-up included) against a server with 1,000 terminals;
  baseline: the same against a server with one, the calls interleaved (median
  of 9). Target: at most 1.3x (issue 28 item 2: a verb resolves its target
  without listing every terminal).
- **listing, client decode**: decoding that reply into a TerminalList in
  this process; baseline: the server-side round trip above.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire import encode_frame
from phux.wire.frames import (
    Kill,
    ListTerminals,
    MetaEntry,
    Ping,
    Spawn,
    TerminalFilter,
    TerminalSpawned,
)
from phux.wire.framing import decode_frame
from tools.bench.bench_server import connect, phux_server
from tools.bench.harness import Measurement

BENCH = "listing"


def _metadata(index: int) -> list[MetaEntry]:
    """What a ``phux new`` pane carries, give or take."""
    pairs = {
        "phux.session": f"agent{index}",
        "phux.window": "0",
        "phux.window_name": "build",
        "phux.pane": "0",
        "phux.focus_ms": "1764208000000",
        "phux.shell": "bash",
        "phux.shell_key": os.urandom(16).hex(),
        "phux.tags": "ci,agent",
    }
    return [MetaEntry(key=k, value=v.encode()) for k, v in pairs.items()]


def _spawn_frame(rid: int, metadata: list[MetaEntry]) -> Spawn:
    return Spawn(request_id=rid, argv=["sleep", "3600"], metadata=metadata)


def spawn_many(conn: Connection, count: int) -> list[int]:
    """``count`` idle terminals, pipelined (one round trip each would take minutes)."""
    ids = []
    for start in range(0, count, 50):
        rids = [
            conn.submit(partial(_spawn_frame, metadata=_metadata(i)))
            for i in range(start, min(count, start + 50))
        ]
        for rid in rids:
            reply = conn.wait_reply(rid, Deadline.after(60))
            assert isinstance(reply, TerminalSpawned), reply
            ids.append(reply.terminal)
    return ids


def _raw_round_trip(sock: socket.socket, request: bytes) -> tuple[float, bytes]:
    """Seconds from sending ``request`` to holding its whole reply frame (not decoded)."""
    began = time.perf_counter()
    sock.sendall(request)
    buf = bytearray()
    while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("server closed")
        buf += chunk
    return time.perf_counter() - began, bytes(buf)


def listing_costs(conn: Connection, samples: int) -> tuple[float, float, float]:
    """Median seconds of (LIST_TERMINALS round trip, PING round trip, decoding the list)."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    sock.setblocking(True)
    try:
        lists, pings, decodes = [], [], []
        for i in range(samples):
            took, reply = _raw_round_trip(sock, encode_frame(ListTerminals(request_id=1 + i)))
            lists.append(took)
            took, _ = _raw_round_trip(sock, encode_frame(Ping(token=i)))
            pings.append(took)
            began = time.perf_counter()
            decode_frame(reply)
            decodes.append(time.perf_counter() - began)
    finally:
        sock.detach()
    return statistics.median(lists), statistics.median(pings), statistics.median(decodes)


def _loop_ns(pid: int) -> int:
    """CPU time of ``pid``'s main thread so far (the server's trio loop), in ns."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def loop_cpu(conn: Connection, pid: int, requests: list[bytes]) -> float:
    """Seconds of the server loop's CPU per request, over ``requests`` sent one by one."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    sock.setblocking(True)
    try:
        before = _loop_ns(pid)
        for request in requests:
            _raw_round_trip(sock, request)
        return (_loop_ns(pid) - before) / 1e9 / len(requests)
    finally:
        sock.detach()


def _snapshot_call(sock: Path, target: str) -> Callable[[], float]:
    env = {**os.environ, "PHUX_SOCKET": str(sock)}
    argv = [sys.executable, "-m", "phux", "snapshot", target]

    def call() -> float:
        began = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, timeout=60)
        return time.perf_counter() - began

    return call


def snapshot_latencies(
    one: tuple[Path, int], many: tuple[Path, int], repeat: int
) -> dict[str, tuple[float, float]]:
    """Median seconds of ``phux snapshot`` by session name and by id: (many, one)."""
    out = {}
    for kind in ("session", "id"):
        calls = []
        for sock, tid in (many, one):
            calls.append(_snapshot_call(sock, "agent0" if kind == "session" else f"@{tid}"))
        times: list[list[float]] = [[], []]
        for _ in range(repeat):
            for i, call in enumerate(calls):
                times[i].append(call())
        out[kind] = (statistics.median(times[0]), statistics.median(times[1]))
    return out


def run(quick: bool) -> list[Measurement]:
    count = 200 if quick else 1000
    samples = 10 if quick else 30
    out: list[Measurement] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        phux_server(Path(tmp) / "many") as (sock, proc),
        connect(sock) as conn,
        phux_server(Path(tmp) / "one") as (sock_one, _),
        connect(sock_one) as conn_one,
    ):
        ids = spawn_many(conn, count)
        (one_id,) = spawn_many(conn_one, 1)
        snapshots = snapshot_latencies((sock_one, one_id), (sock, ids[0]), 5 if quick else 9)
        listed, ping, decoded = listing_costs(conn, samples)
        calls = 50 if quick else 200
        cpu_list = loop_cpu(
            conn, proc.pid, [encode_frame(ListTerminals(request_id=i + 1)) for i in range(calls)]
        )
        cpu_ping = loop_cpu(conn, proc.pid, [encode_frame(Ping(token=i)) for i in range(calls)])
        one = TerminalFilter(terminals=[ids[len(ids) // 2]])
        cpu_one = loop_cpu(
            conn,
            proc.pid,
            [encode_frame(ListTerminals(request_id=i + 1, filter=one)) for i in range(calls)],
        )
        conn.call(lambda rid: Kill(request_id=rid, terminals=ids), Deadline.after(60))
    out.append(
        Measurement(
            BENCH,
            f"LIST_TERMINALS round trip, {count} terminals",
            "ms",
            listed * 1000,
            "PING round trip",
            ping * 1000,
            higher_is_better=False,
            target="<= 5 ms",
        )
    )
    out.append(
        Measurement(
            BENCH,
            f"LIST_TERMINALS loop CPU, {count} terminals",
            "ms",
            cpu_list * 1000,
            "PING loop CPU",
            cpu_ping * 1000,
            higher_is_better=False,
            target="<= 5 ms",
        )
    )
    out.append(
        Measurement(
            BENCH,
            f"LIST_TERMINALS of one id, loop CPU, {count} terminals",
            "ms",
            cpu_one * 1000,
            "PING loop CPU",
            cpu_ping * 1000,
            higher_is_better=False,
        )
    )
    for kind, (many_s, one_s) in snapshots.items():
        out.append(
            Measurement(
                BENCH,
                f"phux snapshot by {kind}, {count} terminals",
                "ms",
                many_s * 1000,
                "the same, 1 terminal",
                one_s * 1000,
                higher_is_better=False,
                target="ratio >= 0.77 (<= 1.3x as slow)",
            )
        )
    out.append(
        Measurement(
            BENCH,
            f"client decode of the list, {count} terminals",
            "ms",
            decoded * 1000,
            "LIST_TERMINALS round trip",
            listed * 1000,
            higher_is_better=False,
        )
    )
    return out

"""The input audit and the server's published facts, on a real server process."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import msgspec
from tests.server.harness import ServerProcess, next_of, spawn

from phux import __version__
from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.models import AuditEntry
from phux.runtime_paths import default_audit_path
from phux.wire.frames import (
    Input,
    ListTerminals,
    MetadataChanged,
    MetaEntry,
    MetaSubscribe,
    TerminalList,
)

T = 5.0


def audit_path(server: ServerProcess) -> Path:
    return Path(default_audit_path(server.socket.absolute(), server.log.absolute()))


def entries(path: Path) -> list[dict[str, object]]:
    lines = path.read_bytes().splitlines()
    for line in lines:  # each line is the documented shape, exactly
        assert msgspec.json.decode(line, type=AuditEntry, strict=True)
    return [json.loads(line) for line in lines]


def send(conn: Connection, terminal: int, data: bytes) -> None:
    conn.call(lambda rid: Input(request_id=rid, terminal=terminal, data=data), Deadline.after(T))


def open_as(server: ServerProcess, name: str) -> Connection:
    return Connection.open(server.socket, Deadline.after(T), client_name=name)


def test_input_from_two_clients_names_both(server: ServerProcess) -> None:
    with open_as(server, "alpha") as a, open_as(server, "beta") as b:
        tid = spawn(a, ["cat"], metadata=[MetaEntry(key="phux.session", value=b"w")])
        send(a, tid, b"hello\r")
        send(b, tid, b"secret\r")
        server_id = a.hello.server_id if a.hello else ""
    got = entries(audit_path(server))
    assert [e["client"] for e in got] == [f"alpha/{__version__}", f"beta/{__version__}"]
    for entry, data in zip(got, [b"hello\r", b"secret\r"], strict=True):
        assert entry["terminal"] == tid
        assert entry["target"] == "w:0.0"
        assert entry["server_id"] == server_id
        assert entry["pid"] == os.getpid()
        assert entry["uid"] == os.getuid()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert "data_base64" not in entry  # the bytes only when asked for
    assert b"secret" not in audit_path(server).read_bytes()
    assert audit_path(server).stat().st_mode & 0o777 == 0o600


def test_audit_survives_a_restart(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    server.start()
    try:
        with server.connect() as conn:
            send(conn, spawn(conn, ["cat"]), b"before")
    finally:
        server.stop()
    server = ServerProcess(tmp_path)
    server.start()
    try:
        with server.connect() as conn:
            send(conn, spawn(conn, ["cat"]), b"after")
    finally:
        server.stop()
    got = entries(audit_path(server))
    assert [e["bytes"] for e in got] == [6, 5]
    assert got[0]["server_id"] != got[1]["server_id"]


def test_rotation_by_size_keeps_n_files(tmp_path: Path) -> None:
    env = dict(os.environ, PHUX_AUDIT_KEEP="2")
    server = ServerProcess(tmp_path, "--audit-max-bytes", "1000", env=env)
    server.start()
    try:
        with server.connect() as conn:
            tid = spawn(conn, ["cat"])
            for i in range(40):
                send(conn, tid, b"%d" % i)
    finally:
        server.stop()
    path = audit_path(server)
    rotated = [Path(f"{path}.{n}") for n in (1, 2)]
    assert all(p.exists() for p in rotated)
    assert not Path(f"{path}.3").exists()
    for p in [path, *rotated]:
        assert 0 < p.stat().st_size <= 1000
    newest = entries(path)
    assert newest[-1]["sha256"] == hashlib.sha256(b"39").hexdigest()
    older = entries(rotated[0])
    assert older[-1]["time_ms"] <= newest[0]["time_ms"]  # .1 holds what came just before


def test_audit_data_keeps_the_bytes_when_asked(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--audit-data")
    server.start()
    try:
        with server.connect() as conn:
            send(conn, spawn(conn, ["cat"]), b"\x1b[Aok")
    finally:
        server.stop()
    (entry,) = entries(audit_path(server))
    assert base64.b64decode(str(entry["data_base64"])) == b"\x1b[Aok"


def test_server_publishes_its_facts(server: ServerProcess) -> None:
    with server.connect() as conn:
        conn.call(
            lambda rid: MetaSubscribe(request_id=rid, prefix="phux.server."), Deadline.after(T)
        )
        listing = conn.call_expect(
            lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
        )
        facts = {e.key: e.value for e in listing.global_metadata}
        assert facts["phux.server.version"] == __version__.encode()
        assert int(facts["phux.server.started_ms"]) > 0
        assert facts["phux.server.replicas"] in (b"auto", b"process", b"thread", b"off")
        assert facts["phux.server.audit_file"] == os.fsencode(audit_path(server))
        # The harness's readiness probe (connect, close) is a connection too, counted
        # until the server has read its EOF: on a loaded machine that can come after
        # this listing, or after the subscription (a change to 1 is then queued).
        assert facts["phux.server.clients"] in (b"1", b"2")
        clients = {"key": "phux.server.clients"}
        if facts["phux.server.clients"] == b"2":
            next_of(conn, MetadataChanged, Deadline.after(T), **clients, value=b"1")
        with server.connect():
            next_of(conn, MetadataChanged, Deadline.after(T), **clients, value=b"2")
        next_of(conn, MetadataChanged, Deadline.after(T), **clients, value=b"1")


def test_no_audit_keeps_nothing(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--no-audit")
    server.start()
    try:
        with server.connect() as conn:
            send(conn, spawn(conn, ["cat"]), b"quiet")
            listing = conn.call_expect(
                lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
            )
    finally:
        server.stop()
    assert "phux.server.audit_file" not in {e.key for e in listing.global_metadata}
    assert not list(tmp_path.glob("audit-*"))

"""What the server says about itself (``phux status``) and what it recorded (``phux audit``).

Status is one HELLO and one TERMINAL_LIST: HELLO_OK carries the pid, the
protocol version and the server id, TERMINAL_LIST the terminals and the
global metadata, where the server publishes the facts the wire does not
carry (``phux.server.*``, spec/L3.md §3).

The audit is a JSON-lines file on the server's machine. The client reads it
only when the server is local (the path comes from ``phux.server.audit_file``,
or, with no server running, from the default rule); for a server on another
host it says so and names the command to run there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import msgspec

from phux.client.client import Client
from phux.client.deadline import Deadline
from phux.client.errors import InvalidArgument, NoServer
from phux.client.models import AuditEntry, AuditResult, ServerStatus
from phux.client.selectors import split_host
from phux.runtime_paths import default_audit_path, default_log_path
from phux.wire.frames import ListTerminals, TerminalList

FACT_PREFIX = "phux.server."


def server_facts(client: Client, deadline: Deadline) -> tuple[TerminalList, dict[str, str]]:
    """The server's TERMINAL_LIST and its published facts (``phux.server.`` stripped)."""
    reply = client.connection(deadline).call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, deadline
    )
    facts = {
        e.key[len(FACT_PREFIX) :]: e.value.decode("utf-8", "replace")
        for e in reply.global_metadata
        if e.key.startswith(FACT_PREFIX)
    }
    return reply, facts


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process on this machine that belongs to us, else None."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return None
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def server_status(client: Client, deadline: Deadline) -> ServerStatus:
    conn = client.connection(deadline)
    hello = conn.hello
    assert hello is not None  # set by the handshake
    reply, facts = server_facts(client, deadline)
    started = _int(facts.get("started_ms"))
    local = client.host is None
    return ServerStatus(
        socket=client.socket_path if local else (client._socket_arg or "(default)"),
        host=client.host,
        pid=hello.pid,
        server_id=hello.server_id,
        protocol=f"{hello.major}.{hello.minor}.{hello.patch}",
        version=facts.get("version"),
        started_ms=started,
        uptime_s=None if started is None else round(max(0.0, time.time() - started / 1000), 3),
        terminals=sum(1 for t in reply.terminals if t.alive),
        clients=_int(facts.get("clients")),
        replicas=facts.get("replicas"),
        rss_bytes=rss_bytes(hello.pid) if local else None,
        audit_file=facts.get("audit_file"),
    )


# ---------------------------------------------------------------- the audit


def audit_files(path: str) -> list[str]:
    """The audit file and its rotated predecessors, oldest first."""
    old: list[tuple[int, str]] = []
    directory, name = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        names = []
    for other in names:
        head, _, suffix = other.rpartition(".")
        if head == name and suffix.isdigit():
            old.append((int(suffix), os.path.join(directory, other)))
    return [p for _, p in sorted(old, reverse=True)] + [path]


def read_audit(paths: Iterable[str]) -> list[AuditEntry]:
    """Every entry of these files in order; a torn or foreign line is skipped."""
    decoder = msgspec.json.Decoder(AuditEntry)
    found: list[AuditEntry] = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                found.append(decoder.decode(line))
            except msgspec.DecodeError:
                continue
    return found


def audit(
    client: Client,
    target: str | None,
    deadline: Deadline,
) -> AuditResult:
    """The audit entries of TARGET's terminal on the running server, or with no
    TARGET every entry of the file (every terminal, every server run)."""
    host = client.host or split_host(target)[0]
    if host is not None:
        raise InvalidArgument(
            f"the input audit is a file on {host}; phux reads it only on this machine",
            remedy=f"run `ssh {host} phux audit` there",
        )
    try:
        client.connection(deadline)
    except NoServer:
        if target is not None:
            raise
        # The file a server started here with the default log would write.
        path = default_audit_path(
            client.socket_path, default_log_path(client.socket_path, client.env)
        )
        return AuditResult(audit_file=path, entries=read_audit(audit_files(path)))
    _, facts = server_facts(client, deadline)
    published = facts.get("audit_file")
    if published is None:
        raise InvalidArgument(
            "this server keeps no input audit", remedy="restart it with a newer phux"
        )
    path = published
    entries = read_audit(audit_files(path))
    if target is not None:
        pane = client.resolve(target, deadline)
        hello = client.connection(deadline).hello
        server_id = hello.server_id if hello is not None else ""
        entries = [e for e in entries if e.server_id == server_id and e.terminal == pane.terminal]
    return AuditResult(audit_file=path, entries=entries)

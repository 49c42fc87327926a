"""What the server says about itself (``phux status``) and what it recorded (``phux audit``).

Status is one HELLO and one TERMINAL_LIST: HELLO_OK carries the pid, the
protocol version and the server id, TERMINAL_LIST the terminals and the
global metadata, where the server publishes the facts the wire does not
carry (``phux.server.*``, spec/L3.md §3).

The audit is a JSON-lines file on the server's machine. A running server of
protocol 1.3 or later reads it for the client (LIST_AUDIT), which works the
same over ``--host``; with no server running the client reads the file itself
(the audit outlives the server), from the default rule's path, and so it does
for a local server of an older minor. Both end as the same AuditEntry values.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterable

import msgspec

from phux.client.core import ClientCore
from phux.client.deadline import Deadline
from phux.client.errors import InvalidArgument, NoServer, ServerTooOld
from phux.client.models import AuditEntry, AuditResult, ServerStatus
from phux.runtime_paths import default_audit_path, default_log_path
from phux.wire.frames import AuditList, AuditRecord, ListAudit, ListTerminals, TerminalList
from phux.wire.handshake import MINOR_AUDIT

FACT_PREFIX = "phux.server."


def server_facts(client: ClientCore, deadline: Deadline) -> tuple[TerminalList, dict[str, str]]:
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


def server_status(client: ClientCore, deadline: Deadline) -> ServerStatus:
    conn = client.connection(deadline)
    hello = conn.hello
    assert hello is not None  # set by the handshake
    reply, facts = server_facts(client, deadline)
    started = _int(facts.get("started_ms"))
    local = client.host is None
    replica_pids = [int(p) for p in facts.get("replica_pids", "").split() if p.isdigit()]
    # Here, /proc says it now; a server on another machine publishes it (L3 §3).
    rss = rss_bytes(hello.pid) if local else _int(facts.get("rss_bytes"))
    replica_rss = None if local else _int(facts.get("replica_rss_bytes"))
    if local and replica_pids:
        sizes = [rss_bytes(p) for p in replica_pids]
        if all(size is not None for size in sizes):
            replica_rss = sum(size for size in sizes if size is not None)
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
        rss_bytes=rss,
        replica_pids=replica_pids,
        replica_rss_bytes=replica_rss,
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
    client: ClientCore,
    target: str | None,
    deadline: Deadline,
    *,
    last: int | None = None,
    since_ms: int = 0,
) -> AuditResult:
    """The audit entries of TARGET's terminal on the running server, or with no
    TARGET every entry the audit holds (every terminal, every server run), oldest
    first: at most the newest ``last``, none before ``since_ms`` (Unix ms)."""
    if target is not None:
        target = client._target_host(target)  # HOST/selector: the server on HOST
    host = client.host
    try:
        conn = client.connection(deadline)
    except NoServer:
        if target is not None or host is not None:
            raise
        # The file a server started here with the default log would write.
        path = default_audit_path(
            client.socket_path, default_log_path(client.socket_path, client.env)
        )
        return _from_file(path, None, None, last, since_ms)
    terminal = None if target is None else client.resolve(target, deadline).terminal
    if conn.minor >= MINOR_AUDIT:
        reply = conn.call_expect(
            lambda rid: ListAudit(
                request_id=rid,
                terminal=terminal,
                limit=0 if last is None else max(1, last),
                since_ms=since_ms,
            ),
            AuditList,
            deadline,
        )
        if not reply.audit_file:
            raise _no_audit()
        entries = [_entry(r) for r in reply.entries]
        if last == 0:
            entries = []
        return AuditResult(
            audit_file=reply.audit_file,
            host=client.host,
            entries=entries,
            truncated=reply.truncated and last is None,
        )
    # A server of protocol 1.2 or older: only its own machine can read the file.
    if host is not None:
        raise ServerTooOld(
            f"phux on {host} speaks protocol 1.{conn.minor}: it cannot send its input "
            f"audit (that needs 1.{MINOR_AUDIT})",
            remedy=f"run `ssh {host} phux audit` there, or restart that server with a newer phux",
        )
    _, facts = server_facts(client, deadline)
    published = facts.get("audit_file")
    if published is None:
        raise _no_audit()
    hello = conn.hello
    server_id = hello.server_id if hello is not None else ""
    return _from_file(published, server_id, terminal, last, since_ms)


def _no_audit() -> InvalidArgument:
    return InvalidArgument(
        "this server keeps no input audit (it runs with --no-audit)",
        remedy="restart it without --no-audit",
    )


def _entry(record: AuditRecord) -> AuditEntry:
    return AuditEntry(
        time_ms=record.time_ms,
        server_id=record.server_id,
        terminal=record.terminal,
        target=record.target,
        client=record.client,
        pid=record.pid,
        uid=record.uid,
        bytes=record.size,
        sha256=record.sha256,
        data_base64=None if record.data is None else base64.b64encode(record.data).decode(),
    )


def _from_file(
    path: str,
    server_id: str | None,
    terminal: int | None,
    last: int | None,
    since_ms: int,
) -> AuditResult:
    """The entries of the audit file on this machine, chosen as LIST_AUDIT chooses them."""
    entries = [
        e
        for e in read_audit(audit_files(path))
        if e.time_ms >= since_ms
        and (terminal is None or (e.server_id == server_id and e.terminal == terminal))
    ]
    if last is not None:
        entries = entries[len(entries) - last :] if last else []
    return AuditResult(audit_file=path, host=None, entries=entries)

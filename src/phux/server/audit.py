"""The input audit: who wrote which input to which terminal, and when.

One JSON object a line (the shape is ``AuditEntry`` in phux.client.models,
held to these lines by a test), appended to a file beside the server's log so
it outlives the server, and rotated by size (``FILE.1`` the newest old file).
A line is a few hundred bytes, written with one ``os.write`` on an
``O_APPEND`` descriptor straight from the event loop: a page-cache append,
microseconds, which is cheaper than handing it to a thread. The input bytes
themselves are kept only when ``audit_data`` is on.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

from phux.runtime_paths import open_private
from phux.server.log import log
from phux.wire.frames import AuditRecord


class AuditLog:
    def __init__(self, path: Path, max_bytes: int, keep: int, record_data: bool) -> None:
        self.path = path
        self.max_bytes = max(1, max_bytes)
        self.keep = max(0, keep)
        self.record_data = record_data
        self._fd = -1
        self._size = 0
        self._broken = False

    def _open(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = open_private(self.path)
        self._size = os.fstat(self._fd).st_size

    def _rotate(self) -> None:
        os.close(self._fd)
        self._fd = -1
        name = os.fspath(self.path)
        if self.keep == 0:
            os.unlink(name)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{name}.{self.keep}")
            for n in range(self.keep - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(f"{name}.{n}", f"{name}.{n + 1}")
            os.rename(name, f"{name}.1")
        self._open()

    def record(
        self,
        *,
        server_id: str,
        terminal: int,
        target: str | None,
        client: str,
        pid: int,
        uid: int,
        data: bytes,
    ) -> None:
        if self._broken:
            return
        entry: dict[str, object] = {
            "time_ms": time.time_ns() // 1_000_000,
            "server_id": server_id,
            "terminal": terminal,
            "target": target,
            "client": client,
            "pid": pid,
            "uid": uid,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if self.record_data:
            entry["data_base64"] = base64.b64encode(data).decode("ascii")
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        try:
            if self._fd < 0:
                self._open()
            if self._size and self._size + len(line) > self.max_bytes:
                self._rotate()
            os.write(self._fd, line)
            self._size += len(line)
        except OSError as exc:
            # The audit must never take input down with it: say so once and stop.
            log.error("input audit disabled: cannot write %s: %s", self.path, exc)
            self._broken = True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


MAX_ENTRIES = 10_000
"""The most entries one LIST_AUDIT answers (its ``limit`` 0 means this many)."""
MAX_REPLY_BYTES = 8 * 1024 * 1024
"""About how large one AUDIT_LIST may grow (entries with their bytes kept can be big)."""


def read_entries(
    path: Path,
    keep: int,
    *,
    server_id: str | None,
    terminal: int | None,
    since_ms: int,
    limit: int,
) -> tuple[list[AuditRecord], bool]:
    """The newest ``limit`` entries that match, oldest first, and whether older matching
    ones were left out. Reads the rotated files newest first and stops once it has
    enough; run it in a thread (it reads and parses up to ``keep + 1`` files).

    ``server_id`` and ``terminal`` go together: terminal ids are one server life's."""
    want = MAX_ENTRIES if limit <= 0 else min(limit, MAX_ENTRIES)
    found: list[AuditRecord] = []
    size = 0
    name = os.fspath(path)
    for n in range(max(0, keep) + 1):
        try:
            with open(name if n == 0 else f"{name}.{n}", "rb") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("input audit: cannot read %s: %s", name, exc)
            continue
        for line in reversed(lines):
            record = _parse(line)
            if record is None or record.time_ms < since_ms:
                continue
            if terminal is not None and (
                record.terminal != terminal or record.server_id != server_id
            ):
                continue
            size += 256 + len(record.data or b"")
            if len(found) >= want or (found and size > MAX_REPLY_BYTES):
                found.reverse()
                return found, True
            found.append(record)
    found.reverse()
    return found, False


def _parse(line: bytes) -> AuditRecord | None:
    """One line as AuditLog.record writes it; None for a torn or foreign line."""
    try:
        obj = json.loads(line)
        raw = obj.get("data_base64")
        record = AuditRecord(
            time_ms=int(obj["time_ms"]),
            server_id=str(obj["server_id"]),
            terminal=int(obj["terminal"]),
            client=str(obj["client"]),
            pid=int(obj["pid"]),
            uid=int(obj["uid"]),
            size=int(obj["bytes"]),
            sha256=str(obj["sha256"]),
            target=None if obj.get("target") is None else str(obj["target"]),
            data=None if raw is None else base64.b64decode(raw, validate=True),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    numbers = (record.time_ms, record.terminal, record.pid, record.uid, record.size)
    if min(numbers) < 0 or max(numbers[1:4]) > 0xFFFFFFFF:
        return None  # not one of ours: it could not go on the wire
    return record

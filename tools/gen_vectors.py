"""Generate the wire test vectors in ``spec/vectors/`` from the frame catalog.

``python -m tools.gen_vectors`` rewrites ``spec/vectors/frames.json`` and
``spec/vectors/malformed.json``; ``--check`` only reports whether they are
current (tests/wire/test_vectors.py runs the same comparison).

JSON mapping of field values (also stated in spec/vectors/README.md):

- integers (u8 .. u64, i32, i64) and enums: JSON numbers (exact integers);
- bool: true / false;  string: JSON string;  bytes: lowercase hex string;
- an optional field that is absent: null;
- a list: JSON array;  a record (nested struct): JSON object of its fields;
- a tagged union value: ``{"tag": N, "variant": "Name", "fields": {...}}``.

Every field of the frame appears in ``fields``, defaults included.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phux.record import Record, fields
from phux.wire import frames as f
from phux.wire.errors import DecodeReason, DetachReason, ErrorCode
from phux.wire.frames import ALL_FRAMES, Frame
from phux.wire.framing import decode_frame, encode_frame
from phux.wire.handshake import PROTOCOL_VERSION
from phux.wire.tlv import IntSpec, WireType, encode_varint, spec_name, union_tag

ROOT = Path(__file__).resolve().parent.parent
VECTORS_DIR = ROOT / "spec" / "vectors"
FRAMES_JSON = VECTORS_DIR / "frames.json"
MALFORMED_JSON = VECTORS_DIR / "malformed.json"

JSON = Any


def frame_name(cls: type[Frame]) -> str:
    """The spec's name of a frame class: ``MetaGet`` -> ``META_GET`` (the wire's own rule)."""
    return spec_name(cls)


FRAMES_BY_NAME: dict[str, type[Frame]] = {frame_name(c): c for c in ALL_FRAMES}


# ---------------------------------------------------------------- JSON mapping


def to_json(value: Any) -> JSON:
    """A decoded field value as JSON (see the module docstring)."""
    if isinstance(value, Record):
        obj = {info.name: to_json(getattr(value, info.name)) for info in fields(type(value))}
        tag = union_tag(type(value))
        if tag is not None:
            return {"tag": tag, "variant": type(value).__name__, "fields": obj}
        return obj
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"no JSON mapping for {value!r}")


def _struct_from_json(cls: type[Record], obj: JSON) -> Record:
    kwargs = {}
    for info in fields(cls):
        if info.name in obj:
            kwargs[info.name] = from_json(info.annotation, obj[info.name])
    unknown = set(obj) - set(kwargs)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    return cls(**kwargs)


def from_json(tp: Any, obj: JSON) -> Any:
    """Build a field value of annotated type ``tp`` from its JSON form."""
    if isinstance(tp, type) and issubclass(tp, IntSpec):
        return obj
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if obj is None and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return from_json(members[0], obj)
        for member in members:
            if member.__name__ == obj["variant"]:
                return _struct_from_json(member, obj["fields"])
        raise ValueError(f"unknown variant {obj['variant']!r}")
    if origin is list:
        (item,) = typing.get_args(tp)
        return [from_json(item, v) for v in obj]
    if tp is bytes:
        return bytes.fromhex(obj)
    if tp in (str, bool, int):
        return obj
    if isinstance(tp, type) and issubclass(tp, Record):
        return _struct_from_json(tp, obj)
    raise TypeError(f"no JSON mapping for {tp!r}")


def frame_from_json(name: str, fields: JSON) -> Frame:
    cls = FRAMES_BY_NAME[name]
    frame = _struct_from_json(cls, fields)
    assert isinstance(frame, Frame)
    return frame


# ---------------------------------------------------------------- the cases

V = PROTOCOL_VERSION
META = [
    f.MetaEntry(key="phux.session", value=b"work"),
    f.MetaEntry(key="phux.window", value=b"0"),
]


def canonical_cases() -> list[tuple[str, Frame]]:
    """(name, frame) for every vector that re-encodes to the same bytes."""
    info_alive = f.TerminalInfo(
        terminal=1,
        pid=4242,
        cols=80,
        rows=24,
        alive=True,
        viewers=1,
        primaries=1,
        next_seq=1234,
        created_ms=1_763_770_000_000,
        metadata=META,
        foreground=f.Foreground(pgrp=4242, name="bash", argv=["-bash"], echo=True, canonical=True),
    )
    info_dead = f.TerminalInfo(
        terminal=2,
        pid=4243,
        cols=100,
        rows=30,
        alive=False,
        exit=f.Signaled(signal=1),
        next_seq=7,
        created_ms=1_763_770_000_500,
    )
    return [
        ("HELLO", f.Hello(client_name="phux-cli", major=V[0], minor=V[1], patch=V[2])),
        (
            "HELLO with capabilities",
            f.Hello(client_name="x", major=1, minor=0, patch=7, capabilities=["a", "b.c"]),
        ),
        ("DETACH", f.Detach()),
        ("INPUT", f.Input(request_id=7, terminal=1, data=b"echo hi\r")),
        ("INPUT empty data", f.Input(request_id=8, terminal=1, data=b"")),
        ("INPUT piece of a unit", f.Input(request_id=9, terminal=1, data=b"make", more=True)),
        ("INPUT urgent", f.Input(request_id=10, terminal=1, data=b"\x03", urgent=True)),
        ("SPAWN defaults", f.Spawn(request_id=1)),
        (
            "SPAWN full",
            f.Spawn(
                request_id=2,
                argv=["/bin/sh", "-c", "echo hi"],
                cwd="/tmp",
                env=[f.EnvVar(name="LANG", value="C.UTF-8")],
                cols=120,
                rows=40,
                metadata=[f.MetaEntry(key="phux.session", value=b"work")],
                unique_keys=["phux.session"],
            ),
        ),
        ("RESIZE", f.Resize(request_id=3, terminal=1, cols=132, rows=43)),
        ("SEND_SIGNAL", f.SendSignal(request_id=4, terminal=1, signal=f.Signal.INT)),
        ("KILL", f.Kill(request_id=5, terminals=[1, 2, 300])),
        ("KILL empty list", f.Kill(request_id=6, terminals=[])),
        ("LIST_TERMINALS", f.ListTerminals(request_id=9)),
        (
            "LIST_TERMINALS of one session",
            f.ListTerminals(
                request_id=27,
                filter=f.TerminalFilter(
                    metadata=[f.MetaEntry(key="phux.session", value=b"work")],
                    global_prefixes=["phux.notes."],
                ),
            ),
        ),
        (
            "LIST_TERMINALS of two ids",
            f.ListTerminals(request_id=28, filter=f.TerminalFilter(terminals=[7, 3])),
        ),
        ("LIST_AUDIT everything", f.ListAudit(request_id=25)),
        (
            "LIST_AUDIT one terminal",
            f.ListAudit(request_id=26, terminal=1, limit=100, since_ms=1_763_770_000_000),
        ),
        ("SUBSCRIBE viewer", f.Subscribe(request_id=10, terminal=1)),
        (
            "SUBSCRIBE primary",
            f.Subscribe(request_id=11, terminal=1, role=f.Role.PRIMARY, cols=80, rows=24),
        ),
        ("SUBSCRIBE with input", f.Subscribe(request_id=24, terminal=1, input=True)),
        ("SUBSCRIBE_EVENTS", f.SubscribeEvents(request_id=12)),
        ("UNSUBSCRIBE", f.Unsubscribe(request_id=13, terminal=1)),
        ("META_GET global", f.MetaGet(request_id=14, key="theme")),
        ("META_GET terminal", f.MetaGet(request_id=15, key="phux.session", terminal=1)),
        ("META_SET", f.MetaSet(request_id=16, key="phux.tags", value=b"build,ci", terminal=1)),
        ("META_SET global empty value", f.MetaSet(request_id=17, key="k", value=b"")),
        ("META_DELETE", f.MetaDelete(request_id=18, key="phux.tags", terminal=1)),
        ("META_LIST", f.MetaList(request_id=19, prefix="phux.")),
        ("META_LIST default prefix", f.MetaList(request_id=20)),
        ("META_SUBSCRIBE", f.MetaSubscribe(request_id=21, prefix="phux.")),
        ("META_UNSUBSCRIBE", f.MetaUnsubscribe(request_id=22, subscription=21)),
        ("SHUTDOWN", f.Shutdown(request_id=23)),
        ("PING", f.Ping(token=0x0102030405060708)),
        ("PING default token", f.Ping()),
        (
            "HELLO_OK",
            f.HelloOk(
                server_name="phux",
                major=V[0],
                minor=V[1],
                patch=V[2],
                server_id="3f2a9c",
                pid=1000,
                journal_bytes=1 << 20,
            ),
        ),
        (
            "DETACHED",
            f.Detached(reason=DetachReason.SERVER_SHUTDOWN, message="server shutting down"),
        ),
        ("OUTPUT", f.Output(terminal=1, seq=0, data=b"hi\r\n")),
        ("OUTPUT large seq", f.Output(terminal=1, seq=(1 << 40) + 5, data=b"\x1b[31mred\x1b[0m")),
        ("INPUT_WRITTEN", f.InputWritten(terminal=1, seq=4, data=b"ls\r")),
        (
            "INPUT_WRITTEN reply",
            f.InputWritten(terminal=1, seq=9, data=b"\x1b[?62;22c", reply=True),
        ),
        ("RESIZED", f.Resized(terminal=1, seq=4, cols=100, rows=30)),
        (
            "BOOTSTRAP_BEGIN",
            f.BootstrapBegin(request_id=10, terminal=1, start_seq=0, cols=80, rows=24),
        ),
        (
            "BOOTSTRAP_BEGIN after tombstone",
            f.BootstrapBegin(request_id=0, terminal=1, start_seq=4096, cols=80, rows=24),
        ),
        ("BOOTSTRAP_CHUNK journal", f.BootstrapChunk(terminal=1, seq=0, data=b"$ ")),
        (
            "BOOTSTRAP_CHUNK checkpoint",
            f.BootstrapChunk(terminal=1, seq=4096, data=b"\x1b[H\x1b[2J$ ", checkpoint=True),
        ),
        ("BOOTSTRAP_READY alive", f.BootstrapReady(terminal=1, next_seq=2, cols=80, rows=24)),
        (
            "BOOTSTRAP_READY exited",
            f.BootstrapReady(
                terminal=1, next_seq=9, cols=80, rows=24, alive=False, exit=f.Exited(code=3)
            ),
        ),
        (
            "TOMBSTONE",
            f.Tombstone(terminal=1, reason=f.TombstoneReason.LAG, lost_seq=1 << 22),
        ),
        (
            "TERMINAL_CLOSED exited",
            f.TerminalClosed(terminal=1, status=f.Exited(code=0), final_seq=9),
        ),
        (
            "TERMINAL_CLOSED negative code",
            f.TerminalClosed(terminal=1, status=f.Exited(code=-1), final_seq=9),
        ),
        (
            "TERMINAL_CLOSED signaled",
            f.TerminalClosed(terminal=2, status=f.Signaled(signal=9), final_seq=0),
        ),
        (
            "TERMINAL_SPAWNED reply",
            f.TerminalSpawned(terminal=1, pid=4242, cols=80, rows=24, request_id=2, metadata=META),
        ),
        ("TERMINAL_SPAWNED event", f.TerminalSpawned(terminal=1, pid=4242, cols=80, rows=24)),
        (
            "ERROR reply",
            f.Error(code=ErrorCode.TERMINAL_NOT_FOUND, message="no terminal 99", request_id=5),
        ),
        (
            "ERROR connection",
            f.Error(code=ErrorCode.UNKNOWN_MESSAGE_TYPE, message="unknown frame type 0x70"),
        ),
        ("OK", f.Ok(request_id=16)),
        ("TERMINAL_LIST empty", f.TerminalList(request_id=9)),
        ("AUDIT_LIST no audit", f.AuditList(request_id=25)),
        (
            "AUDIT_LIST",
            f.AuditList(
                request_id=26,
                entries=[
                    f.AuditRecord(
                        time_ms=1_763_770_000_123,
                        server_id="3f2a9c",
                        terminal=1,
                        client="phux-cli/0.1.0",
                        pid=5151,
                        uid=1000,
                        size=3,
                        sha256=hashlib.sha256(b"ls\r").hexdigest(),
                        target="work:0.0",
                    ),
                    f.AuditRecord(
                        time_ms=1_763_770_000_456,
                        server_id="3f2a9c",
                        terminal=1,
                        client="phux-mcp/0.1.0",
                        pid=5152,
                        uid=1000,
                        size=1,
                        sha256=hashlib.sha256(b"\x03").hexdigest(),
                        data=b"\x03",
                    ),
                ],
                audit_file="/run/user/1000/phux/audit-1a2b3c.jsonl",
                truncated=True,
            ),
        ),
        (
            "TERMINAL_LIST",
            f.TerminalList(
                request_id=9,
                terminals=[info_alive, info_dead],
                global_metadata=[f.MetaEntry(key="theme", value=b"dark")],
            ),
        ),
        (
            "METADATA_CHANGED set",
            f.MetadataChanged(subscription=21, key="phux.tags", terminal=1, value=b"ci"),
        ),
        ("METADATA_CHANGED deleted global", f.MetadataChanged(subscription=21, key="theme")),
        ("METADATA_VALUE set", f.MetadataValue(request_id=14, key="theme", value=b"dark")),
        ("METADATA_VALUE unset", f.MetadataValue(request_id=15, key="nope")),
        ("METADATA_KEYS", f.MetadataKeys(request_id=19, entries=META)),
        (
            "TERMINAL_STATE hidden input",
            f.TerminalState(
                terminal=1,
                foreground=f.Foreground(
                    pgrp=4242, name="bash", argv=["bash"], echo=False, canonical=True
                ),
            ),
        ),
        (
            "TERMINAL_STATE program with unicode argv",
            f.TerminalState(
                terminal=3,
                foreground=f.Foreground(
                    pgrp=5150,
                    name="less",
                    argv=["less", "-R", "résumé — 日本.txt"],
                    echo=False,
                    canonical=False,
                ),
            ),
        ),
        (
            "TERMINAL_STATE raw mode",
            f.TerminalState(
                terminal=4,
                foreground=f.Foreground(
                    pgrp=6006, name="vim", argv=["vim"], echo=False, canonical=False, isig=False
                ),
            ),
        ),
        (
            "TERMINAL_STATE argv unreadable",
            f.TerminalState(
                terminal=1, foreground=f.Foreground(pgrp=77, name="", echo=True, canonical=True)
            ),
        ),
        ("TERMINAL_STATE exited", f.TerminalState(terminal=2)),
        ("PONG", f.Pong(token=0x0102030405060708)),
    ]


def _field(field_id: int, wire_type: int, value: bytes) -> bytes:
    return encode_varint(field_id) + bytes((wire_type,)) + encode_varint(len(value)) + value


def _frame(frame_type: int, body: bytes) -> bytes:
    return (1 + len(body)).to_bytes(4, "big") + bytes((frame_type,)) + body


def decode_only_cases() -> list[tuple[str, bytes, Frame]]:
    """(name, input bytes, frame): valid input that does not re-encode identically."""
    ok = f.Ok(request_id=1)
    ok_body = _field(1, WireType.UINT, (1).to_bytes(4, "big"))
    return [
        (
            "OK with unknown field 9 (skipped)",
            _frame(0xC2, ok_body + _field(9, WireType.STRING, b"future")),
            ok,
        ),
        (
            "OK with unknown field 300 before a known one (skipped)",
            _frame(0xC2, _field(300, WireType.BYTES, b"\x00" * 3) + ok_body),
            ok,
        ),
        (
            "OK with an unknown field of type STRUCT (skipped, not parsed)",
            _frame(0xC2, ok_body + _field(2, WireType.STRUCT, b"\xff\xff\xff")),
            ok,
        ),
        (
            "SUBSCRIBE with role absent (default VIEWER)",
            _frame(
                0x40,
                _field(1, WireType.UINT, (4).to_bytes(4, "big"))
                + _field(2, WireType.UINT, (1).to_bytes(4, "big")),
            ),
            f.Subscribe(request_id=4, terminal=1),
        ),
        ("PING with no fields (token defaults to 0)", _frame(0x7F, b""), f.Ping()),
        (
            "RESIZE with fields out of order",
            _frame(
                0x23,
                _field(4, WireType.UINT, (24).to_bytes(2, "big"))
                + _field(3, WireType.UINT, (80).to_bytes(2, "big"))
                + _field(2, WireType.UINT, (1).to_bytes(4, "big"))
                + _field(1, WireType.UINT, (3).to_bytes(4, "big")),
            ),
            f.Resize(request_id=3, terminal=1, cols=80, rows=24),
        ),
    ]


def malformed_cases() -> list[tuple[str, bytes, DecodeReason]]:
    """(name, bytes, reason): input the decoder must reject with that reason."""
    u32 = (1).to_bytes(4, "big")
    ok_body = _field(1, WireType.UINT, u32)
    big = 16 * 1024 * 1024
    return [
        ("length 0", b"\x00\x00\x00\x00", DecodeReason.EMPTY_FRAME),
        ("length 16 MiB + 1", (big + 1).to_bytes(4, "big") + b"\xc2", DecodeReason.FRAME_TOO_LARGE),
        ("truncated header", b"\x00\x00\x00", DecodeReason.TRUNCATED),
        ("truncated body", _frame(0xC2, ok_body)[:-1], DecodeReason.TRUNCATED),
        ("unknown frame type 0x70", _frame(0x70, b""), DecodeReason.UNKNOWN_FRAME_TYPE),
        ("missing required field", _frame(0xC2, b""), DecodeReason.MISSING_FIELD),
        ("duplicate field", _frame(0xC2, ok_body + ok_body), DecodeReason.DUPLICATE_FIELD),
        (
            "non-minimal varint field id",
            _frame(0xC2, b"\x81\x00" + bytes((WireType.UINT, 4)) + u32),
            DecodeReason.NON_MINIMAL_VARINT,
        ),
        (
            "varint longer than 10 bytes",
            _frame(0xC2, b"\xff" * 11 + b"\x01"),
            DecodeReason.BAD_VARINT,
        ),
        (
            "varint over 64 bits",
            _frame(0xC2, b"\xff" * 9 + b"\x7f"),
            DecodeReason.BAD_VARINT,
        ),
        (
            "field length overruns the body",
            _frame(0xC2, bytes((1, WireType.UINT, 5)) + u32),
            DecodeReason.NESTED_OVERRUN,
        ),
        (
            "list element length overruns the list",
            _frame(
                0x25,
                ok_body + _field(2, WireType.LIST, b"\x01\x05" + u32),
            ),
            DecodeReason.NESTED_OVERRUN,
        ),
        (
            "list count of 4 billion in 6 bytes",
            _frame(0x25, ok_body + _field(2, WireType.LIST, encode_varint(4_000_000_000))),
            DecodeReason.BAD_COUNT,
        ),
        (
            "u32 field of 3 bytes",
            _frame(0xC2, _field(1, WireType.UINT, b"\x00\x00\x01")),
            DecodeReason.BAD_INTEGER,
        ),
        (
            "wire type mismatch",
            _frame(0xC2, _field(1, WireType.STRING, u32)),
            DecodeReason.WIRE_TYPE_MISMATCH,
        ),
        ("unknown wire type 9", _frame(0xC2, _field(1, 9, u32)), DecodeReason.UNKNOWN_WIRE_TYPE),
        (
            "bool of value 2",
            _frame(
                0x95,
                _field(1, WireType.UINT, u32)
                + _field(2, WireType.UINT, bytes(8))
                + _field(3, WireType.UINT, b"\x00\x50")
                + _field(4, WireType.UINT, b"\x00\x18")
                + _field(5, WireType.BOOL, b"\x02"),
            ),
            DecodeReason.BAD_BOOL,
        ),
        (
            "invalid UTF-8 string",
            _frame(0xD1, ok_body + _field(2, WireType.STRING, b"\xff\xfe")),
            DecodeReason.BAD_UTF8,
        ),
        (
            "unknown union tag",
            _frame(
                0xA1,
                _field(1, WireType.UINT, u32)
                + _field(2, WireType.UNION, b"\x07")
                + _field(3, WireType.UINT, bytes(8)),
            ),
            DecodeReason.UNKNOWN_UNION_TAG,
        ),
        (
            "field header cut after the field id",
            _frame(0xC2, b"\x01"),
            DecodeReason.TRUNCATED,
        ),
        (
            # The field's own width, not any width that holds the value (proto.md §3.4).
            "u16 field of 4 bytes",
            _frame(
                0x23,
                ok_body
                + _field(2, WireType.UINT, u32)
                + _field(3, WireType.UINT, b"\x00\x00\x00\x50")
                + _field(4, WireType.UINT, b"\x00\x18"),
            ),
            DecodeReason.BAD_INTEGER,
        ),
        (
            "i32 field of 8 bytes",
            _frame(
                0xA1,
                _field(1, WireType.UINT, u32)
                + _field(2, WireType.UNION, b"\x01" + _field(1, WireType.SINT, bytes(8)))
                + _field(3, WireType.UINT, bytes(8)),
            ),
            DecodeReason.BAD_INTEGER,
        ),
        (
            "list count varint cut by the end of the list",
            _frame(0x25, ok_body + _field(2, WireType.LIST, b"\x80")),
            DecodeReason.TRUNCATED,
        ),
        (
            "list element length varint cut by the end of the list",
            _frame(0x25, ok_body + _field(2, WireType.LIST, b"\x01\x80")),
            DecodeReason.TRUNCATED,
        ),
        (
            "union tag varint cut by the end of the union",
            _frame(
                0xA1,
                _field(1, WireType.UINT, u32)
                + _field(2, WireType.UNION, b"\x80")
                + _field(3, WireType.UINT, bytes(8)),
            ),
            DecodeReason.TRUNCATED,
        ),
        (
            # Checked before the id is looked up (proto.md §3.3): unknown ids too.
            "unknown wire type on an unknown field id",
            _frame(0xC2, ok_body + _field(9, 8, b"")),
            DecodeReason.UNKNOWN_WIRE_TYPE,
        ),
        (
            # An absent list is the empty list, except a list listed as required.
            "KILL without its required terminals list",
            _frame(0x25, ok_body),
            DecodeReason.MISSING_FIELD,
        ),
        (
            # Fields are checked in order: the first failure is the answer.
            "duplicate field before a bad value",
            _frame(0xC2, ok_body + ok_body + _field(1, WireType.UINT, b"\x00")),
            DecodeReason.DUPLICATE_FIELD,
        ),
    ]


# ---------------------------------------------------------------- documents


def frames_document() -> JSON:
    vectors = []
    for name, frame in canonical_cases():
        vectors.append(
            {
                "name": name,
                "frame": frame_name(type(frame)),
                "type": f"0x{frame.TYPE:02X}",
                "fields": to_json(frame),
                "hex": encode_frame(frame).hex(),
            }
        )
    for name, data, frame in decode_only_cases():
        vectors.append(
            {
                "name": name,
                "frame": frame_name(type(frame)),
                "type": f"0x{frame.TYPE:02X}",
                "fields": to_json(frame),
                "hex": data.hex(),
                "canonical_hex": encode_frame(frame).hex(),
            }
        )
    return {
        "protocol": ".".join(map(str, PROTOCOL_VERSION)),
        "generated_by": "tools/gen_vectors.py",
        "description": (
            "Each record decodes (hex) to fields; encoding fields gives canonical_hex if "
            "present, else hex. Field value mapping: spec/vectors/README.md."
        ),
        "vectors": vectors,
    }


def malformed_document() -> JSON:
    return {
        "protocol": ".".join(map(str, PROTOCOL_VERSION)),
        "generated_by": "tools/gen_vectors.py",
        "description": (
            "Each hex string, fed to a fresh frame reader at once, must be rejected with the "
            "reason named (spec/proto.md §2.1 and §3.3; frames.md, 'Decode failures'); "
            "'truncated' means the reader is "
            "still waiting for bytes when the input ends. 'code' is the ErrorCode of that "
            "failure; 'server_code' the ERROR a server answers when a client sends the bytes "
            "(null: none yet, it waits for the rest): a whole frame of a server-to-client type "
            "is UNKNOWN_MESSAGE_TYPE, whatever its body holds, as the direction is checked "
            "before the body is decoded (proto.md §2.1); 'fatal' means framing is broken and "
            "the connection closes."
        ),
        "vectors": [
            {
                "name": name,
                "hex": data.hex(),
                "reason": reason.value,
                "code": reason.code.name,
                "server_code": _server_code(data, reason),
                "fatal": reason in (DecodeReason.EMPTY_FRAME, DecodeReason.FRAME_TOO_LARGE),
            }
            for name, data, reason in malformed_cases()
        ],
    }


def _server_code(data: bytes, reason: DecodeReason) -> str | None:
    """What a server answers a client that sends ``data`` (spec/proto.md §2.1)."""
    if reason in (DecodeReason.EMPTY_FRAME, DecodeReason.FRAME_TOO_LARGE):
        return reason.code.name
    if len(data) < 5 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        return None  # not a whole frame: the server waits for the rest
    if data[4] >= 0x80:
        return "UNKNOWN_MESSAGE_TYPE"  # a server-to-client type: its body is not read
    return reason.code.name


def render(doc: JSON) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


OUTPUTS: dict[Path, Callable[[], JSON]] = {
    FRAMES_JSON: frames_document,
    MALFORMED_JSON: malformed_document,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the files are stale")
    args = parser.parse_args(argv)
    stale = []
    for path, build in OUTPUTS.items():
        text = render(build())
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    # Self-check: every vector decodes back to its frame.
    for name, frame in canonical_cases():
        assert decode_frame(encode_frame(frame)) == frame, name
    for p in stale:
        print(f"stale: {p.relative_to(ROOT)} (run python -m tools.gen_vectors)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate ``spec/frames.md`` (frame catalog, field tables, enums, hex examples) from the code.

``python -m tools.spec_tables`` rewrites the file; ``--check`` fails if it is
stale (tests/wire/test_spec_tables.py runs the same comparison). The prose in
the other spec pages is hand-written; every table of numbers lives here.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from phux.record import Record, fields
from phux.wire import frames as f
from phux.wire.errors import DecodeReason, DetachReason, ErrorCode
from phux.wire.framing import MAX_FRAME, encode_frame
from phux.wire.handshake import PROTOCOL_VERSION
from phux.wire.tlv import IntSpec, WireType, encode_varint, leaf_for, plan_for, union_tag
from tools.gen_vectors import canonical_cases, frame_name, to_json
from tools.generated import write_or_check

ROOT = Path(__file__).resolve().parent.parent
FRAMES_MD = ROOT / "spec" / "frames.md"

WIRE_TYPE_TEXT = {
    WireType.UINT: "unsigned integer, big-endian, exactly the field's width (1, 2, 4 or 8 bytes)",
    WireType.SINT: "signed integer, two's complement big-endian, exactly the field's width",
    WireType.BOOL: "one byte: 0x00 false, 0x01 true (anything else is an error)",
    WireType.STRING: "UTF-8 bytes, no terminator (the field length is the byte count)",
    WireType.BYTES: "raw bytes (the field length is the byte count)",
    WireType.STRUCT: "a record: a nested TLV body with its own field ids",
    WireType.LIST: "varint count, then per element: varint length, element value",
    WireType.UNION: "varint tag, then the variant's record as a nested TLV body",
}

RECORDS: tuple[type[Record], ...] = (
    f.MetaEntry,
    f.EnvVar,
    f.Exited,
    f.Signaled,
    f.Foreground,
    f.TerminalInfo,
    f.TerminalFilter,
    f.AuditRecord,
)

ENUMS: tuple[tuple[type[enum.IntEnum], str], ...] = (
    (ErrorCode, "ERROR.code"),
    (DetachReason, "DETACHED.reason"),
    (f.Role, "SUBSCRIBE.role"),
    (f.Signal, "SEND_SIGNAL.signal (our own numbering; the server maps it to the host's)"),
    (f.TombstoneReason, "TOMBSTONE.reason"),
)


def type_text(tp: Any) -> str:
    """The spec's name of an annotated field type."""
    if isinstance(tp, type) and issubclass(tp, IntSpec):
        return f"{'i' if tp.signed else 'u'}{8 * tp.width}"
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args: list[Any] = [a for a in typing.get_args(tp) if a is not type(None)]
        if [getattr(a, "__name__", "") for a in args] == ["Exited", "Signaled"]:
            return "ExitStatus"
        return " | ".join(type_text(a) for a in args)
    if origin is list:
        (item,) = typing.get_args(tp)
        return f"list<{type_text(item)}>"
    if tp is bool:
        return "bool"
    if tp is str:
        return "string"
    if tp is bytes:
        return "bytes"
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp)


def default_text(cls: type[Record], name: str) -> str:
    plan = plan_for(cls)
    fp = next(p for p in plan.fields if p.name == name)
    if fp.required:
        return "required"
    if fp.optional:
        return "optional (absent)"
    if fp.default_factory is not None:
        value = fp.default_factory()
        return "`[]`" if value == [] else f"`{value!r}`"
    value = fp.default
    if isinstance(value, enum.IntEnum):
        return f"`{int(value)}` ({value.name})"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value}`"


def field_table(cls: type[Record]) -> list[str]:
    plan = plan_for(cls)
    hints = {info.name: info.annotation for info in fields(cls)}
    if not plan.fields:
        return ["No fields: the body is empty."]
    lines = ["| id | field | type | wire type | default |", "|---|---|---|---|---|"]
    for fp in plan.fields:
        lines.append(
            f"| {fp.field_id} | `{fp.name}` | {type_text(hints[fp.name])} | "
            f"{fp.leaf.wire_type.name} ({int(fp.leaf.wire_type)}) | {default_text(cls, fp.name)} |"
        )
    return lines


def _hex(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


def _hex_lines(data: bytes, indent: str, width: int = 16) -> list[str]:
    if not data:
        return []
    return [indent + _hex(data[i : i + width]) for i in range(0, len(data), width)]


def annotated_hex(frame: f.Frame) -> list[str]:
    """The frame's bytes, one field per group, each line with what it is."""
    data = encode_frame(frame)
    plan = plan_for(type(frame))
    rows: list[tuple[str, str]] = [
        (_hex(data[:4]), f"length {int.from_bytes(data[:4], 'big')} (type byte + body)"),
        (_hex(data[4:5]), f"frame type {frame_name(type(frame))}"),
    ]
    for fp in plan.fields:
        value = getattr(frame, fp.name)
        if value is None:
            continue
        encoded = fp.leaf.encode(value)
        header = encode_varint(fp.field_id) + bytes((fp.leaf.wire_type,))
        header += encode_varint(len(encoded))
        rows.append(
            (
                _hex(header),
                f"field {fp.field_id} `{fp.name}`: {fp.leaf.wire_type.name}, "
                f"{len(encoded)} byte{'s' if len(encoded) != 1 else ''}",
            )
        )
        value_lines = _hex_lines(encoded, "  ")
        shown = json.dumps(to_json(value), ensure_ascii=False)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        for i, line in enumerate(value_lines):
            rows.append((line, f"  = {shown}" if i == 0 else ""))
    width = max(len(h) for h, _ in rows)
    return [f"{h.ljust(width)}  {note}".rstrip() for h, note in rows]


def pick_example(cls: type[f.Frame]) -> tuple[str, f.Frame]:
    cases = [(n, fr) for n, fr in canonical_cases() if type(fr) is cls]
    small = [c for c in cases if len(encode_frame(c[1])) <= 120]
    pool = small or cases
    return max(pool, key=lambda c: len(encode_frame(c[1])))


def _doc(obj: type) -> str:
    text = obj.__doc__ or ""  # a class's __doc__ is its own (None without a docstring)
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def render() -> str:
    out: list[str] = []
    w = out.append
    version = ".".join(map(str, PROTOCOL_VERSION))
    w("# phux wire: frame catalog and tables")
    w("")
    w("<!-- GENERATED by tools/spec_tables.py from src/phux/wire; do not edit by hand. -->")
    w("")
    w(f"Protocol version **{version}**. Maximum frame length {MAX_FRAME} (16 MiB).")
    w("Encoding rules are in [proto.md](proto.md); what each frame means is in")
    w("[L1.md](L1.md) and [L3.md](L3.md). This page holds every number.")
    w("")
    w("## Wire types")
    w("")
    w("| wire type | name | value encoding |")
    w("|---|---|---|")
    for wt in WireType:
        w(f"| {int(wt)} | {wt.name} | {WIRE_TYPE_TEXT[wt]} |")
    w("")
    w("Field types used below: `u8` `u16` `u32` `u64` (UINT), `i32` `i64` (SINT), `bool`,")
    w("`string`, `bytes`, `list<T>` (LIST), a record name (STRUCT), `ExitStatus` (UNION).")
    w("")
    w("## Enumerations")
    w("")
    for enum_cls, where in ENUMS:
        w(f"### {enum_cls.__name__}")
        w("")
        w(f"Carried in {where}.")
        w("")
        w("| value | name |")
        w("|---|---|")
        for member in enum_cls:
            w(f"| {int(member)} | {member.name} |")
        w("")
    w("### Decode failures and their error codes")
    w("")
    w("| reason | ERROR code | connection |")
    w("|---|---|---|")
    for reason in DecodeReason:
        fatal = reason in (DecodeReason.EMPTY_FRAME, DecodeReason.FRAME_TOO_LARGE)
        w(
            f"| {reason.value} | {reason.code.name} ({int(reason.code)}) | "
            f"{'closed (framing lost)' if fatal else 'continues'} |"
        )
    w("")
    w("## Records")
    w("")
    w("Records are STRUCT values (nested TLV bodies) with their own field ids.")
    w("")
    for rec in RECORDS:
        tag = union_tag(rec)
        w(f"### {rec.__name__}")
        w("")
        doc = _doc(rec)
        if tag is not None:
            doc = f"ExitStatus variant, union tag **{tag}**. {doc}".strip()
        if doc:
            w(doc)
            w("")
        out.extend(field_table(rec))
        w("")
    w("### ExitStatus (union)")
    w("")
    w(f"`{leaf_for(f.ExitStatus).description}`: a UNION value is the varint tag followed by")
    w("the variant's record body (no extra length: the field length covers both).")
    w("")
    w("## Frame catalog")
    w("")
    w("| type | name | direction |")
    w("|---|---|---|")
    for cls in f.ALL_FRAMES:
        direction = "client → server" if cls.TYPE < 0x80 else "server → client"
        w(f"| 0x{cls.TYPE:02X} | [{frame_name(cls)}](#{frame_name(cls).lower()}) | {direction} |")
    w("")
    w("## Frames")
    for cls in f.ALL_FRAMES:
        name = frame_name(cls)
        w("")
        w(f"### {name}")
        w("")
        direction = "client → server" if cls.TYPE < 0x80 else "server → client"
        w(f"Type **0x{cls.TYPE:02X}**, {direction}.")
        doc = _doc(cls)
        if doc:
            w(doc)
        w("")
        out.extend(field_table(cls))
        w("")
        example_name, example = pick_example(cls)
        w(f"Example ({example_name}): `{encode_frame(example).hex()}`")
        w("")
        w("```text")
        out.extend(annotated_hex(example))
        w("```")
    w("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate spec/frames.md from the frame catalog.")
    parser.add_argument("--check", action="store_true", help="fail if spec/frames.md is stale")
    args = parser.parse_args(argv)
    return write_or_check(
        FRAMES_MD, render(), check=args.check, command="python -m tools.spec_tables"
    )


if __name__ == "__main__":
    sys.exit(main())

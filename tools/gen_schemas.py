"""Generate the JSON Schemas of the agent contract in ``spec/schemas/`` from the Structs.

``python -m tools.gen_schemas`` rewrites ``spec/schemas/<shape>.schema.json``
(one file per JSON shape the CLI and the MCP adapter print); ``--check`` only
reports whether they are current, and fails on a stale, missing or extra file
(tests/cli/test_schemas.py runs the same comparison).

The schemas come from ``msgspec.json.schema`` with two corrections that make
them describe what the encoder really writes:

- a field with a default is still always written unless its Struct sets
  ``omit_defaults`` or the default is ``UNSET``, so such fields are listed as
  required;
- ``schema_version`` is pinned (``const``) to the version the code emits;

and without the Structs' Python docstrings (each file has its own description).

Files are pretty-printed with sorted keys, so a diff shows only real changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

from phux.client import models
from phux.engine.screen_state import SCHEMA_VERSION as SCREEN_SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS_DIR = ROOT / "spec" / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Shape:
    name: str
    type: Any
    description: str
    schema_version: int | None = None


SHAPES: tuple[Shape, ...] = (
    Shape(
        "screen_state",
        models.ScreenState,
        "`phux snapshot --json` and `phux wait --json`: one pane's screen.",
        SCREEN_SCHEMA_VERSION,
    ),
    Shape(
        "session_list",
        models.SessionList,
        "`phux ls --json`: sessions sorted by name.",
        models.LS_SCHEMA_VERSION,
    ),
    Shape("run_result", models.RunResult, "`phux run --json` on completion."),
    Shape(
        "new_result",
        models.NewResult,
        "`phux new --json -s NAME`: the created session and its first pane (no schema_version).",
    ),
    Shape(
        "new_pane_result",
        models.NewPaneResult,
        "`phux new-window --json` and `phux split --json` (MCP `phux_new_window`, "
        "`phux_split`): the created pane.",
    ),
    Shape(
        "watch_event",
        models.WatchEvent,
        "`phux watch --json`: one line per event, tagged by `event`.",
    ),
    Shape(
        "history_result",
        models.HistoryResult,
        "`phux history --json` and the MCP `phux_history` tool: a pane's commands, oldest first.",
        models.HISTORY_SCHEMA_VERSION,
    ),
    Shape(
        "error_report",
        models.ErrorReport,
        "The one stderr line of a failed verb under --json.",
        models.ERROR_SCHEMA_VERSION,
    ),
    Shape(
        "session_info",
        models.SessionInfo,
        "The MCP `phux_ls` tool: one session with the raw counts.",
    ),
    Shape(
        "send_keys_result",
        models.SendKeysResult,
        "The MCP `phux_send_keys` tool's result.",
    ),
    Shape(
        "server_status",
        models.ServerStatus,
        "`phux status --json`: the running server.",
        models.STATUS_SCHEMA_VERSION,
    ),
    Shape(
        "doctor_report",
        models.DoctorReport,
        "`phux doctor --json`: each check with its status and remedy.",
        models.DOCTOR_SCHEMA_VERSION,
    ),
    Shape(
        "audit_result",
        models.AuditResult,
        "`phux audit --json`: who wrote input to which terminal, oldest first.",
        models.AUDIT_SCHEMA_VERSION,
    ),
    Shape(
        "wait_result",
        models.WaitResult,
        "The client's wait result (the MCP `phux_wait` tool renders it).",
    ),
)


def _structs(t: mi.Type) -> Iterator[mi.StructType]:
    """Every Struct type reachable from ``t``."""
    seen: set[type] = set()
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, mi.StructType):
            if node.cls in seen:
                continue
            seen.add(node.cls)
            yield node
            stack.extend(field.type for field in node.fields)
        elif isinstance(node, mi.UnionType):
            stack.extend(node.types)
        elif isinstance(node, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            stack.append(node.item_type)
        elif isinstance(node, mi.TupleType):
            stack.extend(node.item_types)
        elif isinstance(node, mi.DictType):
            stack.extend((node.key_type, node.value_type))


def schema_for(shape: Shape) -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.schema(shape.type)
    defs: dict[str, Any] = schema.get("$defs", {})
    for struct in _structs(mi.type_info(shape.type)):
        definition = defs.get(struct.cls.__name__)
        if definition is None:
            continue
        # Docstrings are written for Python readers; the shape descriptions above are ours.
        definition.pop("description", None)
        props: dict[str, Any] = definition.get("properties", {})
        if not struct.cls.__struct_config__.omit_defaults:
            # ...except a field left UNSET, which the encoder leaves out.
            unset = {
                f.encode_name
                for f in struct.fields
                if not f.required
                and f.default is msgspec.NODEFAULT
                and f.default_factory is msgspec.NODEFAULT
            }
            required = list(definition.get("required", []))
            required += [name for name in props if name not in required and name not in unset]
            definition["required"] = required
        if shape.schema_version is not None and "schema_version" in props:
            props["schema_version"] = {"const": shape.schema_version, "type": "integer"}
    return {
        "$schema": DIALECT,
        "title": shape.name,
        "description": shape.description,
        **schema,
    }


def render(shape: Shape) -> str:
    return json.dumps(schema_for(shape), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_files() -> dict[str, str]:
    return {f"{shape.name}.schema.json": render(shape) for shape in SHAPES}


def drift(directory: Path = SCHEMAS_DIR) -> list[str]:
    """Human-readable problems; empty when ``directory`` matches the Structs."""
    problems = []
    expected = expected_files()
    for name, text in expected.items():
        path = directory / name
        if not path.exists():
            problems.append(f"missing: {path}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"stale: {path}")
    if directory.exists():
        for path in sorted(directory.glob("*.schema.json")):
            if path.name not in expected:
                problems.append(f"extra (no Struct behind it): {path}")
    return problems


def write(directory: Path = SCHEMAS_DIR) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    expected = expected_files()
    for name, text in expected.items():
        (directory / name).write_text(text, encoding="utf-8")
    for path in directory.glob("*.schema.json"):
        if path.name not in expected:
            path.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate spec/schemas/ from the model Structs.")
    parser.add_argument("--check", action="store_true", help="fail if the files are stale")
    parser.add_argument("--dir", type=Path, default=SCHEMAS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        problems = drift(args.dir)
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("run: python -m tools.gen_schemas", file=sys.stderr)
            return 1
        return 0
    write(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

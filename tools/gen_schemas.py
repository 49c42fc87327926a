"""Generate the JSON Schemas of the agent contract in ``spec/schemas/`` from the Structs.

``python -m tools.gen_schemas`` rewrites ``spec/schemas/<shape>.schema.json``
(one file per JSON shape the CLI and the MCP adapter print); ``--check`` only
reports whether they are current, and fails on a stale, missing or extra file
(tests/cli/test_schemas.py runs the same comparison).

The schemas come from :func:`phux.client.schemas.json_schema` (msgspec's, with
the corrections that make them describe what the encoder really writes), the
same function the MCP adapter declares its tools' ``outputSchema`` with; each
file has its own description.

Files are pretty-printed with sorted keys, so a diff shows only real changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phux.client import models
from phux.client.schemas import DIALECT, json_schema
from phux.engine.screen_state import SCHEMA_VERSION as SCREEN_SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS_DIR = ROOT / "spec" / "schemas"


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
        "The MCP `phux_send_keys` and `phux_paste` tools' result.",
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
    Shape("session_info_list", models.SessionInfoList, "The MCP `phux_ls` tool's result."),
    Shape(
        "mcp_run_result",
        models.McpRunResult,
        "The MCP `phux_run` tool's result on completion: run_result plus waited_ms.",
    ),
    Shape(
        "run_timed_out_result",
        models.RunTimedOutResult,
        "The MCP `phux_run` tool's result when timeout_secs passed first.",
    ),
    Shape("wait_outcome", models.WaitOutcome, "The MCP `phux_wait` tool's result."),
    Shape("kill_result", models.KillResult, "The MCP `phux_kill` tool's result."),
    Shape("tag_result", models.TagResult, "The MCP `phux_tag` tool's result."),
    Shape(
        "notes_result",
        models.NotesResult,
        "`phux note --json` and the MCP `phux_notes` / `phux_set_notes` tools: one note "
        "and its tasks.",
        models.NOTES_SCHEMA_VERSION,
    ),
    Shape(
        "task_list",
        models.TaskList,
        "`phux tasks --json`, `phux task --json` and the MCP `phux_tasks` / "
        "`phux_update_task` tools: a note's tasks.",
        models.TASKS_SCHEMA_VERSION,
    ),
    Shape(
        "summary_result",
        models.SummaryResult,
        "`phux summary --json` and the MCP `phux_summary` tool: one pane summed up.",
        models.SUMMARY_SCHEMA_VERSION,
    ),
)


def schema_for(shape: Shape) -> dict[str, Any]:
    return {
        "$schema": DIALECT,
        "title": shape.name,
        "description": shape.description,
        **json_schema(shape.type, schema_version=shape.schema_version),
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

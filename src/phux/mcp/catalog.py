"""What each phux tool takes and how the tool listing describes it: the argument
Structs and their bounds, the input schemas, descriptions, titles, hints and
output schemas (in brief: ``tools/list`` is paid for in every conversation).

The tools themselves, bound to clients, are :class:`phux.mcp.tools.PhuxTools`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import msgspec

from phux.client.models import (
    HISTORY_SCHEMA_VERSION,
    HistoryResult,
    KillResult,
    McpRunResult,
    NewPaneResult,
    NewResult,
    RunTimedOutResult,
    SendKeysResult,
    SessionInfoList,
    TagResult,
    WaitOutcome,
)
from phux.client.schemas import object_schema
from phux.client.wait import DEFAULT_IDLE_MS
from phux.mcp.names import TITLES
from phux.mcp.notes_tools import NOTES_META
from phux.timeouts import MCP_MAX_TIMEOUT, RUN_TIMEOUT, WAIT_TIMEOUT

if TYPE_CHECKING:
    pass

A = TypeVar("A", bound=msgspec.Struct)

RUN_DEFAULT_TIMEOUT = RUN_TIMEOUT

# Bounds keep absurd values out (phux.timeouts.MCP_MAX_TIMEOUT says why an hour).
MAX_TIMEOUT_SECS = MCP_MAX_TIMEOUT
MAX_IDLE_MS = 1_000_000_000
Timeout = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIMEOUT_SECS)]
RunTimeout = Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT_SECS)]
IdleMs = Annotated[int, msgspec.Meta(ge=0, le=MAX_IDLE_MS)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]


# ---------------------------------------------------------------- arguments


class _Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None
    host: str | None = None


class LsArgs(_Args):
    pass


class SnapshotArgs(_Args):
    target: str | None = None
    scrollback: NonNegInt | None = None
    cells: bool = False
    schema_version: Literal[3, 4] | None = None


class SendKeysArgs(_Args):
    target: str
    keys: Annotated[list[str], msgspec.Meta(min_length=1)]


class RunArgs(_Args):
    target: str
    command: str
    timeout_secs: RunTimeout = RUN_DEFAULT_TIMEOUT
    force: bool = False


class WaitArgs(_Args):
    target: str | None = None
    until: str | None = None
    regex: str | None = None
    idle_ms: IdleMs | None = None
    prompt: bool = False
    exit: bool = False
    timeout_secs: Timeout = WAIT_TIMEOUT


class HistoryArgs(_Args):
    target: str
    last: NonNegInt | None = None


class NewArgs(_Args):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    shell_integration: bool = True


class PasteArgs(_Args):
    target: str
    text: str


class KillArgs(_Args):
    target: str


class NewWindowArgs(_Args):
    session: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    select: bool = False


class SplitArgs(_Args):
    target: str
    command: list[str] = msgspec.field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    select: bool = False


class TagArgs(_Args):
    target: str
    tags: Annotated[list[str], msgspec.Meta(min_length=1)]
    remove: bool = False


class BadArguments(Exception):
    pass


def parse_args(kind: type[A], arguments: dict[str, Any]) -> A:
    try:
        return msgspec.convert(arguments, kind, strict=False)
    except msgspec.ValidationError as exc:
        text = str(exc).replace("`$.", "`").replace(" - at `$`", "")
        raise BadArguments(text) from None


# ---------------------------------------------------------------- listing


# The tool listing is sent to the host's model on every conversation (issue 26: keep
# tools/list under 12 KB): descriptions say what a model needs to call the tool
# right, once; the rest is in the instructions (phux.skill) and docs/mcp.md.
_TARGET = "target: see phux_snapshot."
_TARGET_GRAMMAR = (
    "Targets: `.` current pane, `=` previous, `name` a session (its active pane), "
    "`name:N` window, `name:N.M` pane, `@N` id, `#tag`. Reads never move the active pane."
)
_SOCKET_PROP = {"type": "string"}
_HOST_PROP = {"type": "string"}


def _schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """An object schema with the common ``socket`` (the server's socket path; default
    $PHUX_SOCKET, then the per-user one) and ``host`` ([USER@]HOST over ssh)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**properties, "socket": _SOCKET_PROP, "host": _HOST_PROP},
    }
    if required:
        schema["required"] = list(required)
    return schema


def brief_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """What a model needs of an output schema: the root's fields and their JSON types.

    The full schemas (nested shapes, descriptions) are the files in spec/schemas/;
    inlined in every listing they cost an agent's context more than the tools
    themselves. A union of objects (phux_run) lists every variant's fields; nothing is
    ``required`` (a model reads names and types; the tools are the validators), and
    ``schema_version`` is left out (the result still carries it)."""
    defs: Mapping[str, Any] = schema.get("$defs", {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        return node

    def type_of(node: Mapping[str, Any]) -> dict[str, Any]:
        node = resolve(node)
        if "type" in node:
            return {"type": node["type"]}
        if "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            kinds = {_JSON_TYPES.get(type(v), "string") for v in values}
            return {"type": kinds.pop()} if len(kinds) == 1 else {}
        types: list[Any] = []
        for option in node.get("anyOf", ()):
            kind = type_of(option).get("type")
            for one in kind if isinstance(kind, list) else [kind]:
                if one is not None and one not in types:
                    types.append(one)
        if not types:
            return {}
        return {"type": types[0] if len(types) == 1 else types}

    root = resolve(schema)
    variants = [resolve(v) for v in root.get("anyOf", ())] or [root]
    properties: dict[str, Any] = {}
    for variant in variants:
        for name, prop in variant.get("properties", {}).items():
            if name != "schema_version":  # the shape's version: for code, not a model
                properties.setdefault(name, type_of(prop))
    return {"type": "object", "properties": properties}


_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _briefed(output: Callable[[], dict[str, Any]] | None) -> Callable[[], dict[str, Any]] | None:
    """The listing's output schema: :func:`brief_schema` of the full one."""
    if output is None:
        return None
    return lambda: brief_schema(output())


@dataclass(frozen=True)
class ToolMeta:
    title: str
    annotations: dict[str, bool]
    output: Callable[[], dict[str, Any]] | None
    queued: bool = False
    """It writes to a pane: it takes its turn there in arrival order."""


def _hints(
    *, read_only: bool, destructive: bool, idempotent: bool, open_world: bool
) -> dict[str, bool]:
    return {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }


_READ = _hints(read_only=True, destructive=False, idempotent=True, open_world=False)
# Typing into a shell can do anything the shell can, to anything it reaches.
_TYPE = _hints(read_only=False, destructive=True, idempotent=False, open_world=True)


def _screen_schema() -> dict[str, Any]:
    from phux.engine.screen_state import ScreenState

    return object_schema(ScreenState, schema_version=(3, 4))


TOOL_META: dict[str, ToolMeta] = {
    "phux_ls": ToolMeta(TITLES["phux_ls"], _READ, lambda: object_schema(SessionInfoList)),
    "phux_snapshot": ToolMeta(TITLES["phux_snapshot"], _READ, _screen_schema),
    "phux_send_keys": ToolMeta(
        TITLES["phux_send_keys"], _TYPE, lambda: object_schema(SendKeysResult), queued=True
    ),
    "phux_run": ToolMeta(
        TITLES["phux_run"],
        _TYPE,
        lambda: object_schema(McpRunResult, RunTimedOutResult),
        queued=True,
    ),
    "phux_wait": ToolMeta(TITLES["phux_wait"], _READ, lambda: object_schema(WaitOutcome)),
    "phux_new": ToolMeta(
        TITLES["phux_new"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewResult),
    ),
    "phux_paste": ToolMeta(
        TITLES["phux_paste"], _TYPE, lambda: object_schema(SendKeysResult), queued=True
    ),
    "phux_history": ToolMeta(
        TITLES["phux_history"],
        _READ,
        lambda: object_schema(HistoryResult, schema_version=HISTORY_SCHEMA_VERSION),
    ),
    "phux_kill": ToolMeta(
        TITLES["phux_kill"],
        _hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        lambda: object_schema(KillResult),
    ),
    "phux_new_window": ToolMeta(
        TITLES["phux_new_window"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewPaneResult),
    ),
    "phux_split": ToolMeta(
        TITLES["phux_split"],
        _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        lambda: object_schema(NewPaneResult),
    ),
    "phux_tag": ToolMeta(
        TITLES["phux_tag"],
        _hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        lambda: object_schema(TagResult),
    ),
    **{name: ToolMeta(TITLES[name], *meta) for name, meta in NOTES_META.items()},
}
"""Per tool: the MCP metadata newer protocol revisions show (see phux.mcp.server)."""


# ---------------------------------------------------------------- descriptions

LS_DOC = (
    "List the sessions and their panes (id, window, index, size, tags, title, cwd, "
    "program, state). Any tool's socket/host: another server's socket path, [USER@]HOST "
    "(ssh)."
)

SNAPSHOT_DOC = (
    "Read a pane's screen (lines, cursor, program, state = prompt | continuation | "
    "running | hidden_input | tui | exited). scrollback: absent = none, 0 = all, N = "
    "newest N rows. cells=true adds styled runs. " + _TARGET_GRAMMAR + " Default `.`."
)
SNAPSHOT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "scrollback": {"type": "integer", "minimum": 0},
        "cells": {"type": "boolean"},
        "schema_version": {"type": "integer", "enum": [3, 4]},
    }
)

SEND_KEYS_DOC = (
    "Type keys into a pane: key names (Enter, Tab, Escape, C-c, M-x, Up, F1, ...) or "
    'literal text, tmux-style: ["make test", "Enter"]. Does not wait for output (use '
    "phux_wait). " + _TARGET
)
SEND_KEYS_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    ["target", "keys"],
)

RUN_DOC = (
    "Run a shell command; returns exit_code and output. Types nothing (pane_busy) "
    "unless the pane's shell is at an idle prompt (force=true types anyway). On timeout: "
    "outcome timed_out, the command keeps running; do not run it again: phux_wait "
    "with prompt=true, or send C-c. Hosts often give up after 60 s: keep timeout_secs "
    "<= 50; start longer jobs with phux_send_keys. " + _TARGET
)
RUN_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "command": {"type": "string"},
        "timeout_secs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": RUN_DEFAULT_TIMEOUT,
        },
        "force": {"type": "boolean"},
    },
    ["target", "command"],
)

WAIT_DOC = (
    "Block until a pane meets one condition: until (a visible line contains it), regex "
    "(Python), prompt (its shell is idle at a prompt), exit (its program exited), "
    f"else idle_ms of no change (default {DEFAULT_IDLE_MS}). outcome: met | "
    "timed_out. Match text only the output prints (your typed command shows too). Hosts "
    "often give up after 60 s: keep timeout_secs <= 50 and call again; 0 checks once."
)
WAIT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "until": {"type": "string"},
        "regex": {"type": "string"},
        "prompt": {"type": "boolean"},
        "exit": {"type": "boolean"},
        "idle_ms": {"type": "integer", "minimum": 0, "maximum": MAX_IDLE_MS},
        "timeout_secs": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_TIMEOUT_SECS,
            "default": WAIT_TIMEOUT,
        },
    }
)

HISTORY_DOC = (
    "List the commands a pane's shell ran, oldest first (command, cwd, exit_code, "
    "duration_ms, output), typed by agents or people. last: the newest N. " + _TARGET
)
HISTORY_SCHEMA = _schema(
    {"target": {"type": "string"}, "last": {"type": "integer", "minimum": 0}},
    ["target"],
)

_ENV_DOC = "env: added to the server's environment."
_ENV_PROP = {"type": "object", "additionalProperties": {"type": "string"}}
_ARGV_PROP = {"type": "array", "items": {"type": "string"}}
NEW_DOC = (
    "Create a session on the running server; its pane runs command (argv; default: "
    "a shell) in cwd. " + _ENV_DOC + " Target @terminal_id to pin the pane."
)
NEW_SCHEMA = _schema(
    {
        "name": {"type": "string", "minLength": 1},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "shell_integration": {"type": "boolean"},
    },
    ["name"],
)

PASTE_DOC = (
    "Paste text into a pane as one (bracketed) paste: a shell runs nothing until Enter. " + _TARGET
)
PASTE_SCHEMA = _schema(
    {"target": {"type": "string"}, "text": {"type": "string"}},
    ["target", "text"],
)

KILL_DOC = "Kill a session, window or pane (`.`: one pane); also ends a stuck phux_run. " + _TARGET
KILL_SCHEMA = _schema({"target": {"type": "string"}}, ["target"])

_SELECT_DOC = "select=true: it becomes the session's active pane."

NEW_WINDOW_DOC = (
    "Add a window (name: for `session:name`) whose pane runs command (default: a shell). "
    + _SELECT_DOC
    + " "
    + _ENV_DOC
)
NEW_WINDOW_SCHEMA = _schema(
    {
        "session": {"type": "string", "minLength": 1},
        "name": {"type": "string"},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "select": {"type": "boolean"},
    },
    ["session"],
)

SPLIT_DOC = (
    "Add a pane to target's window, running command (default: a shell). "
    + _SELECT_DOC
    + " "
    + _ENV_DOC
)
SPLIT_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "command": _ARGV_PROP,
        "cwd": {"type": "string"},
        "env": _ENV_PROP,
        "select": {"type": "boolean"},
    },
    ["target"],
)

TAG_DOC = "Tag a pane (remove=true: untag) so `#tag` selects it. " + _TARGET
TAG_SCHEMA = _schema(
    {
        "target": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "remove": {"type": "boolean"},
    },
    ["target", "tags"],
)

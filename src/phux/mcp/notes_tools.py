"""The MCP tools over notes, tasks and the summary (``phux.client.notes``, ``.summary``).

A mixin of :class:`phux.mcp.tools.PhuxTools`: each tool is one ``_invoke`` of a
client call, as the others are. Descriptions stay short: ``tools/list`` is paid
for in every host's context (issue 26), so they give the verb, the target
rule and the arguments, and the guide (``phux skill``) the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from phux.client.deadline import Deadline

if TYPE_CHECKING:
    from phux.client import Client
    from phux.mcp.server import ToolResult

CALL_DEADLINE = 30.0

Scope = Literal["session", "window", "pane"]


class _Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None
    host: str | None = None


class NotesArgs(_Args):
    target: str
    scope: Scope | None = None


class SetNotesArgs(NotesArgs):
    notes: str | None = None
    append: str | None = None


class TasksArgs(NotesArgs):
    open: bool = False


class UpdateTaskArgs(NotesArgs, kw_only=True):
    action: Literal["add", "done", "undo", "rm"]
    text: str | None = None
    n: Annotated[int, msgspec.Meta(ge=1)] | None = None


class SummaryArgs(_Args):
    target: str | None = None
    last: Annotated[int, msgspec.Meta(ge=0, le=1024)] = 5
    tail: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 20


class _Invoker:
    """What the mixin needs of PhuxTools."""

    def _invoke(
        self,
        kind: type[Any],
        arguments: dict[str, Any],
        work: Callable[[Client, Any], Any],
        *,
        retry_stale: bool,
    ) -> ToolResult:
        raise NotImplementedError


class NotesTools(_Invoker):
    def notes(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: NotesArgs) -> Any:
            from phux.client.notes import get_notes

            return get_notes(client, args.target, Deadline.after(CALL_DEADLINE), scope=args.scope)

        return self._invoke(NotesArgs, arguments, work, retry_stale=True)

    def set_notes(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: SetNotesArgs) -> Any:
            from phux.client.errors import InvalidArgument
            from phux.client.notes import append, edit_notes

            new, more = args.notes, args.append
            if (new is None) == (more is None):
                raise InvalidArgument('give notes (replace; "" clears) or append, not both')

            def change(old: str) -> str:
                return new if new is not None else append(old, more or "")

            return edit_notes(
                client, args.target, change, Deadline.after(CALL_DEADLINE), scope=args.scope
            )

        return self._invoke(SetNotesArgs, arguments, work, retry_stale=False)

    def tasks(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: TasksArgs) -> Any:
            from phux.client.notes import locate, read_existing, task_list

            deadline = Deadline.after(CALL_DEADLINE)
            place = locate(client, args.target, args.scope, deadline)
            return task_list(place, read_existing(client, place, deadline), open_only=args.open)

        return self._invoke(TasksArgs, arguments, work, retry_stale=True)

    def update_task(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: UpdateTaskArgs) -> Any:
            from phux.client.errors import InvalidArgument
            from phux.client.notes import locate, task_change, task_list, update

            if args.action == "add":
                if args.text is None:
                    raise InvalidArgument("add needs text")
                arg = args.text
            else:
                if args.n is None:
                    raise InvalidArgument(f"{args.action} needs n, the task's number")
                arg = str(args.n)
            change = task_change(args.action, arg)
            deadline = Deadline.after(CALL_DEADLINE)
            place = locate(client, args.target, args.scope, deadline)
            return task_list(place, update(client, place, change, deadline))

        return self._invoke(UpdateTaskArgs, arguments, work, retry_stale=False)

    def summary(self, arguments: dict[str, Any]) -> ToolResult:
        def work(client: Client, args: SummaryArgs) -> Any:
            from phux.client.summary import pane_summary

            return pane_summary(
                client,
                args.target,
                last=args.last,
                tail=args.tail,
                deadline=Deadline.after(CALL_DEADLINE),
            )

        return self._invoke(SummaryArgs, arguments, work, retry_stale=True)

    def notes_catalog(
        self, schema: Callable[[dict[str, Any], Sequence[str]], dict[str, Any]]
    ) -> dict[str, tuple[str, dict[str, Any], Callable[..., ToolResult]]]:
        """name -> (description, input schema, method); ``schema`` adds socket/host."""
        return {
            "phux_notes": (NOTES_DOC, schema(_SCOPED, ["target"]), self.notes),
            "phux_set_notes": (
                SET_NOTES_DOC,
                schema(
                    {
                        **_SCOPED,
                        "notes": {"type": "string"},
                        "append": {"type": "string"},
                    },
                    ["target"],
                ),
                self.set_notes,
            ),
            "phux_tasks": (
                TASKS_DOC,
                schema({**_SCOPED, "open": {"type": "boolean"}}, ["target"]),
                self.tasks,
            ),
            "phux_update_task": (
                UPDATE_TASK_DOC,
                schema(
                    {
                        **_SCOPED,
                        "action": {"enum": ["add", "done", "undo", "rm"]},
                        "text": {"type": "string"},
                        "n": {"type": "integer"},
                    },
                    ["target", "action"],
                ),
                self.update_task,
            ),
            "phux_summary": (
                SUMMARY_DOC,
                schema(
                    {
                        "target": {"type": "string"},
                        "last": {"type": "integer"},
                        "tail": {"type": "integer"},
                    },
                    [],
                ),
                self.summary,
            ),
        }


_SCOPED: dict[str, Any] = {
    "target": {"type": "string"},
    "scope": {"enum": ["session", "window", "pane"]},
}

_WHOSE = "target `name`: a session's, `name:N`: a window's, else a pane's; scope overrides."
_AS_NOTES = " target, scope: as phux_notes."
NOTES_DOC = "Read notes (markdown, kept by the server for every client). " + _WHOSE
SET_NOTES_DOC = 'Replace (notes; "" clears) or append to notes, max 64 KiB.' + _AS_NOTES
TASKS_DOC = "The `- [ ]`/`- [x]` tasks of notes, numbered from 1." + _AS_NOTES
UPDATE_TASK_DOC = "add (text), done/undo/rm (n) one task line of notes." + _AS_NOTES
SUMMARY_DOC = (
    "A pane at a glance: state, the last commands (last, 5) and failure, the screen's"
    " tail (tail lines, 20), notes, open tasks."
)

READ_HINTS = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
WRITE_HINTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": False,
}


def _notes_schema() -> dict[str, Any]:
    from phux.client.models import NotesResult
    from phux.client.schemas import object_schema

    return object_schema(NotesResult)


def _tasks_schema() -> dict[str, Any]:
    from phux.client.models import TaskList
    from phux.client.schemas import object_schema

    return object_schema(TaskList)


def _summary_schema() -> dict[str, Any]:
    from phux.client.models import SummaryResult
    from phux.client.schemas import object_schema

    return object_schema(SummaryResult)


NOTES_META: dict[str, tuple[dict[str, bool], Callable[[], dict[str, Any]]]] = {
    "phux_notes": (READ_HINTS, _notes_schema),
    "phux_set_notes": (WRITE_HINTS, _notes_schema),
    "phux_tasks": (READ_HINTS, _tasks_schema),
    "phux_update_task": (WRITE_HINTS, _tasks_schema),
    "phux_summary": (READ_HINTS, _summary_schema),
}
"""Per tool: its annotations and output schema (PhuxTools wraps them in ToolMeta)."""

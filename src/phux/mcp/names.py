"""The MCP tools' names, titles and which only read: the one table that the
catalog (:mod:`phux.mcp.tools`) and ``phux mcp --help`` are both built from.

No imports beyond the standard library, so ``phux mcp --help`` stays cheap.
"""

from __future__ import annotations

TOOLS: tuple[tuple[str, str, bool], ...] = (
    # (name, title, read-only)
    ("phux_ls", "List sessions", True),
    ("phux_snapshot", "Read a pane's screen", True),
    ("phux_send_keys", "Type keys into a pane", False),
    ("phux_run", "Run a shell command", False),
    ("phux_wait", "Wait for a pane", True),
    ("phux_new", "Create a session", False),
    ("phux_history", "List a pane's commands", True),
    ("phux_paste", "Paste text into a pane", False),
    ("phux_kill", "Kill a session or pane", False),
    ("phux_new_window", "Add a window", False),
    ("phux_split", "Add a pane", False),
    ("phux_tag", "Tag a pane", False),
    ("phux_notes", "Read notes", True),
    ("phux_set_notes", "Write notes", False),
    ("phux_tasks", "List tasks", True),
    ("phux_update_task", "Change a task", False),
    ("phux_summary", "Sum up a pane", True),
)
"""Every tool in catalog order."""

TITLES: dict[str, str] = {name: title for name, title, _ in TOOLS}
READ_ONLY_TOOLS: frozenset[str] = frozenset(name for name, _, ro in TOOLS if ro)
"""The tools that change nothing: all that ``phux mcp --read-only`` serves."""


def tool_list(*, read_only: bool = False) -> str:
    """The tools' names, comma-separated, in catalog order."""
    return ", ".join(name for name, _, ro in TOOLS if ro or not read_only)

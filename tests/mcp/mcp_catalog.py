"""The tools ``phux mcp`` lists, in their order: one list for every test that checks it."""

from __future__ import annotations

FIRST_TWELVE = [
    "phux_ls",
    "phux_snapshot",
    "phux_send_keys",
    "phux_run",
    "phux_wait",
    "phux_new",
    "phux_history",
    "phux_paste",
    "phux_kill",
    "phux_new_window",
    "phux_split",
    "phux_tag",
]
"""The tools before issue 26's (the listing's size is also held for them alone)."""

NOTES_TOOLS = ["phux_notes", "phux_set_notes", "phux_tasks", "phux_update_task", "phux_summary"]

EVERY_TOOL = FIRST_TWELVE + NOTES_TOOLS

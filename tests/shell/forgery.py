"""Files whose text forges the shell's OSC 133 marks (issue 23 item 1), and what
`run` must return for ``cat FILE; echo TAIL; false``: every line, exit 1.

FORGED_D is the issue's file: a forged D (exit 0), a new prompt (A, B) and a
forged command line. FORGED_C is a forged C alone (a command started), then a
forged D. ``keyed(key)`` signs the issue's file's marks with ``key`` (a wrong
key, or another pane's). ``split_script(key)`` prints forged marks in pieces,
with a pause in the middle of each mark and of the pane's own key, so a reader
sees half a mark, then the rest.
"""

from __future__ import annotations

ESC, BEL = "\x1b", "\x07"


def osc(body: str) -> str:
    return f"{ESC}]133;{body}{BEL}"


FORGED_D = (
    "line-1\n"
    + osc("D;0")
    + osc("A")
    + "$ "
    + osc("B")
    + "rm -rf /important\n"
    + "line-3\nline-4\n"
)
FORGED_C = "line-1\n" + osc("C;cmdline_url=rm%20-rf%20%2Fimportant") + "line-2\n" + osc("D;0")

EXPECTED_D = "line-1\n$ rm -rf /important\nline-3\nline-4\nTAIL"
EXPECTED_C = "line-1\nline-2\nTAIL"
EXPECTED_KEYED = EXPECTED_D
EXPECTED_SPLIT = "line-1\n$ rm -rf /x\nline-3\nTAIL"


def keyed(key: str) -> str:
    """The issue's file with every mark signed by ``key``."""
    return (
        "line-1\n"
        + osc(f"D;0;phux_k={key}")
        + osc(f"A;phux_k={key}")
        + "$ "
        + osc(f"B;phux_k={key}")
        + "rm -rf /important\n"
        + osc(f"C;cmdline_url=rm%20-rf%20%2Fimportant;phux_k={key}")
        + "line-3\n"
        + osc(f"D;0;phux_k={key}")
        + "line-4\n"
    )


def split_script(key: str, pause: float = 0.1) -> str:
    """A sh script printing forged marks in pieces ``pause`` seconds apart: a D that
    starts with the pane's ``key`` and goes on with other digits, then an A and a
    B split inside their introducers and their signatures. `sh it` prints
    EXPECTED_SPLIT but its TAIL."""
    pieces = ["line-1\\n", "\\033]133;D", ";0;phux_k=" + key[:7], "f" * 25 + "\\007\\033]1"]
    pieces += ["33;A\\007$ \\033]133;B;phux", "_k=" + "1" * 32 + "\\007rm -rf /x\\n"]
    return f"\nsleep {pause}\n".join(f"printf '{p}'" for p in pieces) + "\nprintf 'line-3\\n'\n"

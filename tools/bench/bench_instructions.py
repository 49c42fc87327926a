"""The engine's instructions for one replica feed of each flood, this tree against a
revision (``$PHUX_BENCH_BASE``, default ``HEAD``: the change not yet committed).

Wall and CPU time for the same work swing ±15% between processes on these machines and
the PTY's rate several times over between minutes, so an engine change of 5-10% does not
show in ``bench_engine``'s ratios. The instructions a process executes do not swing:
each flood of ``bench_engine`` (16 MiB, a replica's largest feed, its history of 2000
rows) is fed once to a fresh engine in a process run under valgrind's callgrind, for
the tree and for the revision (checked out in a temporary git worktree); what the same
process executes without the feed (start-up, imports, reading the bytes) is taken off.
Instructions are not time (a pass over memory costs more than its count says, a
vectorised copy less), so read this beside ``bench_engine``, not instead of it. Needs
valgrind and git; prints nothing without them. ``--quick``: three floods."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.bench.bench_engine import _FLOODS, FLOOD_FEED, FLOOD_HISTORY, ROWS
from tools.bench.harness import Measurement

REPO = Path(__file__).resolve().parents[2]

# Fed in a child under callgrind: the engine of the tree at argv[1], the bytes of
# argv[2], argv[3] columns, fed only if argv[4] says so.
_CHILD = f"""
import sys
sys.path.insert(0, sys.argv[1])
from phux.engine import Terminal
data = open(sys.argv[2], "rb").read()
t = Terminal(int(sys.argv[3]), {ROWS}, history={FLOOD_HISTORY})
if sys.argv[4] == "feed":
    t.feed(data)
"""


def _instructions(src: Path, data: Path, cols: int, feed: bool) -> int:
    done = subprocess.run(
        [
            *["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"],
            *[sys.executable, "-c", _CHILD, str(src), str(data), str(cols)],
            "feed" if feed else "none",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind said no total:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def run(quick: bool) -> list[Measurement]:
    if shutil.which("valgrind") is None or shutil.which("git") is None:
        print("# instructions: needs valgrind and git, skipped", file=sys.stderr)
        return []
    base = os.environ.get("PHUX_BENCH_BASE", "HEAD")
    floods = _FLOODS[:3] if quick else _FLOODS
    out = []
    with tempfile.TemporaryDirectory(prefix="phux-instructions-") as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(worktree), base],
            check=True,
        )
        try:
            trees = {"tree": REPO / "src", "base": worktree / "src"}
            # Compiled first, both: a module compiled inside a feed (no .pyc yet, or a
            # stale one) counted ~45 M instructions against whichever tree it was.
            for src in trees.values():
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
            data = Path(tmp) / "flood"
            start: dict[str, int] = {}
            for name, make, cols, _target in floods:
                data.write_bytes(make(FLOOD_FEED)[:FLOOD_FEED])
                if not start:  # (start-up and reading the same size: once per tree)
                    start = {k: _instructions(src, data, cols, False) for k, src in trees.items()}
                fed = {
                    k: _instructions(src, data, cols, True) - start[k] for k, src in trees.items()
                }
                out.append(
                    Measurement(
                        bench="instructions",
                        name=f"flood {name}: the engine's instructions for one {FLOOD_FEED >> 20}"
                        " MiB feed",
                        unit="M instr",
                        value=fed["tree"] / 1e6,
                        baseline_name=f"the same at {base}",
                        baseline=fed["base"] / 1e6,
                        higher_is_better=False,
                    )
                )
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
                check=False,
            )
    return out

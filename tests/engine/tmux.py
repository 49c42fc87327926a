"""Show bytes in a private tmux server and read back what tmux displays.

Each ``TmuxScreen`` runs its own tmux server on a socket in a temporary
directory (never the user's server) and always kills it. Rendering is
awaited, not slept for: after ``cat`` the pane prints a title marker, and we
poll (with a deadline) until tmux reports that title, which it can only do
after parsing every byte before it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

TMUX = shutil.which("tmux")
_MARKER = "phux-rendered"


@dataclass
class TmuxState:
    history: list[str]
    lines: list[str]
    styled: str  # capture-pane -e -p of the viewport
    cursor_x: int
    cursor_y: int
    cursor_visible: bool
    alternate: bool


class TmuxScreen:
    def __init__(self, cols: int = 120, rows: int = 40) -> None:
        if TMUX is None:
            raise RuntimeError("tmux is not installed")
        self.cols, self.rows = cols, rows
        self._dir = tempfile.TemporaryDirectory(prefix="phux-tmux-")
        self._sock = str(Path(self._dir.name) / "sock")
        self._n = 0

    def __enter__(self) -> TmuxScreen:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        subprocess.run(
            [str(TMUX), "-S", self._sock, "kill-server"],
            capture_output=True,
            timeout=10,
            check=False,
        )
        self._dir.cleanup()

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            [str(TMUX), "-S", self._sock, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout

    def show(self, data: bytes, timeout: float = 30.0) -> TmuxState:
        """Display ``data`` in a fresh window of this server and capture it."""
        return self.play([data], timeout)

    def play(self, steps: list[bytes | tuple[int, int]], timeout: float = 30.0) -> TmuxState:
        """Display each ``bytes`` step and resize the window to each ``(cols, rows)``
        step, in order, in a fresh window of this server, and capture it. Each chunk
        of bytes after the first is let through (``head -c1`` reading a key sent
        with ``send-keys``) once the resizes before it are done."""
        self._n += 1
        if not steps or not isinstance(steps[0], bytes):
            steps = [b"", *steps]
        chunks = [step for step in steps if isinstance(step, bytes)]
        parts = []
        for i, chunk in enumerate(chunks):
            path = Path(self._dir.name) / f"data{self._n}-{i}.bin"
            path.write_bytes(chunk)
            wait = "head -c1 >/dev/null; " if i else ""
            marker = f"{_MARKER}-{self._n}-{i}"
            parts.append(
                f"{wait}cat {shlex.quote(str(path))}; printf '\\033]2;{marker}\\033\\\\'; "
            )
        command = f"stty raw -echo; {''.join(parts)}exec sleep 1000"
        name = f"w{self._n}"
        if self._n == 1:
            self._tmux(
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "phux",
                "-n",
                name,
                "-x",
                str(self.cols),
                "-y",
                str(self.rows),
                command,
            )
            self._tmux("set", "-g", "history-limit", "50000")
            self._tmux("set", "-g", "allow-rename", "off")
            self._tmux("set", "-g", "status", "off")
        else:
            self._tmux("new-window", "-d", "-t", "phux", "-n", name, command)
        target = f"phux:{name}"
        deadline = time.monotonic() + timeout
        shown = -1
        for step in steps:
            if isinstance(step, tuple):
                self._tmux("resize-window", "-t", target, "-x", str(step[0]), "-y", str(step[1]))
                continue
            if shown >= 0:
                self._tmux("send-keys", "-t", target, "x")  # (the next chunk's head -c1)
            shown += 1
            marker = f"{_MARKER}-{self._n}-{shown}"
            while self._tmux("display", "-p", "-t", target, "#{pane_title}").strip() != marker:
                if time.monotonic() > deadline:
                    raise TimeoutError("tmux did not render the data in time")
                time.sleep(0.02)
        fmt = "#{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on} #{history_size}"
        cx, cy, flag, alt, hsize = self._tmux("display", "-p", "-t", target, fmt).split()
        everything = self._tmux("capture-pane", "-p", "-t", target, "-S", "-", "-E", "-")
        rows = everything.split("\n")[:-1]
        history_size = int(hsize)
        styled = self._tmux("capture-pane", "-p", "-e", "-t", target)
        self._tmux("kill-window", "-t", target) if self._n > 1 else None
        return TmuxState(
            history=rows[:history_size],
            lines=rows[history_size:],
            styled=styled,
            cursor_x=int(cx),
            cursor_y=int(cy),
            cursor_visible=flag == "1",
            alternate=alt == "1",
        )

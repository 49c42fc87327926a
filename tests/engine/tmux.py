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
        self._n += 1
        path = Path(self._dir.name) / f"data{self._n}.bin"
        path.write_bytes(data)
        marker = f"{_MARKER}-{self._n}"
        command = (
            f"stty raw -echo; cat {shlex.quote(str(path))}; "
            f"printf '\\033]2;{marker}\\033\\\\'; exec sleep 1000"
        )
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

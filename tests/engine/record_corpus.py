"""Record real program output through a PTY into tests/engine/corpus/*.bin.

Run from the repository root: ``python -m tests.engine.record_corpus [name ...]``.
Each program runs in a fresh 120x40 PTY with TERM=xterm-256color, driven by
scripted keystrokes; every byte it writes is saved. The recordings are
committed, so tests never need these programs; this script regenerates them
(`rich` is needed for the progress bar; htop is recorded only if installed).
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
COLS, ROWS = 120, 40

# A step: wait this many seconds (reading output meanwhile), then send these bytes.
Step = tuple[float, bytes]

CURSES_DEMO = r"""
import curses, time

def main(stdscr):
    curses.curs_set(0)
    curses.start_color()
    curses.init_pair(1, curses.COLOR_YELLOW, curses.COLOR_BLUE)
    stdscr.border()
    stdscr.addstr(0, 3, " curses demo ", curses.color_pair(1) | curses.A_BOLD)
    win = curses.newwin(10, 60, 3, 5)
    win.box()
    win.addstr(0, 2, " log ", curses.A_REVERSE)
    inner = win.derwin(8, 58, 1, 1)
    inner.scrollok(True)
    inner.idlok(True)
    stdscr.noutrefresh(); win.noutrefresh(); curses.doupdate()
    for i in range(25):
        inner.addstr(f"\nentry {i:02d} " + "=" * (i % 30))
        inner.refresh()
        time.sleep(0.01)
    stdscr.addch(20, 10, curses.ACS_ULCORNER)
    stdscr.hline(20, 11, curses.ACS_HLINE, 20)
    stdscr.addch(20, 31, curses.ACS_URCORNER)
    stdscr.refresh()
    time.sleep(0.2)

curses.wrapper(main)
print("curses done")
"""

RICH_DEMO = r"""
import time
from rich.progress import Progress
with Progress() as progress:
    task = progress.add_task("[red]Downloading...", total=40)
    other = progress.add_task("[green]Processing...", total=40)
    for _ in range(40):
        progress.update(task, advance=1)
        progress.update(other, advance=0.5)
        time.sleep(0.02)
print("rich done")
"""

BASH_SCRIPT = [
    (0.5, b"export PS1='\\[\\e[1;32m\\]user@host\\[\\e[0m\\]:\\[\\e[34m\\]~/dir\\[\\e[0m\\]$ '\r"),
    (0.3, b"ls --color=always -la /etc | head -45\r"),
    (0.5, 'echo "❤️ done"; echo 中文字符 日本語のテキスト 한국어\r'.encode()),
    (0.3, b"printf '\\e[38;5;208morange\\e[0m \\e[38;2;10;200;30mtrue\\e[0m'\r"),
    (0.3, b"printf '\\e[1;4mbold-under\\e[0m\\n'\r"),
    (0.3, b"printf '%0.s-' $(seq 1 300); echo\r"),
    (0.3, "echo 'emoji 😀👍🏽 e\u0301 combining'; echo -e 'tab\\there\\tend'\r".encode()),
    (0.3, b"for i in $(seq 1 30); do echo \"line $i $(printf '%*s' $i | tr ' ' '#')\"; done\r"),
    (0.3, b"exit\r"),
]

VIM_SCRIPT = [
    (0.8, b"i"),
    (0.2, b"Hello from vim\rsecond line with \xe4\xb8\xad\xe6\x96\x87\r"),
    (0.2, b"".join(b"line %d of the buffer\r" % i for i in range(50))),
    (0.2, b"\x1b"),
    (0.2, b"gg"),
    (0.2, b":set number\r"),
    (0.2, b"/buffer\r"),
    (0.2, b"dd"),
    (0.2, b"G"),
    (0.3, b":q!\r"),
    (0.5, b""),
]

LESS_SCRIPT = [(0.6, b" "), (0.3, b" "), (0.3, b"b"), (0.3, b"/50\r"), (0.3, b"G"), (0.3, b"q")]
TOP_SCRIPT = [(2.5, b""), (0.2, b"q")]
PYTHON_SCRIPT = [
    (0.8, b'print("hello from the REPL")\r'),
    (0.3, b"1 + 1\r"),
    (0.3, b"for i in range(3):\r"),
    (0.2, b"    print(i * '*')\r"),
    (0.2, b"\r"),
    (0.3, b"[x ** 2 for x in range(40)]\r"),
    (0.3, b"exit()\r"),
]
GIT_SCRIPT = [(0.8, b" "), (0.3, b" "), (0.3, b"q")]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TERM="xterm-256color",
        COLUMNS=str(COLS),
        LINES=str(ROWS),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        HOME=tempfile.gettempdir(),
        PAGER="less",
        LESS="",
        GIT_PAGER="less",
        PYTHONSTARTUP="",
        HISTFILE="/dev/null",
    )
    env.pop("PROMPT_COMMAND", None)
    return env


def record(argv: list[str], steps: list[Step], *, cwd: str | None = None) -> bytes:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(),
        cwd=cwd,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    out = bytearray()

    def pump(seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            ready, _, _ = select.select([master], [], [], left)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return False
                if not data:
                    return False
                out.extend(data)

    for wait, keys in steps:
        if not pump(wait):
            break
        if keys:
            os.write(master, keys)
    pump(1.0)
    if proc.poll() is None:
        proc.send_signal(signal.SIGHUP)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.close(master)
    return bytes(out)


def _git_repo() -> str:
    repo = Path(__file__).resolve().parents[2]
    return str(repo)


RECORDINGS: dict[str, Callable[[], bytes]] = {
    "bash": lambda: record(["bash", "--norc", "--noprofile", "-i"], BASH_SCRIPT),
    "vim": lambda: record(["vim", "-u", "NONE", "-N", "/tmp/phux-corpus-vim.txt"], VIM_SCRIPT),
    "less": lambda: record(["sh", "-c", "seq 1 500 | less"], LESS_SCRIPT),
    "top": lambda: record(["top", "-d", "1"], TOP_SCRIPT),
    "python": lambda: record([sys.executable, "-q", "-i"], PYTHON_SCRIPT),
    "git_log": lambda: record(
        ["git", "log", "--stat", "--color=always", "-n", "40"], GIT_SCRIPT, cwd=_git_repo()
    ),
    "curses": lambda: record([sys.executable, "-c", CURSES_DEMO], [(3.0, b"")]),
    "rich": lambda: record([sys.executable, "-c", RICH_DEMO], [(3.0, b"")]),
}
if shutil.which("htop"):
    RECORDINGS["htop"] = lambda: record(["htop", "-d", "10"], [(2.5, b""), (0.2, b"q")])


def main(names: list[str]) -> None:
    CORPUS.mkdir(exist_ok=True)
    for name in names or list(RECORDINGS):
        data = RECORDINGS[name]()
        (CORPUS / f"{name}.bin").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Shared fixtures for the shell-integration tests: a real server whose panes run
real shells in a temporary HOME, the raw bytes each pane printed, and the marks
in them (spec/shell-integration.md)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded
from phux.engine import Terminal
from phux.wire.frames import (
    EnvVar,
    Input,
    ListTerminals,
    Spawn,
    TerminalList,
    TerminalSpawned,
)
from server.harness import ServerProcess, Stream, subscribe

ESC = "\x1b"
MARK = re.compile(rb"\x1b\]((?:133|7);[^\x07\x1b]*)\x07")
PROMPT_A = b"\x1b]133;A\x07"
PROMPT_B = b"\x1b]133;B\x07"
STEP_TIMEOUT = 15.0


def marks(data: bytes) -> list[str]:
    """Every OSC 133 and OSC 7 payload in ``data``, in order (e.g. ``"133;D;1"``)."""
    return [m.group(1).decode("utf-8", "replace") for m in MARK.finditer(data)]


def url(text: str) -> str:
    """How the integration percent-encodes a command line (RFC 3986 unreserved kept)."""
    return quote(text, safe="-._~")


def cwd_mark(path: str) -> str:
    return "7;file://" + os.uname().nodename + quote(path, safe="/-._~")


FISH_COMPLETIONS = ".local/share/fish/generated_completions"


def settled_home(home: Path) -> Path:
    """``home`` (created) as a machine fish ran on before has it: with the completions
    fish generates from man pages (here none). Without them an interactive fish
    starts, and disowns, a python that parses every man page: half a minute of CPU
    that outlives the test, its server and the HOME (see tests/conftest.py)."""
    (home / FISH_COMPLETIONS).mkdir(parents=True, exist_ok=True)
    return home


def clean_env(home: Path) -> dict[str, str]:
    """A minimal environment, so the host's shell settings do not leak in."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "USER": pwd.getpwuid(os.getuid()).pw_name,
        "LANG": "C.UTF-8",
        "SHELL": "/bin/sh",
    }
    return env


ANNOUNCE = re.compile(rb"\x1b\]133;I;[a-z]+\x07")


@dataclass
class Pane:
    conn: Connection
    terminal: int
    stream: Stream
    cols: int
    rows: int
    key: str = ""
    """The pane's mark key (its ``phux.shell_key`` metadata; "" when it has none)."""

    @property
    def raw(self) -> bytes:
        """Every byte the pane printed, as it printed them."""
        return bytes(self.stream.data)

    @property
    def data(self) -> bytes:
        """What the pane printed, with its marks' signatures (``;phux_k=KEY``) and the
        integration's announce marks taken out: the marks as they read unsigned."""
        data = self.raw
        if self.key:
            data = data.replace(b";phux_k=" + self.key.encode(), b"")
        return ANNOUNCE.sub(b"", data)

    def read_until(self, predicate: Callable[[bytes], bool], timeout: float = STEP_TIMEOUT) -> None:
        deadline = Deadline.after(timeout)
        while not predicate(self.data):
            try:
                frame = self.conn.receive(deadline)
            except DeadlineExceeded as exc:
                raise AssertionError(f"timed out; pane printed {self.data[-2000:]!r}") from exc
            self.stream.feed(frame)

    def type(self, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.conn.call(
            lambda rid: Input(request_id=rid, terminal=self.terminal, data=data),
            Deadline.after(STEP_TIMEOUT),
        )

    def prompts(self) -> int:
        """Primary prompts drawn so far (A marks without k=s)."""
        return self.data.count(PROMPT_A)

    def wait_prompt(self, count: int) -> None:
        """Until ``count`` primary prompts were drawn, the last one up to its B mark."""

        def ready(data: bytes) -> bool:
            return data.count(PROMPT_A) >= count and data.rfind(PROMPT_B) > data.rfind(PROMPT_A)

        self.read_until(ready)

    def command(self, line: str) -> None:
        """Type ``line`` and Enter like a person, then await the next prompt."""
        n = self.prompts()
        self.type(line + "\r")
        self.wait_prompt(n + 1)

    def settle(self, quiet: float = 0.3, timeout: float = STEP_TIMEOUT) -> None:
        """Read until the pane prints nothing for ``quiet`` seconds (for panes without marks)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                self.stream.feed(self.conn.receive(Deadline.after(quiet)))
            except DeadlineExceeded:
                return
        raise AssertionError("the pane never went quiet")

    def screen(self) -> list[str]:
        """The rendered lines (history included), trailing blank lines dropped."""
        term = Terminal(self.cols, self.rows, 1000)
        term.feed(self.data)
        lines = term.logical_lines(scrollback=0)
        while lines and not lines[-1]:
            lines.pop()
        return lines


class ShellHost:
    """A real server in a short temp dir, with a temp HOME its panes' shells use."""

    def __init__(self, server_env: dict[str, str] | None = None, *server_args: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="phux-sh-", dir="/tmp"))
        self.home = settled_home(self.dir / "home")
        env = clean_env(self.home)
        env.update(server_env or {})
        self.server = ServerProcess(self.dir, *server_args, env=env)
        self.conns: list[Connection] = []

    def start(self) -> None:
        self.server.start()

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.close()
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def make_home(self, name: str, files: dict[str, str] | None = None) -> Path:
        """A HOME of its own for one test's panes (pass it as the SPAWN's HOME)."""
        home = self.dir / name
        home.mkdir()
        settled_home(home)
        for rel, text in (files or {}).items():
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return home

    def write(self, name: str, text: str) -> Path:
        path = self.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def read(self, name: str) -> str:
        path = self.home / name
        return path.read_text() if path.exists() else ""

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        cols: int = 100,
        rows: int = 40,
        cwd: str | None = None,
    ) -> Pane:
        conn = self.server.connect()
        self.conns.append(conn)
        envs = [EnvVar(name=k, value=v) for k, v in (env or {}).items()]
        start = cwd or (env or {}).get("HOME") or str(self.home)
        reply = conn.call_expect(
            lambda rid: Spawn(request_id=rid, argv=argv, cols=cols, rows=rows, env=envs, cwd=start),
            TerminalSpawned,
            Deadline.after(5.0),
        )
        tid = reply.terminal
        key = next((m.value.decode() for m in reply.metadata if m.key == "phux.shell_key"), "")
        subscribe(conn, tid)
        return Pane(conn, tid, Stream(tid), cols, rows, key)

    def attach(self, tid: int, cols: int = 80, rows: int = 24) -> Pane:
        """Subscribe to a pane something else started (its size must be given)."""
        conn = self.server.connect()
        self.conns.append(conn)
        listing = conn.call_expect(
            lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(5.0)
        )
        info = next(t for t in listing.terminals if t.terminal == tid)
        key = next((m.value.decode() for m in info.metadata if m.key == "phux.shell_key"), "")
        subscribe(conn, tid)
        return Pane(conn, tid, Stream(tid), cols, rows, key)


@contextlib.contextmanager
def shell_host(server_env: dict[str, str] | None = None, *server_args: str) -> Iterator[ShellHost]:
    host = ShellHost(server_env, *server_args)
    try:
        host.start()
        yield host
    finally:
        host.close()


def command_marks(data: bytes) -> list[str]:
    """The C and D marks, with C's cmdline decoded: ``["C echo hi", "D 0", ...]``."""
    out = []
    for mark in marks(data):
        if mark.startswith("133;C"):
            params = dict(p.split("=", 1) for p in mark.split(";")[2:] if "=" in p)
            line = params.get("cmdline_url")
            out.append("C" if line is None else "C " + unquote(line))
        elif mark.startswith("133;D"):
            out.append("D " + mark.split(";")[2])
    return out


def cycle_order(data: bytes) -> list[str]:
    """The marks reduced to their kinds (``D``, ``7``, ``A``, ``As``, ``B``, ``C``)."""
    kinds = []
    for mark in marks(data):
        if mark.startswith("7;"):
            kinds.append("7")
        elif mark == "133;A;k=s":
            kinds.append("As")
        else:
            kinds.append(mark.split(";")[1])
    return kinds


STANDARD = ["true", "false", "sh -c 'exit 42'", "true", "false", 'echo "é\'x"']
"""Exit statuses 0, 1, 42, and a failure after a success; then unicode and quotes."""
STANDARD_STATUSES = ["0", "1", "42", "0", "1", "0"]


def drive_standard(pane: Pane, cd_to: str, last: str, continuation: bool = True) -> list[str]:
    """Type the STANDARD commands, a two-line command (when the shell has a
    continuation prompt), ``cd cd_to`` and ``last``; the command lines as typed."""
    pane.wait_prompt(1)
    for line in STANDARD:
        pane.command(line)
    typed = list(STANDARD)
    pane.type('echo "a\r')
    if continuation:
        pane.read_until(lambda d: d.rfind(b"\x1b]133;A;k=s\x07") > d.rfind(PROMPT_A))
    pane.command('b"')
    typed.append('echo "a\nb"')
    pane.command(f'cd "{cd_to}"')
    pane.command(last)
    return [*typed, f'cd "{cd_to}"', last]


def output_of(pane: Pane, line: str) -> list[str]:
    """Type ``line``, await the prompt, return the screen rows it printed."""
    pane.command(line)
    screen = pane.screen()
    at = max(i for i, row in enumerate(screen) if row.endswith(line))
    return screen[at + 1 : -1]


class WatchProcess:
    """`phux watch --json` in a subprocess, its lines read by a thread (``arrived``:
    when each event was read, monotonic, in the order ``next`` returned them)."""

    def __init__(self, host: ShellHost, pane: Pane) -> None:
        argv = [sys.executable, "-m", "phux", "watch", "--json", "--timeout", "60"]
        argv += ["--socket", str(host.server.socket), f"@{pane.terminal}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.lines: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.arrived: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))

    def next(self, timeout: float) -> dict[str, Any] | None:
        try:
            at, event = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        self.arrived.append((at, event))
        return event

    def until(self, name: str, timeout: float = 15) -> list[dict[str, Any]]:
        end = time.monotonic() + timeout
        seen = []
        while time.monotonic() < end:
            event = self.next(end - time.monotonic())
            if event is None:
                break
            seen.append(event)
            if event["event"] == name:
                return seen
        raise AssertionError(f"no {name} event; saw {seen}")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def await_watching(watch: WatchProcess, pane: Pane) -> None:
    """Type a character at the prompt until the watch reports the echo (it is
    subscribed then), and rub it out."""
    end = time.monotonic() + 20
    while time.monotonic() < end:
        pane.type("x")
        event = watch.next(0.5)
        pane.type("\x7f")
        if event is not None:
            while watch.next(0.3) is not None:
                pass
            return
    raise AssertionError("the watch never reported output")

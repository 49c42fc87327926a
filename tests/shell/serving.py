"""A real phux server whose panes take a given HOME, driven the way an agent drives
it: the CLI as a process of its own per call (forked from one that imported the CLI
once: tests/shell/cli_fork.py), and MCP through one long-lived `phux mcp`.

``serving_files`` starts one for a dict of files; ``serving`` for a corpus
configuration (tests/shell/corpus.py). Steps that only set a test up (type keys,
poll the screen, await a prompt) go through :attr:`Server.client`, an in-process
client, which costs milliseconds where a CLI process costs a tenth of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from phux.client import Client, Deadline
from phux.client.models import HistoryEntry

from .cli_fork import CliForker
from .corpus import Config, build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from mcp_pipes import McpProcess

STEP = 30.0
"""A deadline no step of a passing test comes near."""


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        doc = json.loads(self.out)
        assert isinstance(doc, dict)
        return doc


@dataclass
class Answer:
    """An MCP tool's reply: ``error`` True for an isError result; ``body`` its JSON
    (or its text, when an error's text is not JSON)."""

    error: bool
    body: Any
    text: str


class Mcp:
    """One `phux mcp` on a server, past its initialize handshake."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = McpProcess(env=env)
        try:
            reply = self.proc.ask(0, "initialize", {"protocolVersion": "2025-06-18"})
            assert "result" in reply, reply
        except BaseException:
            self.proc.stop()
            raise
        self._rid = 0

    def __call__(self, tool: str, args: dict[str, Any]) -> Answer:
        self._rid += 1
        reply = self.proc.call(tool, args, rid=self._rid, timeout=STEP + 10)
        result = reply["result"]
        text = str(result["content"][0]["text"])
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        return Answer(bool(result["isError"]), body, text)

    def ok(self, tool: str, args: dict[str, Any]) -> Any:
        """The body of a reply that must not be an error."""
        answer = self(tool, args)
        assert not answer.error, answer.text
        return answer.body

    def close(self) -> None:
        self.proc.stop()


class Server:
    """A phux server whose panes start in (and take as HOME) ``home``."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.socket = root / "s"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHUX_", "ZDOTDIR"))}
        for var in ("ENV", "PROMPT_COMMAND", "PS1", "BASH_ENV", "XDG_CONFIG_HOME"):
            env.pop(var, None)
        env.update(HOME=str(home), PHUX_SOCKET=str(self.socket), SHELL="/bin/sh")
        env.update(XDG_DATA_HOME=str(home / ".local/share"), TERM="xterm-256color")
        self.env = env
        self.home = home
        self._client: Client | None = None
        self._mcp: Mcp | None = None
        self._cli: CliForker | None = None
        self._cli_lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phux", "server", "--socket", str(self.socket)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=home,
        )
        deadline = time.monotonic() + 20
        while not self.socket.exists():
            assert self.proc.poll() is None, "server exited at start"
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)

    def __call__(self, *args: str) -> Result:
        """``phux ARGS`` as an agent types it, in HOME: a process of its own, forked
        from one that imported the CLI (tests/shell/cli_fork.py), or with
        ``PHUX_TESTS_CLI=exec`` a ``python -m phux`` of its own."""
        if os.environ.get("PHUX_TESTS_CLI") == "exec":
            proc = subprocess.run(
                [sys.executable, "-m", "phux", *args],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=STEP + 10,
                cwd=self.home,
            )
            return Result(proc.returncode, proc.stdout, proc.stderr)
        with self._cli_lock:  # (tests call the CLI from threads too)
            if self._cli is None:
                self._cli = CliForker(self.env, self.home, self.root)
            cli = self._cli
        return Result(*cli.run(list(args), timeout=STEP + 10))

    @property
    def client(self) -> Client:
        """An in-process client (for setting a test up, not for what it checks)."""
        if self._client is None:
            self._client = Client(self.socket, env={})
        return self._client

    @property
    def mcp(self) -> Mcp:
        """The server's `phux mcp`, started on first use."""
        if self._mcp is None:
            self._mcp = Mcp(self.env)
        return self._mcp

    def stop(self) -> None:
        if self._cli is not None:
            self._cli.close()
        if self._mcp is not None:
            self._mcp.close()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def screen(self, target: str) -> list[str]:
        """The pane's visible rows."""
        lines = self.client.snapshot_data(target, deadline=Deadline.after(STEP))["lines"]
        return [str(line) for line in lines]

    def screen_text(self, target: str) -> str:
        """The pane's scrollback and screen, through the CLI."""
        res = self("snapshot", "--json", "--scrollback", target)
        assert res.code == 0, res.err
        return "\n".join(str(line) for line in res.json()["lines"])

    def cursor_x(self, target: str) -> int:
        cursor = self.client.snapshot_data(target, deadline=Deadline.after(STEP))["cursor"]
        return int(cursor["x"])

    def state(self, target: str) -> str:
        return str(self.client.snapshot_data(target, deadline=Deadline.after(STEP))["state"])

    def keys(self, target: str, *keys: str) -> None:
        self.client.send_keys(target, list(keys), Deadline.after(STEP))

    def await_prompt(self, target: str) -> None:
        result = self.client.wait(
            target, prompt=True, timeout=STEP, deadline=Deadline.after(STEP + 5)
        )
        assert result.met, f"no prompt: {result.screen.lines}"

    def await_screen(self, target: str, text: str) -> None:
        """Until the pane's screen shows ``text`` (the shell echoed typed keys)."""
        deadline = time.monotonic() + STEP
        while not any(text in line for line in self.screen(target)):
            assert time.monotonic() < deadline, f"never drawn: {text!r}: {self.screen(target)}"
            time.sleep(0.05)

    def cursor_line(self, target: str) -> tuple[str, int]:
        """The row the cursor is on and the cursor's column, from one snapshot."""
        data = self.client.snapshot_data(target, deadline=Deadline.after(STEP))
        cursor, lines = data["cursor"], data["lines"]
        row = int(cursor["y"])
        return (str(lines[row]) if row < len(lines) else ""), int(cursor["x"])

    def await_typed(self, target: str, text: str) -> int:
        """Until the shell echoed ``text`` just before the cursor (what an earlier test
        typed, still on the screen, is not this); the column the text starts at."""
        deadline = time.monotonic() + STEP
        while True:
            line, x = self.cursor_line(target)
            if line[:x].endswith(text):
                return x - len(text)
            assert time.monotonic() < deadline, f"never echoed: {text!r}: {(line, x)}"
            time.sleep(0.02)

    def history_entries(self, target: str) -> list[dict[str, Any]]:
        """``phux history --json TARGET``'s commands (the CLI's)."""
        res = self("history", "--json", target)
        assert res.code == 0, res.err
        commands = res.json()["commands"]
        assert isinstance(commands, list)
        return commands

    def history(self, target: str) -> list[str]:
        """The command lines `phux history` lists (empty lines left out)."""
        return [str(e["command"]) for e in self.history_entries(target) if e["command"]]

    def client_history(self, target: str) -> list[HistoryEntry]:
        """The pane's commands, read in process (what a test starts from or awaits;
        the CLI's and MCP's lists are what it checks)."""
        return self.client.history(target, deadline=Deadline.after(STEP)).commands

    def commands(self, target: str) -> list[tuple[str, int | None]]:
        """:meth:`client_history`'s command lines (the empty left out) and exit codes."""
        return [(e.command, e.exit_code) for e in self.client_history(target) if e.command]


@contextlib.contextmanager
def serving_files(files: dict[str, str], prefix: str = "phux-rc-") -> Iterator[Server]:
    """A server whose panes' HOME holds ``files`` (relative path -> text)."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        server = Server(root, build(Config("", "", files), root / "home"))
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def serving(config: Config) -> contextlib.AbstractContextManager[Server]:
    """A server whose panes' HOME is ``config``'s."""
    return serving_files(config.files)


def need_shell(shell: str) -> None:
    """Skip unless ``shell`` is installed; under CI=true fail (``.ci/run`` installs it)."""
    if shutil.which(shell) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{shell} is not installed")
        pytest.skip(f"{shell} is not installed")

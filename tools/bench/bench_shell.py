"""Shell-integration benchmark: what the injected hooks cost at each prompt.

- **prompts**: a pane's shell (bash, zsh) with a plain user rc file; press
  Enter on an empty line 100 times (30 with --quick), each time awaiting the
  next prompt, timed per prompt. Figure: with phux's shell integration;
  baseline: the same shell in the same server with ``PHUX_SHELL_INTEGRATION=0``
  in its SPAWN. The two alternate, and each figure is the median of the rounds.
  Target: the hooks add at most a few ms to a prompt.
- **commands**: the same with ``:`` typed before each Enter, so the command
  marks are printed too (bash forks once more for the command line).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import BootstrapChunk, EnvVar, Output, Spawn, Subscribe, TerminalSpawned
from tools.bench.bench_server import connect, phux_server, send
from tools.bench.harness import Measurement

BENCH = "shell"
PROMPT = b"p%d> "
RC = {
    "bash": (".bashrc", "n=0; PROMPT_COMMAND='n=$((n+1))'; PS1='p$n> '\n"),
    "zsh": (".zshrc", "n=0; precmd() { n=$((n+1)) }; setopt promptsubst; PS1='p$n> '\n"),
}


class Pane:
    def __init__(self, sock: Path, shell: str, home: Path, integration: bool) -> None:
        self.conn: Connection = connect(sock)
        env = [EnvVar(name="HOME", value=str(home))]
        if not integration:
            env.append(EnvVar(name="PHUX_SHELL_INTEGRATION", value="0"))
        reply = self.conn.call_expect(
            lambda rid: Spawn(request_id=rid, argv=[shell], env=env, cwd=str(home)),
            TerminalSpawned,
            Deadline.after(10),
        )
        self.terminal = reply.terminal
        self.conn.submit(lambda rid: Subscribe(request_id=rid, terminal=self.terminal))
        self.data = bytearray()
        self.prompts = 1
        """The user's hook counts prompts, the first one included."""

    def await_prompt(self, number: int) -> None:
        """Until the prompt numbered ``number`` (its text carries the count) is drawn."""
        want = PROMPT % number
        deadline = Deadline.after(20)
        while want not in self.data:
            frame = self.conn.receive(deadline)
            if isinstance(frame, Output | BootstrapChunk) and frame.terminal == self.terminal:
                self.data += frame.data
        # Keep only what follows, so the search stays short.
        del self.data[: self.data.index(want)]

    def enters(self, count: int, line: bytes = b"") -> float:
        """Seconds per prompt over ``count`` Enters after ``line``."""
        start = time.perf_counter()
        for _ in range(count):
            self.prompts += 1
            send(self.conn, self.terminal, line + b"\r")
            self.await_prompt(self.prompts)
        return (time.perf_counter() - start) / count

    def close(self) -> None:
        send(self.conn, self.terminal, b"exit\r")
        self.conn.close()


def measure(
    sock: Path, directory: Path, shell: str, count: int, rounds: int, line: bytes
) -> Measurement:
    home = directory / f"home-{shell}-{len(line)}"
    home.mkdir()
    name, text = RC[shell]
    (home / name).write_text(text)
    panes = {flag: Pane(sock, shell, home, flag) for flag in (True, False)}
    samples: dict[bool, list[float]] = {True: [], False: []}
    try:
        for pane in panes.values():
            pane.await_prompt(1)
            pane.enters(5)  # warm up
        for _ in range(rounds):
            for flag, pane in panes.items():
                samples[flag].append(pane.enters(count, line))
    finally:
        for pane in panes.values():
            pane.close()
    return Measurement(
        BENCH,
        f"{shell}: prompt after {'a command' if line else 'Enter'}, with integration",
        "ms",
        statistics.median(samples[True]) * 1000,
        "without integration",
        statistics.median(samples[False]) * 1000,
        higher_is_better=False,
        target="hooks add at most a few ms",
    )


def run(quick: bool) -> list[Measurement]:
    count = 30 if quick else 100
    rounds = 3 if quick else 5
    directory = Path(tempfile.mkdtemp(prefix="phux-bench-sh-", dir="/tmp"))
    try:
        with phux_server(directory) as (sock, _proc):
            return [
                measure(sock, directory, shell, count, rounds, line)
                for line in (b"", b":")
                for shell in ("bash", "zsh")
                if shutil.which(shell)
            ]
    finally:
        shutil.rmtree(directory, ignore_errors=True)

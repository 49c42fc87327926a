"""``phux ARGS`` in a process of its own, forked from one that imported the CLI
already (tests/shell/cli_zygote.py): what ``subprocess.run([python, -m, phux,
*ARGS], capture_output=True, text=True)`` gives, without the interpreter's start and
the imports (~0.4 s a call under the suite's load, where the call itself often takes
less). The child is the real CLI: its own pid, argv, environment, working directory,
stdin, stdout, stderr and exit status; only the imports were done before the fork.
tests/cli starts the real ``python -m phux`` in every test.

One :class:`CliForker` serves one fixed environment and working directory (a
:class:`serving.Server`'s), which the zygote's imports see too.
"""

from __future__ import annotations

import contextlib
import json
import locale
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

ZYGOTE = Path(__file__).with_name("cli_zygote.py")


class CliForker:
    """A zygote for one environment and working directory; :meth:`run` calls the CLI."""

    def __init__(self, env: dict[str, str], cwd: Path, scratch: Path) -> None:
        self._socket = scratch / "cli-zygote"
        self._log = scratch / "cli-zygote.err"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self._socket))
            listener.listen(16)
            with open(self._log, "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, str(ZYGOTE), str(listener.fileno())],
                    env=env,
                    cwd=cwd,
                    pass_fds=[listener.fileno()],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
        finally:
            listener.close()  # (the zygote has its own copy; calls queue until it accepts)

    def run(
        self,
        args: list[str],
        timeout: float,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdin: str | None = None,
    ) -> tuple[int, str, str]:
        """``phux ARGS``: its exit code (``-N`` for signal N), stdout and stderr, decoded
        as ``subprocess.run(..., text=True)`` decodes them. Like subprocess.run, kills
        the child and raises ``TimeoutExpired`` after ``timeout`` seconds. ``env`` and
        ``cwd`` replace the zygote's for this child; ``stdin`` is written to a pipe that
        is its stdin (as ``input=``), else it inherits this process's fd 0."""
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(tempfile.TemporaryFile())
            err = stack.enter_context(tempfile.TemporaryFile())
            conn = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            child_stdin = _stdin() if stdin is None else stack.enter_context(_fed(stdin))
            conn.settimeout(timeout)
            request = {
                "argv": args,
                "env": env,
                "cwd": None if cwd is None else os.fspath(cwd),
            }
            try:
                conn.connect(str(self._socket))
                line = json.dumps(request).encode() + b"\n"
                socket.send_fds(conn, [line], [child_stdin, out.fileno(), err.fileno()])
                answers = conn.makefile("rb")
                pid = int(answers.readline())
            except TimeoutError:  # (the zygote still importing, on a loaded machine)
                raise subprocess.TimeoutExpired(["phux", *args], timeout) from None
            except (OSError, ValueError) as exc:
                raise AssertionError(f"the CLI zygote failed: {self._log.read_text()}") from exc
            try:
                status = int(answers.readline())
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(["phux", *args], timeout) from None
            out.seek(0)
            err.seek(0)
            return os.waitstatus_to_exitcode(status), _text(out.read()), _text(err.read())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=5)


def _stdin() -> int:
    """The stdin a subprocess would inherit (fd 0), or /dev/null's when it is closed."""
    try:
        os.fstat(0)
    except OSError:
        return os.open(os.devnull, os.O_RDONLY)  # (a leak of one fd, in a rare case)
    return 0


@contextlib.contextmanager
def _fed(text: str) -> Iterator[int]:
    """The read end of a pipe that a thread fills with ``text`` (encoded as
    subprocess's text mode encodes ``input=``) and then closes."""
    read_end, write_end = os.pipe()
    data = text.encode(locale.getencoding())

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), open(write_end, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield read_end
    finally:
        os.close(read_end)  # (a child that stopped reading: the writer gets EPIPE)
        writer.join(timeout=10)


def _text(data: bytes) -> str:
    """As subprocess's text mode decodes a captured stream (universal newlines)."""
    text = data.decode(locale.getencoding())
    return text.replace("\r\n", "\n").replace("\r", "\n")

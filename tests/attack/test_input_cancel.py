"""Input is cancellable (issue 15, item 7): what a client gave up on, or left
behind when it went away, is never typed later, and an interrupt key jumps the
queue of pasted data."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client import Client, Deadline
from phux.client.connection import Connection
from phux.client.errors import DeadlineExceeded
from phux.wire.frames import Input
from server.harness import paste_in_background

from .input_server import (
    DEAF_TO_INPUT,
    GATED_READER,
    SLOW_LINE_READER,
    SLOW_RAW_READER,
    file_size,
    running_server,
    start,
    wait_for,
)

CLI = [sys.executable, "-m", "phux"]
PASTE = 36 * 1024 * 1024  # the paste
PIECE = 1024 * 1024


@pytest.fixture
def sock() -> Iterator[Path]:
    with running_server() as path:
        yield path


def terminal_of(client: Client, name: str) -> int:
    return client.resolve(name, Deadline.after(5)).terminal


def test_send_keys_that_timed_out_is_not_typed_later(sock: Path, tmp_path: Path) -> None:
    """The retry scenario: the program is not reading, `send-keys` times out, the
    agent retries; once the program reads, it must see the retry only."""
    gate, out = tmp_path / "gate", tmp_path / "out"
    with Client(sock, env={}) as client:
        start(client, "gated", GATED_READER, str(gate), str(out))
        wait_for("the reader", Path(f"{out}.ready").exists, 10)
        tid = terminal_of(client, "gated")
        # Another client's paste fills the PTY: input for it queues in the server.
        filler = Connection.open(sock, Deadline.after(5))
        filler.submit(lambda rid: Input(request_id=rid, terminal=tid, data=b"f" * PIECE))
        # The CLI gives up (and exits) ...
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "phux",
                "send-keys",
                "--socket",
                str(sock),
                "--timeout",
                "0.5",
                "gated",
                "RETRYMARK1",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode != 0 and "timed out" in done.stderr, done.stderr
        # ... and so does a long-lived library client, which stays around.
        patient = Client(sock, env={})
        try:
            with pytest.raises(DeadlineExceeded):
                patient.send_keys("gated", ["RETRYMARK2"], Deadline.after(0.5))
            gate.touch()
            filler.wait_reply(1, Deadline.after(30))
            client.send_keys("gated", ["END"], Deadline.after(30))
            wait_for("END", lambda: out.exists() and b"END" in out.read_bytes(), 30)
        finally:
            patient.close()
            filler.close()
    data = out.read_bytes()
    assert data == b"f" * PIECE + b"END", data.replace(b"f" * 64, b"")[:200]


ATTACKER = r"""
import sys
from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import Input
sock, tid, total, piece = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
conn = Connection.open(sock, Deadline.after(10))
chunk = b"z" * piece
for _ in range(total // piece):
    conn.submit(lambda rid: Input(request_id=rid, terminal=tid, data=chunk))
print("sent", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def roomy_sock() -> Iterator[Path]:
    """A server that takes a whole 36 MB paste into its queue (its input caps raised),
    so that the paste is still queued there when its client dies."""
    roomy = str(64 * 1024 * 1024)
    with running_server(PHUX_MAX_INPUT_BACKLOG=roomy, PHUX_MAX_TERMINAL_INPUT=roomy) as path:
        yield path


def test_paste_from_a_killed_client_stops_promptly(roomy_sock: Path, tmp_path: Path) -> None:
    sock = roomy_sock
    out = tmp_path / "out"
    with Client(sock, env={}) as client:
        start(client, "slow", SLOW_RAW_READER, str(out))
        wait_for("the reader", Path(f"{out}.ready").exists, 10)
        tid = terminal_of(client, "slow")
        attacker = subprocess.Popen(
            [sys.executable, "-c", ATTACKER, str(sock), str(tid), str(PASTE), str(PIECE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            assert attacker.stdout is not None
            assert attacker.stdout.readline() == b"sent\n"
            wait_for("the paste to start", lambda: file_size(out) >= PIECE, 20)
        finally:
            attacker.send_signal(signal.SIGKILL)
            attacker.wait(timeout=10)
        # What the kernel already holds still arrives; nothing after it.
        time.sleep(1.0)
        settled = file_size(out)
        time.sleep(0.5)
        assert file_size(out) == settled, "the dead client's paste is still being typed"
        assert settled < PASTE // 4


def test_interrupt_jumps_a_queued_paste(sock: Path, tmp_path: Path) -> None:
    """C-c reaches a slow reader ahead of a 36 MB paste queued before it."""
    out = tmp_path / "out"
    line = b"q" * 999 + b"\n"
    with Client(sock, env={}) as client:
        start(client, "lines", SLOW_LINE_READER, str(out))
        wait_for("the reader", Path(f"{out}.ready").exists, 10)
        tid = terminal_of(client, "lines")
        paster = Connection.open(sock, Deadline.after(5))
        chunk = line * (PIECE // len(line))
        sending = paste_in_background(paster, tid, chunk, PASTE // len(chunk))
        try:
            time.sleep(0.2)  # the paste is queued and flowing
            began = time.monotonic()
            client.send_keys("lines", ["C-c"], Deadline.after(10))
            wait_for("SIGINT", Path(f"{out}.sigint").exists, 8)
            assert time.monotonic() - began < 8
        finally:
            paster.interrupt()  # the rest of the paste is never sent
            sending.join(10)
            paster.close()
    assert os.path.exists(f"{out}.sigint")


def test_interrupt_reaches_a_program_whose_unread_lines_fill_its_tty(
    sock: Path, tmp_path: Path
) -> None:
    """A canonical tty holding whole lines its program never reads takes no byte
    more into its line discipline: a C-c written behind them would never be seen,
    though the PTY has room for it. The tty discards unread input on an interrupt
    anyway, so the server does so first and then writes the C-c (spec/L1.md §7).
    (CI caught this as a flaky test: a paste that had finished writing, with no
    INPUT cut and no full PTY, left the C-c behind it.)"""
    out = tmp_path / "out"
    with Client(sock, env={}) as client:
        start(client, "deaf-lines", DEAF_TO_INPUT, str(out))
        wait_for("the program", Path(f"{out}.ready").exists, 10)
        tid = terminal_of(client, "deaf-lines")
        with Connection.open(sock, Deadline.after(5)) as paster:
            lines = (b"x" * 1023 + b"\n") * 8  # twice the line discipline's 4 KiB
            paster.call(
                lambda rid: Input(request_id=rid, terminal=tid, data=lines), Deadline.after(10)
            )
        client.send_keys("deaf-lines", ["C-c"], Deadline.after(10))
        wait_for("SIGINT", Path(f"{out}.sigint").exists, 8)


def test_an_interrupt_is_written_to_a_raw_program_whose_full_input_it_never_reads(
    sock: Path, tmp_path: Path
) -> None:
    """Raw mode (no ISIG): C-c is a byte like any other, but it must not wait behind a
    paste the program does not read. The server cuts the paste, discards the unread
    input and writes the C-c, which the program reads once it reads again."""
    gate, out = tmp_path / "gate", tmp_path / "out"
    with Client(sock, env={}) as client:
        start(client, "deaf-raw", GATED_READER, str(gate), str(out))
        wait_for("the program", Path(f"{out}.ready").exists, 10)
        tid = terminal_of(client, "deaf-raw")
        paster = Connection.open(sock, Deadline.after(5))
        sending = paste_in_background(paster, tid, b"y" * 1024, 4 * 1024)
        try:
            wait_for("a full line discipline", Path(f"{out}.full").exists, 10)
            client.send_keys("deaf-raw", ["C-c"], Deadline.after(10))
            # The paste goes on behind the C-c; it is stopped only once the C-c is
            # read: a paste cut mid-write discards the unread input, the C-c with it.
            gate.touch()
            wait_for("the C-c", lambda: out.exists() and b"\x03" in out.read_bytes(), 10)
        finally:
            paster.interrupt()
            sending.join(10)
            paster.close()


# Does not read its terminal until GATE exists (a program busy with something else,
# like `sleep`), then copies what it reads to OUT, line by line (a cooked tty).
DEAF_UNTIL_GATE = 'while [ ! -e "$1" ]; do sleep 0.02; done; exec cat > "$2"'


def test_send_keys_to_a_program_not_reading_says_so_and_types_nothing_later(
    sock: Path, tmp_path: Path
) -> None:
    """The tty takes a few KiB and then stops taking input: the CLI must say that the
    program is not reading (not that the server may be wedged), and none of what it
    gave up on may be read by the program later, not even what the tty had taken."""
    gate, out = tmp_path / "gate", tmp_path / "out"
    payload = "LEAKED-LINE\n" * 5000  # 60 KB: far more than a tty's input queue
    with Client(sock, env={}) as client:
        client.new(
            "deaf",
            command=["sh", "-c", DEAF_UNTIL_GATE, "sh", str(gate), str(out)],
            cwd="/",
            deadline=Deadline.after(10),
        )
        done = subprocess.run(
            [*CLI, "send-keys", "--socket", str(sock), "--timeout", "3", "deaf", payload],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 1, (done.returncode, done.stderr)
        assert "is not reading its input" in done.stderr, done.stderr
        assert "will not be typed later" in done.stderr, done.stderr
        assert "wedged" not in done.stderr, done.stderr
        gate.touch()
        client.send_keys("deaf", ["END", "Enter"], Deadline.after(10))
        wait_for("END", lambda: out.exists() and b"END" in out.read_bytes(), 10)
    assert out.read_bytes() == b"END\n", out.read_bytes()[:200]

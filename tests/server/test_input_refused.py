"""A piece of an input unit refused for room (the program is not reading) cancels the
rest of its unit (issue 24 item 3): what was typed is a prefix of the paste, never a
paste with a hole in it. And the CLI says how much of a paste was typed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import Input

from .harness import ServerProcess, Stream, read_until, running_server, spawn, subscribe

CAP = 1024 * 1024  # the terminal's input cap for these tests


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("refused")
    with running_server(directory, PHUX_MAX_TERMINAL_INPUT=str(CAP)) as srv:
        yield srv


def slow_reader(out: Path) -> list[str]:
    """Reads nothing for a second, then copies its input to ``out``."""
    return ["/bin/sh", "-c", f"stty raw -echo; printf READY; sleep 1; exec cat > {out}"]


def gated_reader(gate: Path, out: Path) -> list[str]:
    """Reads nothing until ``gate`` exists, then copies its input to ``out``."""
    return [
        "/bin/sh",
        "-c",
        f"stty raw -echo; printf READY; while [ ! -e {gate} ]; do sleep 0.01; done; "
        f"exec cat > {out}",
    ]


def test_a_refused_piece_cancels_the_rest_of_its_unit(
    server: ServerProcess, tmp_path: Path
) -> None:
    gate, out = tmp_path / "gate", tmp_path / "out"
    with server.connect() as conn:
        tid = spawn(conn, gated_reader(gate, out))
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"READY" in s.data)
        deadline = Deadline.after(10)

        def send(data: bytes, more: bool) -> int:
            return conn.submit(
                lambda rid: Input(request_id=rid, terminal=tid, data=data, more=more), deadline
            )

        first = send(b"a" * (CAP // 2), True)  # queued: the program reads nothing yet
        with pytest.raises(ServerError) as refused:
            conn.wait_reply(send(b"b" * CAP, True), deadline)
        assert refused.value.wire_code == ErrorCode.RESOURCE_EXHAUSTED
        gate.touch()  # now it reads: there would be room for the last piece
        conn.wait_reply(first, deadline)  # the first piece is written
        with pytest.raises(ServerError) as cancelled:
            conn.wait_reply(send(b"c" * 10, False), deadline)
        assert cancelled.value.wire_code == ErrorCode.INPUT_CANCELLED
        conn.wait_reply(send(b"z", False), deadline)  # a new unit is typed again
    limit = time.monotonic() + 10
    while not out.exists() or out.stat().st_size < CAP // 2 + 1:
        assert time.monotonic() < limit, "the input never arrived"
        time.sleep(0.05)
    assert out.read_bytes() == b"a" * (CAP // 2) + b"z"  # a prefix: no "c" after a hole


def test_paste_says_how_much_was_typed(server: ServerProcess, tmp_path: Path) -> None:
    """Its first INPUT is written once the program reads; its second came while the
    first was still queued and was refused: the CLI says what was typed."""
    out = tmp_path / "out"
    env = {**os.environ, "PHUX_SOCKET": str(server.socket)}
    with server.connect() as conn:
        tid = spawn(conn, slow_reader(out))
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"READY" in s.data)
    text = "x" * (8 * 1024 * 1024 + CAP * 2)  # two INPUT frames: the second is refused
    proc = subprocess.run(
        [sys.executable, "-m", "phux", "paste", f"@{tid}"],
        input=text,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"typed {8 * 1024 * 1024} of {len(text)} bytes" in proc.stderr, proc.stderr
    assert "not reading" in proc.stderr

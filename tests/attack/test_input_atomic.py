"""One `send-keys` (or paste) is one atomic piece of input: concurrent writers to
one terminal never interleave inside each other's lines (issue 15, item 6)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import phux.client.core as client_core
from phux.client import Client, Deadline
from phux.client.connection import Connection
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import Input

from .input_server import running_server, wait_for

WRITERS = 10
# Lines per writer: bounded for CI, still hundreds of chances to interleave;
# PHUX_SOAK=1 runs the full 10 x 1,000 by hand.
LINES = 1000 if os.environ.get("PHUX_SOAK") else 150


@pytest.fixture(scope="module")
def sock() -> Iterator[Path]:
    with running_server() as path:
        yield path


def cat_into(client: Client, name: str, out: Path) -> None:
    # No echo: only the file matters, and the journal stays small.
    script = f"stty -echo; exec cat > {out}"
    client.new(name, command=["sh", "-c", script], cwd="/", deadline=Deadline.after(10))


def run_writers(count: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert not errors, errors[0]


def read_lines(out: Path, expected: int) -> list[str]:
    wait_for(
        f"{expected} lines in {out}",
        lambda: out.exists() and out.read_bytes().count(b"\n") >= expected,
        timeout=60,
    )
    return out.read_text().splitlines()


def test_concurrent_send_keys_lines_stay_whole(sock: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Client(sock, env={}) as setup:
        cat_into(setup, "atomic", out)

    def writer(i: int) -> None:
        with Client(sock, keep_warm=1, env={}) as client:
            for j in range(LINES):
                line = f"w{i:02d}-{j:04d}-" + "x" * 40
                client.send_keys("atomic", [line, "Enter"], Deadline.after(30))

    run_writers(WRITERS, writer)
    lines = read_lines(out, WRITERS * LINES)
    expected = {f"w{i:02d}-{j:04d}-" + "x" * 40 for i in range(WRITERS) for j in range(LINES)}
    broken = [line for line in lines if line not in expected]
    assert not broken, f"{len(broken)} merged or empty lines, e.g. {broken[:3]}"
    assert sorted(lines) == sorted(expected)


def test_pastes_split_into_many_frames_are_not_interleaved(
    sock: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pastes bigger than one INPUT frame go out as several frames: the server
    writes them as one unit, whatever else other clients send meanwhile."""
    monkeypatch.setattr(client_core, "MAX_INPUT_FRAME", 4096)
    out = tmp_path / "out"
    with Client(sock, env={}) as setup:
        cat_into(setup, "pastes", out)
    per_writer = 600  # lines of 100 bytes: 60 KB, 15 frames per paste

    def text(i: int) -> str:
        return "".join(f"p{i}-{j:04d}-" + "y" * 92 + "\n" for j in range(per_writer))

    def writer(i: int) -> None:
        with Client(sock, env={}) as client:
            client.paste("pastes", text(i), Deadline.after(60))

    run_writers(4, writer)
    lines = read_lines(out, 4 * per_writer)
    # Every paste arrived whole and in one piece: its lines are consecutive.
    blocks = ["".join(f"{line}\n" for line in lines[k : k + per_writer]) for k in (0, 600, 1200)]
    blocks.append("".join(f"{line}\n" for line in lines[1800:]))
    assert sorted(blocks) == sorted(text(i) for i in range(4))


def test_a_stalled_unit_is_dropped_after_the_hold_timeout(tmp_path: Path) -> None:
    """A unit whose sender stops mid-way (``more`` on its last piece, then silence,
    its connection open) holds the terminal's input only for the hold timeout
    (``$PHUX_INPUT_UNIT_HOLD``, spec/L1.md §7): then the rest of the unit is
    cancelled and the others' input goes on."""
    out = tmp_path / "out"
    with running_server(PHUX_INPUT_UNIT_HOLD="1") as path:
        with Client(path, env={}) as setup:
            cat_into(setup, "stall", out)
            tid = setup.resolve("stall", Deadline.after(10)).terminal
        stalled = Connection.open(path, Deadline.after(5), client_name="stalled")
        try:
            stalled.call(
                lambda rid: Input(request_id=rid, terminal=tid, data=b"stalled-", more=True),
                Deadline.after(10),
            )
            started = time.monotonic()
            with Client(path, env={}) as other:
                other.send_keys("stall", ["other", "Enter"], Deadline.after(20))
            waited = time.monotonic() - started
            assert 0.8 < waited < 10, waited
            assert read_lines(out, 1) == ["stalled-other"]
            with pytest.raises(ServerError) as err:
                stalled.call(
                    lambda rid: Input(request_id=rid, terminal=tid, data=b"rest\n"),
                    Deadline.after(10),
                )
            assert err.value.wire_code == ErrorCode.INPUT_CANCELLED
            # The connection's next unit is its own again.
            stalled.call(
                lambda rid: Input(request_id=rid, terminal=tid, data=b"later\n"),
                Deadline.after(10),
            )
            assert read_lines(out, 2) == ["stalled-other", "later"]
        finally:
            stalled.close()

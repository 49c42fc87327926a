"""Signals, SHUTDOWN, --daemon and --exit-after-idle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from phux.client.deadline import Deadline
from phux.wire.errors import DetachReason
from phux.wire.frames import Detached, HelloOk, Shutdown

from .harness import ServerProcess, Stream, accepts, read_until, running_server, spawn, subscribe


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:  # a zombie counts as gone
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:  # reaped
            return
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} still running")


def test_sigterm_hangs_up_terminals_detaches_clients_removes_socket(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    try:
        server.start()
        assert server.proc is not None
        with server.connect() as conn:
            tid = spawn(conn, ["sh", "-c", "echo up; exec sleep 60"])
            subscribe(conn, tid)
            read_until(conn, Stream(tid), lambda s: b"up" in s.data)
            child = (
                conn.call(
                    lambda rid: __import__("phux.wire.frames", fromlist=["X"]).ListTerminals(
                        request_id=rid
                    ),
                    Deadline.after(5),
                )
                .terminals[0]
                .pid
            )  # type: ignore[attr-defined]
            server.proc.send_signal(signal.SIGTERM)
            deadline = Deadline.after(10)
            while True:
                frame = conn.receive(deadline)
                if isinstance(frame, Detached):
                    assert frame.reason == DetachReason.SERVER_SHUTDOWN
                    break
        assert server.proc.wait(10) == 0
        wait_gone(child)
        assert not server.socket.exists()
        log = server.log.read_text()
        assert "started" in log and "received SIGTERM" in log and "server stopped" in log
    finally:
        server.stop()


def test_daemon_detaches_and_returns_when_ready(tmp_path: Path) -> None:
    sock = tmp_path / "s"
    log = tmp_path / "log"
    argv = [sys.executable, "-m", "phux", "server", "--daemon", "--socket", str(sock)]
    done = subprocess.run(
        [*argv, "--log-file", str(log)], capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert accepts(sock)
    server = ServerProcess(tmp_path)
    with server.connect() as conn:
        assert isinstance(conn.hello, HelloOk)
        pid = conn.hello.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        session, tty_nr = int(fields[3]), int(fields[4])
        assert session != os.getsid(0) and session != pid  # new session, not its leader
        assert tty_nr == 0
        assert os.readlink(f"/proc/{pid}/fd/1") == str(log)
        conn.call(lambda rid: Shutdown(request_id=rid), Deadline.after(5))
    wait_gone(pid)
    assert not sock.exists()
    # A daemon that cannot start says why, and fails.
    bad = tmp_path / "bad"
    bad.mkdir(mode=0o777)
    bad.chmod(0o777)
    done = subprocess.run(
        [sys.executable, "-m", "phux", "server", "--daemon", "--socket", str(bad / "s")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert done.returncode == 1 and "writable by group or others" in done.stderr


def test_exit_after_idle(tmp_path: Path) -> None:
    with running_server(tmp_path, "--exit-after-idle", "0.3") as server:
        assert server.proc is not None
        with server.connect() as conn:
            tid = spawn(conn, ["sleep", "0.6"])
            subscribe(conn, tid)
        time.sleep(0.4)  # a live terminal keeps it up even with no connection
        assert server.proc.poll() is None
        assert server.proc.wait(10) == 0
        assert not server.socket.exists()

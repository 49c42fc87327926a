"""`phux status`, `phux doctor` and `phux audit`, run as processes against a real server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.mcp.mcp_pipes import McpProcess, notification

from phux import __version__
from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.models import AuditResult, DoctorReport, ServerStatus
from phux.wire.frames import MetaSet

T = 20.0


@pytest.fixture
def home() -> Iterator[Path]:
    # Short: the socket path must fit in sun_path.
    directory = Path(tempfile.mkdtemp(prefix="phux-st-", dir="/tmp"))
    os.chmod(directory, 0o700)
    try:
        yield directory
    finally:
        subprocess.run(
            [sys.executable, "-m", "phux", "kill", "--server", "--socket", str(directory / "s")],
            env=env_for(directory),
            capture_output=True,
            timeout=T,
            check=False,
        )
        shutil.rmtree(directory, ignore_errors=True)


def env_for(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHUX_")}
    env.update(
        PHUX_SOCKET=str(directory / "s"),
        XDG_STATE_HOME=str(directory / "state"),
        SHELL="/bin/sh",
        # (An idle server lets its replica helper go after 5 s: status is read with one.)
        PHUX_REPLICA_IDLE_S="600",
    )
    return env


def phux(directory: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "phux", *args],
        env=env or env_for(directory),
        capture_output=True,
        text=True,
        timeout=T,
        check=False,
    )


def start_session(directory: Path, name: str = "w") -> None:
    done = phux(directory, "new", "-s", name, "cat")
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- status


def test_status_without_a_server_says_so(home: Path) -> None:
    done = phux(home, "status")
    assert done.returncode == 1 and done.stdout == ""
    assert "no server running" in done.stderr
    done = phux(home, "status", "--json")
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == "no_server"


def test_status_of_a_running_server(home: Path) -> None:
    # Replicas in a helper process (by default, "auto", one runs only while output is
    # heavy): status shows its memory, the engines'.
    done = phux(home, "new", "-s", "w", "cat", env=dict(env_for(home), PHUX_REPLICAS="process"))
    assert done.returncode == 0, done.stderr
    deadline = Deadline.after(T)
    while True:
        done = phux(home, "status", "--json")
        assert done.returncode == 0, done.stderr
        st = msgspec.json.decode(done.stdout, type=ServerStatus, strict=True)
        # `phux new`'s connections are counted until the server has read their EOF, which
        # on a loaded machine can come after status listed: it must go, though.
        if st.clients == 1 or deadline.expired():
            break
    assert b"server" in Path(f"/proc/{st.pid}/cmdline").read_bytes()  # HELLO_OK's pid
    assert st.version == __version__ and st.protocol.startswith("1.")
    assert st.socket == str(home / "s")
    assert st.terminals == 1 and st.clients == 1
    assert st.rss_bytes is not None and st.rss_bytes > 1024 * 1024
    assert st.uptime_s is not None and 0 <= st.uptime_s < 60
    assert st.audit_file is not None and st.audit_file.startswith(str(home / "state"))
    assert st.replicas == "process"
    (helper,) = st.replica_pids
    assert b"phux.server.replica" in Path(f"/proc/{helper}/cmdline").read_bytes()
    assert st.replica_rss_bytes is not None and st.replica_rss_bytes > 1024 * 1024
    text = phux(home, "status").stdout
    assert f"pid {st.pid}" in text and "terminals  1" in text and "MiB resident" in text
    assert f"replica process {helper}" in text
    for row in ("server", "socket", "uptime", "terminals", "clients", "replicas", "memory"):
        assert any(line.startswith(row + " ") for line in text.splitlines()), row
    assert f"protocol {st.protocol}" in text


def test_status_with_replicas_in_a_thread_has_no_helper(home: Path) -> None:
    env = dict(env_for(home), PHUX_REPLICAS="thread")
    done = phux(home, "new", "-s", "w", "cat", env=env)
    assert done.returncode == 0, done.stderr
    st = msgspec.json.decode(phux(home, "status", "--json").stdout, type=ServerStatus)
    assert st.replicas == "thread"
    assert st.replica_pids == [] and st.replica_rss_bytes is None
    assert "replica process" not in phux(home, "status").stdout


# ---------------------------------------------------------------- doctor


def doctor(home: Path) -> tuple[int, dict[str, msgspec.Struct]]:
    done = phux(home, "doctor", "--json")
    report = msgspec.json.decode(done.stdout, type=DoctorReport, strict=True)
    assert report.ok == (done.returncode == 0), done.stderr
    return done.returncode, {c.name: c for c in report.checks}


def test_doctor_private_dir_no_server_is_fine(home: Path) -> None:
    code, checks = doctor(home)
    assert code == 0
    assert checks["socket_dir"].status == "ok"  # type: ignore[attr-defined]
    assert checks["socket"].status == "ok"  # type: ignore[attr-defined]
    assert checks["shell_integration"].status == "ok"  # type: ignore[attr-defined]
    assert "server" not in checks


def test_doctor_world_writable_dir_fails_with_remedy(home: Path) -> None:
    os.chmod(home, 0o777)
    try:
        code, checks = doctor(home)
    finally:
        os.chmod(home, 0o700)
    assert code == 1
    check = checks["socket_dir"]
    assert check.status == "failure"  # type: ignore[attr-defined]
    assert check.remedy == f"chmod 700 {home}"  # type: ignore[attr-defined]
    text = phux(home, "doctor")
    assert text.returncode == 0  # the mode was restored
    os.chmod(home, 0o777)
    try:
        text = phux(home, "doctor")
    finally:
        os.chmod(home, 0o700)
    assert text.returncode == 1 and "remedy: chmod 700" in text.stdout


def test_doctor_stale_socket_is_a_warning(home: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home / "s"))
    stale.close()  # the file stays; nobody listens
    code, checks = doctor(home)
    assert code == 0
    assert checks["socket"].status == "warning"  # type: ignore[attr-defined]
    assert "stale" in checks["socket"].message  # type: ignore[attr-defined]
    assert checks["socket"].remedy.startswith("remove it")  # type: ignore[attr-defined]
    (home / "s").unlink()
    (home / "s").write_text("not a socket")
    code, checks = doctor(home)
    assert code == 1 and checks["socket"].status == "failure"  # type: ignore[attr-defined]


def test_doctor_checks_the_running_server_and_version_skew(home: Path) -> None:
    start_session(home)
    code, checks = doctor(home)
    assert code == 0
    assert checks["server"].status == "ok"  # type: ignore[attr-defined]
    assert checks["version_skew"].status == "ok"  # type: ignore[attr-defined]
    # The facts are advisory metadata: a server claiming another version is skew.
    with Connection.open(home / "s", Deadline.after(T), "test") as conn:
        conn.call(
            lambda rid: MetaSet(request_id=rid, key="phux.server.version", value=b"0.0.1"),
            Deadline.after(T),
        )
    code, checks = doctor(home)
    assert code == 0  # a warning, not a failure
    skew = checks["version_skew"]
    assert skew.status == "warning" and "0.0.1" in skew.message  # type: ignore[attr-defined]
    assert "phux kill --server" in skew.remedy  # type: ignore[attr-defined]


def test_doctor_without_shells_or_ssh_warns(home: Path) -> None:
    env = env_for(home)
    empty = home / "bin"
    empty.mkdir()
    env["PATH"] = str(empty)
    env["SHELL"] = "/usr/bin/tcsh"
    done = phux(home, "doctor", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = msgspec.json.decode(done.stdout, type=DoctorReport)
    status = {c.name: c.status for c in report.checks}
    assert status["shells"] == status["ssh"] == status["tmux"] == "warning"
    assert status["default_shell"] == "warning"


# ---------------------------------------------------------------- audit


def audit(home: Path, *args: str) -> AuditResult:
    done = phux(home, "audit", "--json", *args)
    assert done.returncode == 0, done.stderr
    return msgspec.json.decode(done.stdout, type=AuditResult, strict=True)


def test_audit_names_the_cli_and_the_mcp_adapter(home: Path) -> None:
    start_session(home, "w")
    start_session(home, "other")
    assert phux(home, "send-keys", "w", "from-cli").returncode == 0
    assert phux(home, "send-keys", "other", "elsewhere").returncode == 0
    with McpProcess(env=env_for(home)) as mcp:
        mcp.ask(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
        mcp.send(notification("notifications/initialized"))
        reply = mcp.call("phux_send_keys", {"target": "w", "keys": ["from-mcp"]})
        assert reply["result"]["isError"] is False, reply
    result = audit(home, "w")
    assert [e.client for e in result.entries] == [
        f"phux-cli/{__version__}",
        f"phux-mcp/{__version__}",
    ]
    assert all(e.target == "w:0.0" and e.uid == os.getuid() for e in result.entries)
    assert result.entries[0].bytes == len("from-cli")
    assert result.entries[0].pid != result.entries[1].pid  # two processes
    everything = audit(home)
    assert len(everything.entries) == 3
    assert audit(home, "--last", "1").entries == everything.entries[-1:]
    assert audit(home, "--last", "0").entries == []
    text = phux(home, "audit", "w").stdout
    assert text.startswith(f"# {result.audit_file} (on this machine)")
    assert "phux-mcp/" in text and "w:0.0" in text


def test_audit_survives_a_server_restart(home: Path) -> None:
    start_session(home, "w")
    assert phux(home, "send-keys", "w", "before").returncode == 0
    first = audit(home, "w")
    assert phux(home, "kill", "--server").returncode == 0
    offline = audit(home)  # no server: the default file is read
    assert offline.audit_file == first.audit_file
    assert [e.sha256 for e in offline.entries] == [e.sha256 for e in first.entries]
    start_session(home, "w")  # a new server; terminal ids start again
    assert phux(home, "send-keys", "w", "after").returncode == 0
    now = audit(home, "w")  # the pane of this server run only
    assert [e.bytes for e in now.entries] == [len("after")]
    assert now.entries[0].server_id != first.entries[0].server_id
    assert [e.bytes for e in audit(home).entries] == [len("before"), len("after")]


def test_audit_of_a_pane_needs_a_server(home: Path) -> None:
    done = phux(home, "audit", "--json", "w")
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == "no_server"


def test_audit_since_and_last_are_chosen_by_the_server(home: Path) -> None:
    start_session(home, "w")
    for word in ("one", "two", "three"):
        assert phux(home, "send-keys", "w", word).returncode == 0
    assert [e.bytes for e in audit(home, "--last", "2", "w").entries] == [3, 5]
    assert len(audit(home, "--since", "3600", "w").entries) == 3
    assert audit(home, "--since", "0", "w").entries == []

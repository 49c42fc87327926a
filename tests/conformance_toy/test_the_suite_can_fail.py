"""The conformance suite fails exactly where a server breaks the spec.

A real server behind tests/conformance_toy/broken_server.py breaks three
clauses; the suite, run against it as against any other server, must fail
exactly the tests that check those clauses and pass every other one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conformance.server import local_server

ROOT = Path(__file__).resolve().parents[2]
FILES = ["test_handshake.py", "test_errors.py", "test_metadata.py", "test_clarified.py"]
BROKEN = {
    "proto.md §5 request id 0",
    "proto.md §4 rule 3 version",
    "L1.md §2 metadata order",
}
EXPECTED_FAILURES = {
    "conformance/test_errors.py::test_request_id_zero_is_refused[list]",
    "conformance/test_errors.py::test_request_id_zero_is_refused[meta-get]",
    "conformance/test_errors.py::test_subscribe_with_request_id_zero_starts_no_bootstrap",
    "conformance/test_handshake.py::test_a_newer_minor_is_refused_and_closed",
    "conformance/test_clarified.py::test_metadata_lists_are_sorted_by_key",
    "conformance/test_metadata.py::test_global_get_set_delete_list",
    "conformance/test_metadata.py::test_terminal_scope_is_separate_and_read_only_once_closed",
}


def test_the_suite_fails_exactly_the_broken_clauses(tmp_path: Path) -> None:
    with local_server() as real:
        listen = str(tmp_path / "broken.sock")
        toy = subprocess.Popen(
            [sys.executable, "-m", "tests.conformance_toy.broken_server", listen, real.socket_path],
            cwd=ROOT,
        )
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(listen):
                assert toy.poll() is None, "the broken server exited"
                assert time.monotonic() < deadline, "the broken server did not start"
                time.sleep(0.02)
            report = tmp_path / "clauses.json"
            # Expected failures wait out their deadlines: keep those short. No installed
            # plugin but pytest-timeout loads (the suite needs none; they take seconds).
            env = {
                **os.environ,
                "PHUX_CONFORMANCE_SOCKET": listen,
                "PHUX_CONFORMANCE_TIMEOUT": "3",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            }
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "pytest_timeout",
                    "--by-clause-json",
                    str(report),
                    *(f"conformance/{name}" for name in FILES),
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            toy.kill()
            toy.wait(10)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(report.read_text())
    failed = {nodeid for r in results.values() for nodeid in r["failed"]}
    assert failed == EXPECTED_FAILURES, run.stdout[-3000:]
    failing_clauses = {clause for clause, r in results.items() if r["failed"]}
    assert failing_clauses >= BROKEN
    for clause in BROKEN:
        assert results[clause]["failed"], clause
    assert sum(len(r["passed"]) for r in results.values()) > 40

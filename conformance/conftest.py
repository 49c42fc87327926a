"""Fixtures of the conformance suite, and its report by spec clause.

``PHUX_CONFORMANCE_SOCKET=/path/to/socket`` runs the suite against a server
that is already listening there; otherwise each test process starts this
repository's server in a temporary directory and stops it afterwards.

Every test names the spec clauses it checks with ``@pytest.mark.clause(...)``
(a test without one fails at collection). ``--by-clause`` prints, after the
run, each clause with its passed / failed / skipped counts and the failing
tests; ``--by-clause-json FILE`` writes the same as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .catalog import Kill
from .server import local_server
from .wire_client import Conn

EXTERNAL = os.environ.get("PHUX_CONFORMANCE_SOCKET")
HERE = Path(__file__).resolve().parent
_results: dict[str, dict[str, list[str]]] = {}
"""clause -> outcome -> test ids, filled as reports arrive (in the controller under xdist)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("phux conformance")
    group.addoption("--by-clause", action="store_true", help="report results by spec clause")
    group.addoption("--by-clause-json", metavar="FILE", help="write the clause report as JSON")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*names): the spec clauses a conformance test checks")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        marker = item.get_closest_marker("clause")
        if marker is None or not marker.args:
            raise pytest.UsageError(f"{item.nodeid} names no spec clause (@pytest.mark.clause)")
        # user_properties travel with the reports, also from pytest-xdist workers.
        item.user_properties.extend(("clause", name) for name in marker.args)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    clauses = [value for key, value in report.user_properties if key == "clause"]
    if not clauses or (report.when != "call" and not (report.failed or report.skipped)):
        return
    outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
    for clause in clauses:
        _results.setdefault(clause, {"passed": [], "failed": [], "skipped": []})
        _results[clause][outcome].append(report.nodeid)


def clause_report(results: dict[str, dict[str, list[str]]]) -> list[str]:
    lines = [f"{'clause':<48} {'pass':>5} {'fail':>5} {'skip':>5}"]
    for clause in sorted(results):
        r = results[clause]
        counts = (len(r["passed"]), len(r["failed"]), len(r["skipped"]))
        lines.append(f"{clause:<48} {counts[0]:>5} {counts[1]:>5} {counts[2]:>5}")
        lines += [f"    FAILED {nodeid}" for nodeid in r["failed"]]
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    results = _results
    if config.getoption("by_clause") and results:
        terminalreporter.section("conformance by spec clause")
        for line in clause_report(results):
            terminalreporter.write_line(line)
    path = config.getoption("by_clause_json")
    if path:
        Path(path).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="session")
def server_socket() -> Iterator[str]:
    if EXTERNAL:
        yield EXTERNAL
        return
    with local_server() as server:
        yield server.socket_path


@pytest.fixture
def connect(server_socket: str) -> Iterator[object]:
    """``connect(hello=True) -> Conn``; every connection is closed after the test."""
    conns: list[Conn] = []

    def make(*, hello: bool = True) -> Conn:
        conn = Conn(server_socket)
        conns.append(conn)
        if hello:
            conn.hello()
        return conn

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def conn(connect: object) -> Conn:
    """A connection that has completed the handshake."""
    return connect()  # type: ignore[operator,no-any-return]


@pytest.fixture
def cleanup(server_socket: str) -> Iterator[list[int]]:
    """Append terminal ids here; the live ones are killed after the test."""
    ids: list[int] = []
    yield ids
    if not ids:
        return
    with contextlib.suppress(Exception), Conn(server_socket) as c:
        c.hello()
        for tid in ids:
            c.request(Kill(request_id=c.rid(), terminals=[tid]), timeout=5)

"""Many agents at once: ten on ten panes, three on one pane; every result correct."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from phux.client import Client, Deadline
from phux.client.models import NewPaneResult

from .conftest import new_shell, unique

ROUNDS = 6


def agent_loop(server: Path, target: str, tag: str, errors: list[str]) -> None:
    try:
        with Client(server, env={}) as c:
            for k in range(ROUNDS):
                command = f"printf '%s\\n' {tag}-{k}; (exit {k})"
                result = c.run(target, command, timeout=60, deadline=Deadline.after(90))
                if (result.exit_code, result.output, result.truncated) != (k, f"{tag}-{k}", False):
                    errors.append(f"{tag} round {k}: {result}")
    except Exception as exc:  # pragma: no cover - reported below
        errors.append(f"{tag}: {exc!r}")


def run_agents(server: Path, jobs: list[tuple[str, str]]) -> list[str]:
    errors: list[str] = []
    _run_all(
        [
            threading.Thread(target=agent_loop, args=(server, target, tag, errors))
            for target, tag in jobs
        ],
        120,
    )
    return errors


def _run_all(threads: list[threading.Thread], timeout: float) -> None:
    """Start ``threads`` and join each, none still alive after ``timeout`` seconds each."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads)


def test_ten_agents_on_ten_panes(client: Client, server: Path) -> None:
    names = [new_shell(client) for _ in range(10)]
    errors = run_agents(server, [(name, f"agent{i}") for i, name in enumerate(names)])
    assert errors == []


def test_three_agents_on_one_pane(client: Client, server: Path) -> None:
    name = new_shell(client)
    errors = run_agents(server, [(name, f"agent{i}") for i in range(3)])
    assert errors == []


def test_keep_warm_client_reuses_mirrors(server: Path) -> None:
    with Client(server, keep_warm=2, env={}) as c:
        names = [new_shell(c) for _ in range(3)]
        for _ in range(2):
            for name in names:
                c.send_keys(name, ["echo warm-$((6*7))", "Enter"], Deadline.after(5))
                assert c.wait(name, until="warm-42", timeout=10, deadline=Deadline.after(15)).met
                state = c.snapshot(name, deadline=Deadline.after(5))
                assert any("warm-42" in line for line in state.lines)
                assert c.run(name, "echo r", timeout=10, deadline=Deadline.after(15)).output == "r"


def _at_once(count: int, work: Callable[[Client], NewPaneResult], server: Path) -> list[object]:
    """``work`` from ``count`` clients at once (each its own connection)."""
    results: list[object] = []
    barrier = threading.Barrier(count)

    def one() -> None:
        try:
            with Client(server, env={}) as c:
                c.list_terminals(Deadline.after(10))  # connected before the barrier
                barrier.wait(10)
                results.append(work(c))
        except Exception as exc:  # pragma: no cover - reported below
            results.append(exc)

    _run_all([threading.Thread(target=one) for _ in range(count)], 60)
    return results


def test_concurrent_new_windows_and_splits_get_distinct_indices(
    client: Client, server: Path
) -> None:
    """Each client picks the next index from a listing; the server makes the pick
    atomic (a unique `phux.slot`, spec/L3.md §2) and a client that lost retries."""
    name = unique("win")
    client.new(name, command=["sleep", "300"], cwd="/tmp", deadline=Deadline.after(10))
    count = 8
    made = _at_once(
        count,
        lambda c: c.new_window(name, command=["sleep", "300"], deadline=Deadline.after(30)),
        server,
    )
    assert all(isinstance(r, NewPaneResult) for r in made), made
    windows = [r.window for r in made if isinstance(r, NewPaneResult)]
    assert sorted(windows) == list(range(1, count + 1))
    split = _at_once(
        count,
        lambda c: c.split(f"{name}:0", command=["sleep", "300"], deadline=Deadline.after(30)),
        server,
    )
    assert all(isinstance(r, NewPaneResult) for r in split), split
    assert sorted(r.pane for r in split if isinstance(r, NewPaneResult)) == list(
        range(1, count + 1)
    )
    panes = client.list_terminals(Deadline.after(10)).session(name)
    slots = sorted((p.window or 0, p.pane or 0) for p in panes)
    assert len(slots) == 1 + 2 * count and len(set(slots)) == len(slots)
    client.kill(name, Deadline.after(10))

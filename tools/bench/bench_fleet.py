"""A fleet of agents, each driving its own pane: latency per verb under load (issue 28 item 4).

A private server holds one bash pane per agent. Each agent is a closed loop (the
next call goes out when the last came back, so the offered load is the agents
themselves) of three calls on its own pane: ``run`` of an ``echo`` (its output
checked), ``send-keys`` of a word and C-u (typed, then erased: no command runs)
and ``snapshot --json``. Two ways to make the calls, as agents do:

- **cli**: every call a ``python -m phux ...`` process (an agent shelling out);
- **mcp**: one long-lived ``phux mcp`` process per agent, driven over its stdio
  (``phux_run``, ``phux_send_keys``, ``phux_snapshot``): the warm path.

Between two calls an agent thinks (its model answers) for ``PHUX_FLEET_THINK``
seconds (2 by default, drawn from half to one and a half of it): the offered load
is about agents / (think + latency) calls a second, printed with the figures; 0 is
a closed loop that asks as fast as it is answered (the CPU is then always short).

Then the crowd (issue 28 item 5): ten of the agents, by MCP, measured quiet and
again while 1,000 idle clients hold connections past HELLO (four processes: the
server takes 256 per process) and 10,000 hostile ones connect, send a byte and
never HELLO, reconnecting whenever the server cuts them (``fleet_crowd``); target:
p99 within 2x the quiet figure. The adapters connect first, so the crowd, not
they, meets the 1,000 connections the server allows.

Each way is measured alone first (one agent: the idle latency per verb, median
of its calls) and then with the whole fleet for the given time; each agent's first
round (connecting, subscribing) is reported apart from the rest. Figures: p99 per
verb under the fleet against the idle median (target: within 3x), calls made and
wrong or failed ones (target: 0), and where the CPU went: the CLI processes' own
CPU per call (mostly the interpreter starting and importing: ``python -c pass``
is printed beside it), the server's and the replica helper's.

    python -m tools.bench.harness fleet            # 50 agents, 180 s per way
    PHUX_FLEET_AGENTS=20 PHUX_FLEET_SECONDS=60 python -m tools.bench.harness fleet
    python -m tools.bench.harness --quick fleet    # 5 agents, 10 s
    PHUX_FLEET_WAYS=crowd python -m tools.bench.harness fleet   # only the crowd
    PHUX_FLEET_CROWD_NICE=19 ...   # the crowd niced: the server's part of the slowdown
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tools.bench.bench_mcp import _Mcp
from tools.bench.harness import Measurement, OtherLoad, median_seconds, percentile

BENCH = "fleet"
VERBS = ("run", "send-keys", "snapshot")
IDLE_ROUNDS = 12


class _Fleet:
    def __init__(self, root: Path, agents: int) -> None:
        self.sock = root / "s"
        self.env = dict(os.environ, PHUX_SOCKET=str(self.sock), SHELL="/bin/bash")
        for var in ("PHUX_TERMINAL", "ENV", "PROMPT_COMMAND"):
            self.env.pop(var, None)
        argv = [sys.executable, "-m", "phux", "server", "--socket", str(self.sock)]
        self.proc = subprocess.Popen(
            [*argv, "--log-file", str(root / "server.log")],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        end = time.monotonic() + 20
        while not self.sock.exists():
            if time.monotonic() > end or self.proc.poll() is not None:
                raise RuntimeError("the phux server did not start")
            time.sleep(0.02)
        self.panes = [f"agent{n}" for n in range(agents)]
        for pane in self.panes:
            self.cli("new", "-s", pane, "--", "bash", "--norc")
        for pane in self.panes:
            self.cli("wait", "--prompt", "--timeout", "60", pane)

    def phux(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A ``python -m phux`` process on the fleet's server, to its end."""
        argv = [sys.executable, "-m", "phux", *args]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=120)

    def cli(self, *args: str) -> str:
        """The output of a ``phux`` call that must succeed (setting the fleet up)."""
        done = self.phux(*args)
        if done.returncode != 0:
            raise RuntimeError(f"phux {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done.stdout

    def cpu(self) -> tuple[float, float]:
        """CPU seconds of the server and of its replica helper (0 when none runs)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        helpers = [
            int(pid)
            for pid in children.split()
            if b"replica" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        return _cpu(self.proc.pid), sum(_cpu(pid) for pid in helpers)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Call = Callable[[str, int], bool]
"""One verb on a pane, the n-th call: whether its answer was right."""


def _cli_calls(fleet: _Fleet) -> dict[str, Call]:
    phux = fleet.phux

    def run(pane: str, n: int) -> bool:
        done = phux("run", "--timeout", "60", pane, f"echo {pane}-{n}")
        return done.returncode == 0 and done.stdout == f"{pane}-{n}\n"

    def send_keys(pane: str, n: int) -> bool:
        return phux("send-keys", pane, f"typed{n}", "C-u").returncode == 0

    def snapshot(pane: str, n: int) -> bool:
        done = phux("snapshot", "--json", pane)
        return done.returncode == 0 and json.loads(done.stdout)["state"] == "prompt"

    return {"run": run, "send-keys": send_keys, "snapshot": snapshot}


def _mcp_calls(mcp: _Mcp) -> dict[str, Call]:
    def tool(name: str, arguments: dict[str, object]) -> dict[str, object] | None:
        reply = mcp.request("tools/call", {"name": name, "arguments": arguments})
        result: dict[str, object] = reply["result"]
        return None if result.get("isError") else result

    def run(pane: str, n: int) -> bool:
        result = tool("phux_run", {"target": pane, "command": f"echo {pane}-{n}"})
        structured = result and result.get("structuredContent")
        return isinstance(structured, dict) and structured.get("output") == f"{pane}-{n}"

    def send_keys(pane: str, n: int) -> bool:
        return tool("phux_send_keys", {"target": pane, "keys": [f"typed{n}", "C-u"]}) is not None

    def snapshot(pane: str, n: int) -> bool:
        return tool("phux_snapshot", {"target": pane}) is not None

    return {"run": run, "send-keys": send_keys, "snapshot": snapshot}


class _Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = {verb: [] for verb in VERBS}
        self.first: dict[str, list[float]] = {verb: [] for verb in VERBS}
        self.wrong: list[str] = []

    def agent(
        self, pane: str, calls: dict[str, Call], until: float, rounds: int, think: float
    ) -> None:
        pause = random.Random(pane)
        n = 0
        while (rounds and n < rounds) or (not rounds and time.monotonic() < until):
            for verb in VERBS:
                if think:
                    time.sleep(pause.uniform(think / 2, think * 1.5))
                start = time.perf_counter()
                try:
                    right = calls[verb](pane, n)
                except Exception as exc:  # a failed call is counted, never fatal here
                    right = False
                    verb_error = f"{pane} {verb} #{n}: {exc!r}"
                else:
                    verb_error = f"{pane} {verb} #{n}: a wrong answer"
                took = time.perf_counter() - start
                with self.lock:
                    # An agent's first round (an adapter's connection, subscriptions and
                    # bootstraps) is kept apart: the fleet's steady state is the figure.
                    (self.first if n == 0 else self.times)[verb].append(took)
                    if not right:
                        self.wrong.append(verb_error)
            n += 1


def _drive(
    fleet: _Fleet,
    panes: list[str],
    make_calls: Callable[[str], tuple[dict[str, Call], Callable[[], None]]],
    seconds: float,
    rounds: int = 0,
    think: float = 0.0,
) -> tuple[_Tally, float]:
    tally = _Tally()
    made = [make_calls(pane) for pane in panes]
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=tally.agent, args=(pane, calls, until, rounds, think), daemon=True)
        for pane, (calls, _) in zip(panes, made, strict=True)
    ]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - start
    for _, close in made:
        close()
    return tally, wall


def _way(
    fleet: _Fleet,
    way: str,
    make_calls: Callable[[str], tuple[dict[str, Call], Callable[[], None]]],
    seconds: float,
    think: float,
) -> list[Measurement]:
    idle, _ = _drive(fleet, fleet.panes[:1], make_calls, 0, rounds=IDLE_ROUNDS)
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    server0, replica0 = fleet.cpu()
    with OtherLoad() as other:
        loaded, wall = _drive(fleet, fleet.panes, make_calls, seconds, think=think)
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    server1, replica1 = fleet.cpu()
    # Every call, first rounds included: they took their share of the CPU and the time.
    calls = sum(len(t) for t in loaded.times.values()) + sum(len(t) for t in loaded.first.values())
    if not all(loaded.times.values()):
        raise RuntimeError(
            f"fleet/{way}: no call of some verb after each agent's first round: give "
            "PHUX_FLEET_SECONDS more than three think times"
        )
    clients = (children1.ru_utime - children0.ru_utime) + (children1.ru_stime - children0.ru_stime)
    print(
        f"fleet/{way}: {len(fleet.panes)} agents thinking {think:g} s, {wall:.0f} s, {calls} calls "
        f"({calls / wall:.1f}/s), {len(loaded.wrong)} wrong or failed; CPU per call: "
        f"client processes {clients / calls * 1000:.0f} ms, server "
        f"{(server1 - server0) / calls * 1000:.1f} ms, replica "
        f"{max(0.0, replica1 - replica0) / calls * 1000:.1f} ms (a helper started anew counts "
        f"from 0); other load {other.cpus:.1f} CPUs",
        file=sys.stderr,
    )
    for error in loaded.wrong[:5]:
        print(f"  {error}", file=sys.stderr)
    out = [
        Measurement(
            BENCH,
            f"{way}: wrong or failed calls of {calls}",
            "calls",
            float(len(loaded.wrong)) + len(idle.wrong),
            "none",
            0.0,
            higher_is_better=False,
            target="0",
        )
    ]
    for verb in VERBS:
        times = loaded.times[verb]
        base = percentile(idle.times[verb], 50)
        first = loaded.first[verb]
        print(
            f"  {verb}: idle p50 {base * 1000:.0f} ms; fleet p50 "
            f"{percentile(times, 50) * 1000:.0f} ms, p99 {percentile(times, 99) * 1000:.0f} ms; "
            f"each agent's first: p50 {percentile(first, 50) * 1000:.0f} ms, "
            f"max {max(first) * 1000:.0f} ms",
            file=sys.stderr,
        )
        out.append(
            Measurement(
                BENCH,
                f"{way} {verb}: p99, {len(fleet.panes)} agents thinking {think:g} s",
                "ms",
                percentile(times, 99) * 1000,
                "one agent, median",
                base * 1000,
                higher_is_better=False,
                target=">= 0.33x (p99 within 3x idle)",
            )
        )
    return out


def _crowded(
    fleet: _Fleet,
    make_calls: Callable[[str], tuple[dict[str, Call], Callable[[], None]]],
    seconds: float,
    think: float,
    idle: int,
    hostile: int,
) -> list[Measurement]:
    panes = fleet.panes[:10]
    made = {pane: make_calls(pane) for pane in panes}  # connected before the crowd

    def reuse(pane: str) -> tuple[dict[str, Call], Callable[[], None]]:
        return made[pane][0], lambda: None

    server_before = fleet.cpu()[0]
    quiet, _ = _drive(fleet, panes, reuse, seconds, think=think)
    server_quiet = fleet.cpu()[0] - server_before
    # The crowd runs on the same cores: its own CPU (connecting again and again) is
    # taken from the agents too. $PHUX_FLEET_CROWD_NICE runs it niced, to tell the
    # server's part of the slowdown from the attackers'.
    nice = int(os.environ.get("PHUX_FLEET_CROWD_NICE", "0"))
    argv = [*(["nice", "-n", str(nice)] if nice else []), sys.executable]
    argv += ["-m", "tools.bench.fleet_crowd"]
    sizes = [("idle", idle // 4)] * 4 + [("hostile", hostile)]
    crowd: list[subprocess.Popen[str]] = []
    try:
        for mode, count in sizes:  # one after the other: the flood fills the backlog
            proc = subprocess.Popen(
                [*argv, mode, str(count), str(fleet.sock)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            crowd.append(proc)
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {mode} crowd did not gather")
        server_before = fleet.cpu()[0]
        crowd_before = sum(_cpu(proc.pid) for proc in crowd)
        crowded, _ = _drive(fleet, panes, reuse, seconds, think=think)
        server_cpu = fleet.cpu()[0] - server_before
        crowd_cpu = sum(_cpu(proc.pid) for proc in crowd) - crowd_before
    finally:
        for proc in crowd:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(60)
        for _, close in made.values():
            close()
    print(
        f"fleet/crowd: CPU per second: server {server_quiet / seconds:.2f} quiet, "
        f"{server_cpu / seconds:.2f} crowded; the crowd's processes {crowd_cpu / seconds:.2f}"
        + (f" (at nice {nice})" if nice else "")
    )
    print(
        f"fleet/crowd: {len(panes)} MCP agents; {idle} idle clients and {hostile} hostile "
        f"connections; wrong or failed: {len(quiet.wrong)} quiet, {len(crowded.wrong)} crowded",
        file=sys.stderr,
    )
    out = [
        Measurement(
            BENCH,
            "crowd: wrong or failed calls",
            "calls",
            float(len(quiet.wrong) + len(crowded.wrong)),
            "none",
            0.0,
            higher_is_better=False,
            target="0",
        )
    ]
    for verb in VERBS:
        base, loaded = percentile(quiet.times[verb], 99), percentile(crowded.times[verb], 99)
        print(
            f"  {verb}: p99 quiet {base * 1000:.0f} ms, crowded {loaded * 1000:.0f} ms",
            file=sys.stderr,
        )
        out.append(
            Measurement(
                BENCH,
                f"crowd mcp {verb}: p99 with {idle} idle + {hostile} hostile connections",
                "ms",
                loaded * 1000,
                "the same agents, no crowd",
                base * 1000,
                higher_is_better=False,
                target=">= 0.5x (p99 within 2x)",
            )
        )
    return out


def run(quick: bool) -> list[Measurement]:
    agents = int(os.environ.get("PHUX_FLEET_AGENTS", 5 if quick else 50))
    seconds = float(os.environ.get("PHUX_FLEET_SECONDS", 10 if quick else 180))
    think = float(os.environ.get("PHUX_FLEET_THINK", 2.0))
    root = Path(tempfile.mkdtemp(prefix="phux-fleet-", dir="/tmp"))
    fleet = _Fleet(root, agents)
    try:
        start_cost = median_seconds(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat=5
        )
        print(f"fleet: python -c pass takes {start_cost * 1000:.0f} ms here", file=sys.stderr)

        def cli(pane: str) -> tuple[dict[str, Call], Callable[[], None]]:
            return _cli_calls(fleet), lambda: None

        def mcp(pane: str) -> tuple[dict[str, Call], Callable[[], None]]:
            adapter = _Mcp(fleet.env)
            adapter.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
            return _mcp_calls(adapter), adapter.close

        ways = os.environ.get("PHUX_FLEET_WAYS", "cli,mcp,crowd").split(",")
        out = []
        if "cli" in ways:
            out += _way(fleet, "cli", cli, seconds, think)
        if "mcp" in ways:
            out += _way(fleet, "mcp", mcp, seconds, think)
        if "crowd" in ways:
            crowd = (100, 1000) if quick else (1000, 10000)
            out += _crowded(fleet, mcp, seconds, think, *crowd)
        return out
    finally:
        fleet.stop()

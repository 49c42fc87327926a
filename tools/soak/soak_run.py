"""`run` on a machine that stalls: a soak run by hand (issue 24 item 12).

    .venv/bin/python -m tools.soak.soak_run [--rounds 20] [--freeze-max 2.0] [bash zsh fish]

A loaded machine deschedules processes for long moments, which is what `run`'s
waits (a grace here, a quiet time there) can misjudge. This soak makes the
moments on purpose: while each `run` works, a thread stops the server, its
replica helper or the pane's shell (SIGSTOP) for up to ``--freeze-max`` seconds
at a time, at random, then lets it go on (SIGCONT). Each round runs, in a pane of
each shell: an unbalanced quote (exit 4, nothing typed after it lost), then
`echo` (its output), then `false` (exit 1). It prints a line per round and
exits 1 at the first wrong answer or a `run` that does not come back within
60 s, with the pane's screen.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CASES: list[tuple[str, int, str | None]] = [
    ("echo 'open", 4, None),
    ("echo closed", 0, "closed"),
    ("false", 1, ""),
]
"""(command, exit code, output or None: not compared)"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--freeze-max", type=float, default=2.0)
    parser.add_argument("shells", nargs="*", default=["bash", "zsh", "fish"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="phux-soak-run-"))
    env = dict(os.environ, PHUX_SOCKET=str(root / "s"))
    for var in ("PHUX_TERMINAL", "ENV", "PROMPT_COMMAND"):
        env.pop(var, None)

    def phux(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "phux", *argv]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)

    server = subprocess.Popen(
        [sys.executable, "-m", "phux", "server", "--socket", str(root / "s")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (root / "s").exists():
            if time.monotonic() > deadline:
                print("the server did not start", file=sys.stderr)
                return 1
            time.sleep(0.05)
        for shell in args.shells:
            if phux("new", "-s", shell, "--", shell).returncode != 0:
                print(f"could not start {shell}", file=sys.stderr)
                return 1
            phux("wait", "--prompt", "--timeout", "20", shell)
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text()
        frozen = [server.pid, *map(int, children.split())]  # the replica and the shells
        print(f"freezing pids {frozen} for up to {args.freeze_max} s at a time")
        for n in range(args.rounds):
            for shell in args.shells:
                for command, code, output in CASES:
                    stop = threading.Event()
                    thread = threading.Thread(
                        target=_freeze, args=(frozen, args.freeze_max, stop), daemon=True
                    )
                    thread.start()
                    started = time.monotonic()
                    try:
                        res = phux("run", "--json", shell, command)
                    except subprocess.TimeoutExpired:
                        res = None
                    finally:
                        stop.set()
                        thread.join()
                    took = time.monotonic() - started
                    got = _outcome(res)
                    wanted = (code, output)
                    if got[0] != code or (output is not None and got[1] != output):
                        print(f"round {n} {shell} {command!r}: {got}, wanted {wanted}")
                        print(phux("snapshot", shell).stdout)
                        return 1
                    print(f"round {n} {shell:4} {command!r:14} exit {got[0]} in {took:.1f} s")
        return 0
    finally:
        phux("kill", "--server")
        server.wait(10)


def _outcome(res: subprocess.CompletedProcess[str] | None) -> tuple[int | str, str | None]:
    if res is None:
        return "no answer in 60 s", None
    if res.returncode == 0 or res.stdout.strip():
        doc = json.loads(res.stdout)
        return int(doc["exit_code"]), str(doc["output"])
    return res.returncode, None


def _freeze(pids: list[int], longest: float, stop: threading.Event) -> None:
    rnd = random.Random()
    while not stop.is_set():
        pid = rnd.choice(pids)
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        try:
            stop.wait(rnd.uniform(0.1, longest))
        finally:
            os.kill(pid, signal.SIGCONT)
        stop.wait(rnd.uniform(0.0, 0.3))


if __name__ == "__main__":
    sys.exit(main())

"""A longer soak of hostile text and hostile JSON (issue 15), to run by hand.

    python tools/soak_hostile.py --seconds 300 [--seed N]

Engine and attach filter: random output made of combining-mark floods, C1
code points, cut and nested escape sequences, strings (OSC, DCS, APC, tmux
passthrough) and queries with junk inside, fed in random chunks. Checked for
every sample: drawing stays linear (a generous per-megabyte bound), a
checkpoint plus the rest replays to the same screen, and what attach passes
to a person holds no query the engine answers.

MCP: a ``phux mcp`` process gets random hostile lines (deep nesting, cut
JSON, invalid UTF-8, huge lines) between pings; every line must be answered
and the process must never exit.

The bounded versions of these checks run in CI (tests/engine,
tests/replica, tests/tui/test_units.py, tests/mcp/test_mcp_stdio.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import time

from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint
from phux.tui.queries import QueryFilter

SECONDS_PER_MB = 2.0  # linear drawing is ~0.1 s/MB here; quadratic was minutes

PIECES = [
    b"text ",
    "é中❤️".encode(),
    b"\r\n",
    b"\x1b[",
    b"\x1b]",
    b"\x1bP",
    b"\x1b_G",
    b"\x1bPtmux;\x1b\x1b]52;c;QQ==\x07\x1b\\",
    b"\x1b\\",
    b"\x07",
    b"\x18",
    b"\x1b[31m",
    b"\x1b[0;0c",
    b"\x1b[>0;1c",
    b"\x1b[6n",
    b"\x1b[>q",
    b"\x1b[18t",
    b"\x1b]11;?\x07",
    b"\x1bP$qm\x1b\\",
    b"\x1b]52;c;U0VDUkVU\x07",
    b"\x1b]2;ti\x08tle\x07",
]


def hostile(rng: random.Random) -> bytes:
    parts: list[bytes] = []
    for _ in range(rng.randint(1, 60)):
        roll = rng.random()
        if roll < 0.05:
            mark = chr(rng.choice([0x301, 0x308, 0x20D7, 0x200D, 0xFE0F]))
            parts.append(("a" + mark * rng.randint(1, 50_000)).encode())
        elif roll < 0.15:
            parts.append(chr(rng.randint(0x80, 0x9F)).encode())
        elif roll < 0.2:
            parts.append(bytes([rng.randint(0, 255) for _ in range(rng.randint(1, 20))]))
        else:
            parts.append(rng.choice(PIECES))
    return b"".join(parts)


def chunks(data: bytes, rng: random.Random) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        n = rng.choice([1, 7, 100, 4096, 1 << 20])
        out.append(data[i : i + n])
        i += n
    return out


def soak_engine(deadline: float, rng: random.Random) -> int:
    samples = 0
    while time.monotonic() < deadline:
        data = hostile(rng)
        pieces = chunks(data, rng)
        t = Terminal(rng.randint(2, 120), rng.randint(1, 40), history=100)
        cut = rng.randint(0, len(pieces))
        start = time.monotonic()
        for piece in pieces[:cut]:
            t.feed(piece)
        u = Terminal(t.cols, t.rows, history=100)
        u.feed(write_checkpoint(t))
        for piece in pieces[cut:]:
            t.feed(piece)
            u.feed(piece)
        state = t.project(cells=True)
        elapsed = time.monotonic() - start
        bound = 1.0 + SECONDS_PER_MB * len(data) / 1e6 * 2
        assert elapsed < bound, (elapsed, len(data))
        assert u.project(cells=True).lines == state.lines, data[:200]
        f = QueryFilter()
        passed = b"".join(f.feed(piece) for piece in pieces)
        person = Terminal(80, 24, history=0)
        person.feed(passed)
        assert person.take_replies() == b"", data[:200]
        samples += 1
    return samples


def mcp_line(rng: random.Random) -> bytes:
    kind = rng.randrange(7)
    if kind == 0:
        return b"[" * rng.randint(500, 200_000)
    if kind == 1:
        return b"{" * rng.randint(500, 200_000)
    if kind == 2:
        return b"[" * 1000 + b"]" * 1000
    if kind == 3:
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 5000
    if kind == 4:
        return b"[["
    if kind == 5:
        noise = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 200)))
        return noise.replace(b"\n", b"")
    return b'{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"nope"}}'


def soak_mcp(deadline: float, rng: random.Random) -> int:
    env = dict(os.environ, PHUX_SOCKET="/nonexistent/phux-soak.sock")
    proc = subprocess.Popen(
        [sys.executable, "-m", "phux", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    buf = b""
    lines = 0
    try:
        while time.monotonic() < deadline:
            line = mcp_line(rng)
            if not line.strip():
                continue
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            end = time.monotonic() + 10
            while b"\n" not in buf:
                assert proc.poll() is None, "phux mcp exited"
                left = end - time.monotonic()
                assert left > 0, f"no answer to {line[:60]!r}"
                if select.select([proc.stdout], [], [], left)[0]:
                    buf += os.read(proc.stdout.fileno(), 1 << 16)
            answer, _, buf = buf.partition(b"\n")
            reply = json.loads(answer)
            assert "error" in reply or "result" in reply, reply
            lines += 1
    finally:
        proc.kill()
        proc.wait(5)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    half = args.seconds / 2
    samples = soak_engine(time.monotonic() + half, rng)
    lines = soak_mcp(time.monotonic() + half, rng)
    print(f"seed {seed}: {samples} engine/filter samples, {lines} hostile MCP lines: all held")


if __name__ == "__main__":
    main()

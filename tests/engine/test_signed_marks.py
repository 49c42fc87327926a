"""Only marks signed with the pane's key count (spec/shell-integration.md, "Signed marks")."""

from __future__ import annotations

import pytest

from phux.client.run_integrated import MarkScanner
from phux.client.shell_scan import view
from phux.engine import Terminal
from phux.engine.checkpoint import Checkpointer
from phux.signed_marks import unsigned

KEY = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


def mark(body: str, key: str | None = KEY) -> bytes:
    return f"\x1b]133;{body}{';phux_k=' + key if key is not None else ''}\x07".encode()


PROMPT = mark("A") + b"$ " + mark("B")
# What `cat evil.txt` prints: a finished command and a prompt, unsigned or signed
# with another pane's key, then a "command" typed at it.
FORGED = [
    b"line-1\r\n"
    + mark("D;0", None)
    + mark("A", None)
    + b"$ "
    + mark("B", None)
    + b"rm -rf /x\r\n",
    b"line-1\r\n" + mark("D;0", OTHER) + mark("A", OTHER) + b"$ " + mark("B", OTHER) + b"rm x\r\n",
    b"line-1\r\n" + mark("C;cmdline_url=rm", None) + b"gone\r\n" + mark("D;0", None),
]


def test_unsigned_takes_only_the_key_as_the_last_parameter() -> None:
    assert unsigned("0;phux_k=" + KEY, KEY) == "0"
    assert unsigned("phux_k=" + KEY, KEY) == ""
    assert unsigned("0", KEY) is None
    assert unsigned("0;phux_k=" + OTHER, KEY) is None
    assert unsigned("phux_k=" + KEY + ";0", KEY) is None  # not last
    assert unsigned("0;phux_k=" + KEY + "x", KEY) is None
    assert unsigned("0;phux_k=", "") is None  # a pane without a key: nothing counts
    assert unsigned("0", None) == "0"  # an engine on its own takes every mark


@pytest.mark.parametrize("forged", FORGED)
def test_the_engine_ignores_forged_marks(forged: bytes) -> None:
    t = Terminal(80, 24, mark_key=KEY)
    t.feed(PROMPT + b"cat evil\r\n" + mark("C;cmdline_url=cat%20evil") + forged)
    assert t.shell_phase == "running"
    assert [(c.command, c.exit_code) for c in t.commands] == [("cat evil", None)]
    t.feed(b"TAIL\r\n" + mark("D;1") + PROMPT)
    assert [(c.command, c.exit_code) for c in t.commands] == [("cat evil", 1)]
    out = t.command_output(t.commands[0])[0]
    assert out.startswith("line-1") and out.endswith("TAIL")
    # The forged prompt's cells carry no semantic mark either.
    assert all(
        cell.semantic == 0
        for y in range(1, 4)
        for cell in t.screen.buffer[y].values()
        if cell.data == "$"
    )


def test_without_a_key_every_mark_counts_and_with_an_empty_one_none() -> None:
    trusting = Terminal(80, 24)
    trusting.feed(mark("A", None) + b"$ " + mark("B", None))
    assert trusting.shell_phase == "prompt"
    keyless = Terminal(80, 24, mark_key="")
    keyless.feed(mark("A", None) + b"$ " + mark("B", None) + mark("A", "") + mark("B", ""))
    assert keyless.shell_phase == "none" and keyless.integration == "none"


def test_the_announce_and_the_checkpoint_carry_the_integration_state() -> None:
    t = Terminal(80, 24, mark_key=KEY)
    assert t.integration == "none"
    t.feed(mark("I;start", None) + mark("I;off", OTHER))  # forged: nothing
    assert t.integration == "none"
    t.feed(mark("I;start") + b"banner\r\n")
    assert t.integration == "starting"
    for state in ("starting", "ready"):
        if state == "ready":
            t.feed(PROMPT)
        copy = Terminal(80, 24, mark_key=KEY)
        copy.feed_checkpoint(Checkpointer().write(t))
        assert copy.integration == state == t.integration
    off = Terminal(80, 24, mark_key=KEY)
    off.feed(mark("I;start") + mark("I;off"))
    assert off.integration == "off"
    copy = Terminal(80, 24, mark_key=KEY)
    copy.feed_checkpoint(Checkpointer().write(off))
    assert copy.integration == "off"


def test_a_checkpoint_is_trusted_unsigned_and_the_tail_after_it_is_not() -> None:
    t = Terminal(80, 24, mark_key=KEY)
    t.feed(PROMPT + b"ls\r\n" + mark("C;cmdline_url=ls") + b"a b\r\n" + mark("D;0") + PROMPT)
    checkpoint = Checkpointer().write(t)
    assert b"phux_k" not in checkpoint
    copy = Terminal(80, 24, mark_key=KEY)
    copy.feed_checkpoint(checkpoint)
    copy.feed(b"cat f\r\n" + mark("C;cmdline_url=cat%20f") + FORGED[0])
    assert [(c.command, c.exit_code) for c in copy.commands] == [("ls", 0), ("cat f", None)]


@pytest.mark.parametrize("forged", FORGED)
def test_run_s_raw_scanner_sees_only_signed_marks(forged: bytes) -> None:
    scanner = MarkScanner(80, 24, KEY)
    scanner.start(0)
    data = mark("C;cmdline_url=cat") + forged + b"TAIL\r\n" + mark("D;1") + PROMPT
    # Split inside every mark: a mark cut between two reads is found whole.
    for i in range(0, len(data), 7):
        scanner.feed(i, data[i : i + 7])
    assert [(m.kind, m.params) for m in scanner.marks] == [
        ("C", ";cmdline_url=cat"),
        ("D", ";1"),
        ("A", ""),
        ("B", ""),
    ]


def test_the_raw_view_of_a_prompt_is_not_fooled_by_a_forged_one() -> None:
    signed = PROMPT
    assert view(signed, 80, 24, 0, KEY).shell_phase == "prompt"
    # A command runs and prints a forged prompt: it is still running.
    running = PROMPT + b"cat f\r\n" + mark("C;cmdline_url=cat%20f") + FORGED[0] + mark("A", None)
    running += b"$ " + mark("B", None)
    assert view(running, 80, 24, 0, KEY).shell_phase == "running"
    assert view(running, 80, 24, 0, None).shell_phase == "prompt"  # (what it was fooled into)

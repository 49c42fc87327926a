"""A checkpoint from a server whose replica did not carry the shell's commands.

Before checkpoints carried commands (``phux_at`` marks), a replica wrote the
cells' OSC 133 marks as bare ``A``/``B``/``C`` marks: a client replaying one as
live output took every prompt in it for a command of unknown status, with
output starting at the row of its echo, and an empty command at the end. A
client now takes a checkpoint's marks without ``phux_at`` (or ``phux_pen``) as
the cells' marks only (spec/L1.md §5.1): what such a checkpoint cannot carry
is not made up.

The vector is a real one: the checkpoint chunk a phux server at commit f723cf9
(shell integration, bare marks in checkpoints) sent on SUBSCRIBE, for an 80x24
bash pane with ``PS1='$ '`` that ran ``echo one``, ``false``, ``seq 1 3``, a
70,000-byte line (past the 64 KiB after which the replica checkpoints) and
``echo two``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from phux.client.mirror import Mirror
from phux.client.shell_scan import view
from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint
from phux.wire.frames import BootstrapBegin, BootstrapChunk, BootstrapReady

VECTOR = Path(__file__).parent / "vectors" / "checkpoint_before_commands.vt.gz"
A, B = b"\x1b]133;A\x07", b"\x1b]133;B\x07"
# The journal after the checkpoint: a command with the marks today's hooks print.
TAIL = (
    b"echo three\r\n\x1b]133;C;cmdline_url=echo%20three\x07three\r\n"
    b"\x1b]133;D;0\x07\x1b]7;file://h/tmp\x07" + A + b"$ " + B
)


def old_checkpoint() -> bytes:
    return gzip.decompress(VECTOR.read_bytes())


def test_the_vector_is_what_was_misread_as_commands() -> None:
    t = Terminal(80, 24, history=2000)
    t.feed(old_checkpoint())
    assert [c.command for c in t.commands][:3] == ["echo one", "false", "seq 1 3"]
    assert {c.exit_code for c in t.commands} == {None}


def test_an_old_checkpoint_makes_no_commands_and_keeps_the_cells_marks() -> None:
    t = Terminal(80, 24, history=2000)
    t.feed_checkpoint(old_checkpoint())
    assert t.commands == [] and t.shell_phase == "none" and t.pending_input == ""
    prompt = t.screen.buffer[23]
    assert prompt[0].data == "$" and prompt[0].semantic == 1
    t.feed(TAIL)
    got = [(c.command, c.exit_code, t.command_output(c)[0]) for c in t.commands]
    assert got == [("echo three", 0, "three")]
    assert t.shell_phase == "prompt"


def mirror_of(checkpoint: bytes, journal: bytes) -> Mirror:
    m = Mirror(1, raw=True)
    m.mark_key = None  # marks as phux printed them before they were signed
    m.request_id = 3
    m.handle(BootstrapBegin(request_id=3, terminal=1, start_seq=100, cols=80, rows=24))
    m.handle(BootstrapChunk(terminal=1, seq=100, data=checkpoint, checkpoint=True))
    m.handle(BootstrapChunk(terminal=1, seq=100, data=journal))
    m.handle(BootstrapReady(terminal=1, next_seq=100 + len(journal), cols=80, rows=24))
    return m


def test_a_client_mirror_lists_only_what_the_journal_shows() -> None:
    m = mirror_of(old_checkpoint(), TAIL)
    engine = m.engine
    assert engine is not None
    assert [(c.command, c.exit_code) for c in engine.commands] == [("echo three", 0)]
    # run's view of a one-shot mirror (raw bytes, no engine) agrees.
    raw = mirror_of(old_checkpoint(), b"")
    assert raw.raw is not None
    assert view(bytes(raw.raw), 80, 24, raw.checkpoint_bytes).shell_phase == "none"


def test_todays_checkpoints_still_carry_the_commands() -> None:
    t = Terminal(80, 24, history=2000)
    t.feed(b"\x1b]133;A\x07$ \x1b]133;B\x07false\r\n\x1b]133;C;cmdline_url=false\x07")
    t.feed(b"\x1b]133;D;1\x07\x1b]133;A\x07$ \x1b]133;B\x07")
    m = mirror_of(write_checkpoint(t), b"")
    engine = m.engine
    assert engine is not None
    assert [(c.command, c.exit_code) for c in engine.commands] == [("false", 1)]
    assert engine.shell_phase == "prompt"
    assert m.raw is not None
    assert view(bytes(m.raw), 80, 24, m.checkpoint_bytes).shell_phase == "prompt"

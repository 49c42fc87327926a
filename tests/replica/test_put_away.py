"""A replica idle for ``idle_s`` is put away (its checkpoint kept, compressed; its
engine dropped) and built again from the checkpoint when output comes. Nothing a
client or a program sees may change: the answers to terminal queries, the
checkpoints, the screen. Each case runs the same stream through a replica that
is never put away and one put away mid-stream, and compares."""

from __future__ import annotations

import pytest

from phux.server.replica_worker import (
    CHECKPOINT,
    CLOSE,
    FEED,
    KEY,
    NEW,
    REPLIES,
    RESIZE,
    Message,
    WorkerCore,
)
from phux.signed_marks import signature

TID = 3


class _Run:
    def __init__(self, idle_s: float) -> None:
        self.core = WorkerCore(
            history=200, compact_bytes=1 << 30, hard_bytes=1 << 30, idle_s=idle_s
        )
        self.seq = 0
        self.out: list[Message] = []
        self.send((NEW, TID, 0, 40, 10, b""))
        self.send((KEY, TID, 0, 0, 0, b"k3y"))

    def send(self, msg: Message) -> None:
        self.core.note(msg)
        self.core.handle(msg, self.out)

    def feed(self, data: bytes) -> None:
        self.send((FEED, TID, self.seq, 0, 0, data))
        self.seq += len(data)

    def put_away(self) -> None:
        self.core.replicas[TID].active_at -= 10 * self.core.idle_s
        self.core.put_away_idle(self.out)

    def replies(self) -> list[bytes]:
        return [m[5] for m in self.out if m[0] == REPLIES]

    def last_checkpoint(self) -> bytes:
        self.send((CLOSE, TID, 0, 0, 0, b""))
        return [m[5] for m in self.out if m[0] == CHECKPOINT][-1]


# The state before the pause: history, colours, margins, origin mode, a saved
# cursor, titles, modes, a tab stop, and a sequence cut in half at the very end.
BEFORE = [
    b"".join(b"line %d of the history \x1b[3%dmcoloured\x1b[m\r\n" % (i, i % 8) for i in range(60)),
    b"\x1b]2;a title\x07\x1b]1;an icon\x07\x1b[?1h\x1b[?2004h\x1b[?25l",
    b"\x1b[3;8r\x1b[?6h\x1b[2;5H\x1b7\x1b[4;9H\x1b[1;4;38;5;202mbold\x1b[2 q\x1bH",
    b"\x1b]133;A\x07$ \x1b]133;B\x07echo hi\r\n\x1b]133;C\x07hi\r\n\x1b[3",
]
# After it: the rest of the cut sequence, then queries whose answers depend on it all.
AFTER = [
    b"1mmore\x1b[6n\x1b[?6n\x1b[c\x1b[>c",
    b"\x1bP$qm\x1b\\\x1bP$qr\x1b\\\x1bP$q q\x1b\\\x1b]10;?\x07\x1b]4;1;?\x07",
    b"\x1b8\x1b[6n\x1b[18t\x1b[?2004$p\x1b[?6$p\x1b[?1$p\t\x1b[6n",
    b"\x1b[r\x1b[?6l\x1b[99;1H" + b"".join(b"after %d\r\n" % i for i in range(30)),
    # Output may print marks: only the ones signed with the pane's key count.
    b"\x1b]133;A\x07forged$ \x1b]133;B\x07rm\r\n\x1b]133;C\x07\x1b]133;D;0\x07",
    b"\x1b]133;A" + signature("k3y") + b"\x07$ \x1b]133;B" + signature("k3y") + b"\x07ls\r\n",
]


@pytest.mark.parametrize("pause", range(1, len(BEFORE) + 1))
def test_a_replica_put_away_and_built_again_answers_and_checkpoints_the_same(pause: int) -> None:
    kept, parked = _Run(idle_s=0), _Run(idle_s=1.0)
    for data in BEFORE[:pause]:
        kept.feed(data)
        parked.feed(data)
    parked.put_away()
    rep = parked.core.replicas[TID]
    assert rep.engine is None and rep.parked  # put away: only the compressed checkpoint
    assert parked.out[-1][0] == CHECKPOINT  # (sent: its journal compacts too)
    for data in BEFORE[pause:] + AFTER:
        kept.feed(data)
        parked.feed(data)
    assert parked.core.replicas[TID].engine is not None
    assert parked.replies() == kept.replies()
    built, reference = parked.core.replicas[TID].engine, kept.core.replicas[TID].engine
    assert built is not None and reference is not None
    assert built.project() == reference.project()
    checkpoint = kept.last_checkpoint()
    assert parked.last_checkpoint() == checkpoint
    # The pane's key came before the first output, and outlived the put-away:
    # the forged command counts in neither; the signed prompt does.
    assert b"cmdline_url=rm" not in checkpoint and b"phux_entered=9" in checkpoint


def test_a_resize_of_a_replica_put_away_builds_it_at_its_size() -> None:
    kept, parked = _Run(idle_s=0), _Run(idle_s=1.0)
    for run in (kept, parked):
        run.feed(BEFORE[0])
    parked.put_away()
    for run in (kept, parked):
        run.send((RESIZE, TID, run.seq, 60, 12, b""))
        run.feed(b"\x1b[6n\x1b[18t")
    assert parked.replies() == kept.replies()
    assert parked.last_checkpoint() == kept.last_checkpoint()


def test_only_idle_replicas_are_put_away_and_never_with_idle_s_0() -> None:
    run = _Run(idle_s=1.0)
    run.feed(b"busy")
    run.core.put_away_idle(run.out)  # fed just now: not idle
    assert run.core.replicas[TID].engine is not None
    assert run.core.idle_due() is not None
    never = _Run(idle_s=0)
    never.feed(b"x")
    assert never.core.idle_due() is None

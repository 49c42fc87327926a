"""The replica worker joins each terminal's consecutive output chunks into one feed
(so the engine can skip a flood's rows that scroll out of its history), and that
changes nothing the loop sees: the same answers, checkpoints and progress."""

from __future__ import annotations

from phux.server.replica import (
    CHECKPOINT,
    FEED,
    NEW,
    PROGRESS,
    REPLIES,
    RESET,
    RESIZE,
    Message,
    WorkerCore,
)


def _feeds(tid: int, start: int, chunks: list[bytes], gen: int = 0) -> list[Message]:
    out: list[Message] = []
    seq = start
    for data in chunks:
        out.append((FEED, tid, seq, gen, 0, data))
        seq += len(data)
    return out


def _run(msgs: list[Message], join: bool) -> list[Message]:
    core = WorkerCore(history=50, compact_bytes=1024, hard_bytes=1 << 20)
    batch = core.coalesce(msgs) if join else msgs
    for msg in batch:
        core.note(msg)
    out: list[Message] = []
    for msg in batch:
        core.handle(msg, out)
    return out


def _flood(i: int) -> bytes:
    return b"".join(b"line %d.%d \x1b[1mbold\x1b[0m\r\n" % (i, k) for k in range(40))


def test_chunks_are_joined_per_terminal_until_something_else_comes() -> None:
    msgs: list[Message] = [(NEW, 1, 0, 20, 5, b""), (NEW, 2, 0, 20, 5, b"")]
    msgs += _feeds(1, 0, [b"ab", b"cd"])
    msgs += _feeds(2, 0, [b"x"])
    msgs += _feeds(1, 4, [b"ef"])
    msgs.append((RESIZE, 1, 6, 30, 5, b"\x00\x00"))
    msgs += _feeds(1, 6, [b"gh", b"ij"])
    msgs += _feeds(1, 10, [b"k"], gen=1)  # a restarted replica's: never joined to the old
    core = WorkerCore(history=50, compact_bytes=1 << 30, hard_bytes=1 << 20)
    joined = core.coalesce(msgs)
    feeds = [(m[1], m[2], m[5]) for m in joined if m[0] == FEED]
    assert feeds == [(1, 0, b"abcdef"), (2, 0, b"x"), (1, 6, b"ghij"), (1, 10, b"k")]
    assert [m[0] for m in joined] == [NEW, NEW, FEED, FEED, RESIZE, FEED, FEED]


def test_joined_feeds_answer_and_checkpoint_as_separate_ones() -> None:
    chunks = [_flood(i) for i in range(30)]
    chunks[7] += b"\x1b[6n"  # a cursor position query in the middle of the flood
    chunks[20] += b"\x1b[c"
    msgs: list[Message] = [(NEW, 1, 0, 20, 5, b""), *_feeds(1, 0, chunks)]
    apart = _run(msgs, join=False)
    joined = _run(msgs, join=True)
    replies = [m[5] for m in apart if m[0] == REPLIES]
    assert [m[5] for m in joined if m[0] == REPLIES] == [b"".join(replies)]
    assert replies == [b"\x1b[5;1R", b"\x1b[?1;2c"]
    last = [m for m in apart if m[0] == CHECKPOINT][-1]
    assert [m for m in joined if m[0] == CHECKPOINT][-1][2:] == last[2:]
    assert [m for m in joined if m[0] == PROGRESS][-1] == [m for m in apart if m[0] == PROGRESS][-1]


def test_answers_before_a_restarts_quiet_point_are_not_sent_again() -> None:
    first, second = _flood(1) + b"\x1b[c", _flood(2) + b"\x1b[c"
    quiet = len(first)
    reset: Message = (RESET, 1, 0, 20, 5, quiet.to_bytes(8, "little") + (1).to_bytes(2, "little"))
    msgs = [(NEW, 1, 0, 20, 5, b""), reset, *_feeds(1, 0, [first, second], gen=1)]
    apart = _run(msgs, join=False)
    joined = _run(msgs, join=True)
    assert [m[5] for m in joined if m[0] == REPLIES] == [m[5] for m in apart if m[0] == REPLIES]
    assert [m[5] for m in apart if m[0] == REPLIES] == [b"\x1b[?1;2c"]

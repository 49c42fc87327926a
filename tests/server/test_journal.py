"""The journal against a model: whatever it keeps is the tail of the stream, with the
right size at its start and every size change at its place."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phux.server.journal import Chunk, Journal, JournalBudget, SizeChange

ops = st.lists(
    st.one_of(
        st.binary(min_size=1, max_size=40).map(lambda b: ("out", b)),
        st.tuples(st.integers(1, 300), st.integers(1, 100)).map(lambda s: ("size", s)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, limit=st.integers(0, 120))
def test_bootstrap_is_the_tail_of_the_stream(ops: list[tuple[str, object]], limit: int) -> None:
    journal = Journal(limit, 80, 24)
    stream = b""
    sizes = [(0, 80, 24)]  # (seq, cols, rows): the size from seq on
    for kind, value in ops:
        if kind == "out":
            assert isinstance(value, bytes)
            journal.append(value)
            stream += value
        else:
            assert isinstance(value, tuple)
            journal.resize(*value)
            sizes.append((len(stream), *value))
    boot = journal.bootstrap()
    assert boot.next_seq == len(stream)
    assert boot.checkpoint is None
    data = b"".join(i.data for i in boot.items if isinstance(i, Chunk))
    assert len(data) <= max(limit, 0)
    assert boot.start_seq == len(stream) - len(data)
    assert data == stream[boot.start_seq :]
    if limit:
        assert len(data) == min(limit, len(stream))
    seq = boot.start_seq
    for item in boot.items:  # chunks contiguous, changes in order
        assert item.seq == seq if isinstance(item, Chunk) else item.seq >= seq
        if isinstance(item, Chunk):
            seq = item.end

    # Replaying the start size and the kept changes gives, before every chunk,
    # the size the terminal had at that point of the stream, and the final size at the end.
    def size_at(seq: int) -> tuple[int, int]:
        return [s[1:] for s in sizes if s[0] <= seq][-1]

    current = (boot.cols, boot.rows)
    for item in boot.items:
        if isinstance(item, SizeChange):
            assert item.seq >= boot.start_seq
            current = (item.cols, item.rows)
        else:
            assert current == size_at(item.seq)
    assert current == sizes[-1][1:] == (journal.cols, journal.rows)


budget_ops = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 2), st.binary(min_size=1, max_size=40)).map(lambda t: ("out", t)),
        st.tuples(st.integers(0, 2), st.integers(0, 60)).map(lambda t: ("shrink", t)),
        st.tuples(st.integers(0, 2), st.integers(0, 200)).map(lambda t: ("compact", t)),
        st.integers(0, 2).map(lambda i: ("forget", (i, 0))),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops=budget_ops, compacting=st.booleans())
def test_the_budget_counts_what_the_journals_hold(
    ops: list[tuple[str, tuple[int, object]]], compacting: bool
) -> None:
    """However the journals change (appends, their own trims, compactions, shrinks
    asked by the budget, a terminal forgotten), the budget holds their sum, and a
    shrink never drops what a replica's checkpoints do not cover."""
    looks: list[int] = []
    budget = JournalBudget(100, lambda: looks.append(budget.used))
    journals = [Journal(70, 80, 24, budget) for _ in range(3)]
    for journal in journals:
        journal.compacting = compacting
    for kind, (i, value) in ops:
        journal = journals[i]
        if kind == "out":
            assert isinstance(value, bytes)
            journal.append(value)
        elif kind == "shrink":
            assert isinstance(value, int)
            before = journal.size_bytes
            journal.shrink(value)
            if compacting:
                assert journal.size_bytes == before
        elif kind == "compact":
            assert isinstance(value, int)
            journal.compact(min(value, journal.next_seq), 80, 24, b"ck")
        else:
            journal.release()
            journals[i] = Journal(70, 80, 24, budget)
            journals[i].compacting = compacting
        assert budget.used == sum(j.size_bytes for j in journals)
    assert all(used > budget.limit for used in looks)


compaction_ops = st.lists(
    st.one_of(
        st.binary(min_size=1, max_size=40).map(lambda b: ("out", b)),
        st.integers(0, 10).map(lambda i: ("compact", i)),
        st.integers(1, 80).map(lambda n: ("shrink", n)),
        st.just(("stop", 0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops=compaction_ops, limit=st.integers(1, 120))
def test_a_checkpoint_recreates_the_state_at_the_journals_start(
    ops: list[tuple[str, object]], limit: int
) -> None:
    """With compaction (issue 24 item 10): a bootstrap's checkpoint, when it has one,
    is the state just before its start_seq, and its chunks are the stream from there.
    A trim that drops a prefix the checkpoint recreated drops the checkpoint too."""
    journal = Journal(limit, 80, 24)
    journal.compacting = True  # a replica is attached
    stream = b""
    ends = [0]  # chunk ends: where a replica checkpoints
    for kind, value in ops:
        if kind == "out":
            assert isinstance(value, bytes)
            journal.append(value)
            stream += value
            ends.append(len(stream))
        elif kind == "compact":
            assert isinstance(value, int)
            inside = [e for e in ends if journal.start_seq <= e <= journal.next_seq]
            seq = inside[value % len(inside)]
            # The checkpoint names the state it recreates: the stream before seq.
            assert journal.compact(seq, 80, 24, b"state-before-%d" % seq)
        elif kind == "shrink":
            assert isinstance(value, int)
            journal.shrink(value)
        else:
            journal.stop_compacting()
    boot = journal.bootstrap()
    data = b"".join(i.data for i in boot.items if isinstance(i, Chunk))
    assert data == stream[boot.start_seq :]
    assert boot.next_seq == len(stream)
    if boot.checkpoint is not None:
        assert boot.checkpoint == b"state-before-%d" % boot.start_seq
    elif boot.start_seq > 0:
        assert not journal.compacting or boot.start_seq == 0, "bytes dropped uncovered"

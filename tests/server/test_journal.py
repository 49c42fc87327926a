"""The journal against a model: whatever it keeps is the tail of the stream, with the
right size at its start and every size change at its place."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phux.server.journal import Chunk, Journal, SizeChange

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

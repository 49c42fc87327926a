"""Every frame type survives encode -> decode, and the reader accepts any split."""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.wire import ALL_FRAMES, FrameReader, decode_frame, encode_frame
from phux.wire.frames import (
    Frame,
    Input,
    MetaEntry,
    Ok,
    Output,
    Ping,
    TerminalInfo,
    TerminalList,
)
from phux.wire.tlv import Encoded, encode_struct, leaf_for

from .strategies import frame_strategy

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("cls", ALL_FRAMES, ids=lambda c: c.__name__)
def test_round_trip(cls: type[Frame]) -> None:
    @SETTINGS
    @given(frame_strategy(cls))
    def check(frame: Frame) -> None:
        data = encode_frame(frame)
        assert int.from_bytes(data[:4], "big") == len(data) - 4
        assert data[4] == cls.TYPE
        back = decode_frame(data)
        assert type(back) is cls
        assert back == frame
        assert encode_frame(back) == data

    check()


any_frame = st.one_of(*[frame_strategy(c) for c in ALL_FRAMES])


@SETTINGS
@given(st.lists(any_frame, min_size=1, max_size=6), st.data())
def test_any_split_yields_the_same_frames(frames: list[Frame], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(f) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    reader = FrameReader()
    got: list[Frame] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        reader.feed(stream[prev:cut])
        prev = cut
        got.extend(reader.frames())
    assert got == frames
    assert reader.buffered == 0


FIXED = [
    Ping(token=1),
    Input(request_id=1, terminal=2, data=b"x" * 200),
    Ok(request_id=3),
    Output(terminal=1, seq=5, data=b""),
]


def test_every_single_cut_and_byte_at_a_time() -> None:
    stream = b"".join(encode_frame(f) for f in FIXED)
    for cut in range(len(stream) + 1):
        reader = FrameReader()
        reader.feed(stream[:cut])
        got = reader.frames()
        reader.feed(stream[cut:])
        got += reader.frames()
        assert got == FIXED, cut
    reader = FrameReader()
    got = []
    for i in range(len(stream)):
        reader.feed(stream[i : i + 1])
        got += reader.frames()
    assert got == FIXED


def test_reader_returns_none_until_whole() -> None:
    data = encode_frame(Ok(request_id=9))
    reader = FrameReader()
    reader.feed(data[:-1])
    assert reader.next_frame() is None
    reader.feed(data[-1:])
    assert reader.next_frame() == Ok(request_id=9)
    assert reader.next_frame() is None


@SETTINGS
@given(frame_strategy(TerminalList))
def test_encoded_parts_are_written_as_they_are(frame: TerminalList) -> None:
    """A server may keep a list's elements or a field encoded (phux.wire.tlv.Encoded):
    the frame is the same bytes as when it encodes them itself."""
    whole = encode_frame(frame)
    parts = TerminalList(
        request_id=frame.request_id,
        terminals=cast("list[TerminalInfo]", [Encoded(encode_struct(t)) for t in frame.terminals]),
        global_metadata=frame.global_metadata,
    )
    assert encode_frame(parts) == whole
    listed = leaf_for(list[MetaEntry]).encode(frame.global_metadata)
    field = TerminalList(
        request_id=frame.request_id,
        terminals=frame.terminals,
        global_metadata=cast("list[MetaEntry]", Encoded(listed)),
    )
    assert encode_frame(field) == whole

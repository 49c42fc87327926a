"""Codec throughput: phux.wire encode/decode in MB/s (bulk output) and frames/s (small frames).

Workloads, each measured for encoding (``encode_frame``) and decoding (a
``FrameReader`` fed the whole stream, all frames taken back):

- **bulk**: OUTPUT frames of 4 KiB of terminal bytes, the shape of a busy
  terminal's live output; reported in MB/s of frame bytes.
- **small**: a mix of the frequent small frames (INPUT of a few keys, OK,
  RESIZED, OUTPUT of a few bytes, METADATA_CHANGED); reported in frames/s.

Baseline, measured in the same run: **msgspec.msgpack** encoding and decoding
of the same frames declared as msgspec Structs (msgspec's C implementation,
a Struct per frame class with the record's fields, one typed Decoder per
frame class, the decoder told each frame's type as our reader learns it from
the type byte), plus the same 4-byte
length + type byte framing done with slicing. It is what the codec would cost
with a ready-made C serializer instead of our pure-Python TLV, so the ratio
(phux / baseline, < 1 means slower) shows the price of the self-describing,
skippable TLV format in pure Python. The wire can't use msgpack itself
(field-id tagging and unknown-field skipping are the point), so the ratio is
a yardstick, not a target; what matters is that bulk throughput stays far
above a PTY's output rate (a few tens of MB/s at most) and that small frames
cost microseconds.
"""

from __future__ import annotations

import functools
import operator
import types
from typing import Any

import msgspec

from phux.record import MISSING, fields
from phux.wire import FrameReader, encode_frame
from phux.wire.frames import Frame, Input, MetadataChanged, Ok, Output, Resized
from phux.wire.tlv import IntSpec
from tools.bench.harness import Measurement, median_seconds

BENCH = "codec"


def _bulk(n: int) -> list[Frame]:
    chunk = bytes(range(256)) * 16
    return [Output(terminal=1, seq=i * len(chunk), data=chunk) for i in range(n)]


def _small(n: int) -> list[Frame]:
    out: list[Frame] = []
    for i in range(n // 5):
        out.append(Input(request_id=i, terminal=3, data=b"ls -l\r"))
        out.append(Ok(request_id=i))
        out.append(Resized(terminal=3, seq=i * 10, cols=120, rows=40))
        out.append(Output(terminal=3, seq=i * 10, data=b"$ ls\r\n"))
        out.append(MetadataChanged(subscription=7, key="phux.focus_ms", terminal=3, value=b"17"))
    return out


def _plain(tp: Any) -> Any:
    """An annotation msgspec understands: the wire's integer types become int."""
    if isinstance(tp, type) and issubclass(tp, IntSpec):
        return int
    if isinstance(tp, types.UnionType):
        return functools.reduce(operator.or_, [_plain(a) for a in tp.__args__])
    return tp


def _struct_twin(cls: type[Frame]) -> type[msgspec.Struct]:
    """A msgspec Struct with the fields of a (flat) frame class, and its TYPE."""
    spec: list[Any] = []
    for f in fields(cls):
        tp = _plain(f.annotation)
        if f.factory is not None:
            spec.append((f.name, tp, msgspec.field(default_factory=f.factory)))
        elif f.default is not MISSING:
            spec.append((f.name, tp, f.default))
        else:
            spec.append((f.name, tp))
    twin = msgspec.defstruct(cls.__name__, spec, frozen=True, kw_only=True)
    twin.TYPE = cls.TYPE  # type: ignore[attr-defined]
    return twin


class _Msgpack:
    """The baseline: msgspec.msgpack over Struct twins of the frames, with the same framing."""

    def __init__(self, frames: list[Frame]) -> None:
        self.twins = {c: _struct_twin(c) for c in {type(f) for f in frames}}
        self.encoder = msgspec.msgpack.Encoder()
        self.decoders = {c.TYPE: msgspec.msgpack.Decoder(t) for c, t in self.twins.items()}

    def convert(self, frames: list[Frame]) -> list[Any]:
        """The frames as their Struct twins (what the baseline encodes and decodes)."""
        return [
            self.twins[type(f)](**{i.name: getattr(f, i.name) for i in fields(type(f))})
            for f in frames
        ]

    def encode(self, frame: Any) -> bytes:
        body = self.encoder.encode(frame)
        return (1 + len(body)).to_bytes(4, "big") + bytes((frame.TYPE,)) + body

    def decode_stream(self, data: bytes) -> list[Any]:
        out = []
        pos = 0
        view = memoryview(data)
        decoders = self.decoders
        while pos < len(data):
            length = int.from_bytes(view[pos : pos + 4], "big")
            out.append(decoders[data[pos + 4]].decode(view[pos + 5 : pos + 4 + length]))
            pos += 4 + length
        return out


def _phux_decode(data: bytes) -> list[Frame]:
    reader = FrameReader()
    reader.feed(data)
    return reader.frames()


def _measure(frames: list[Frame], repeat: int) -> dict[str, float]:
    """Seconds per pass for each of the four operations, and the stream sizes."""
    base = _Msgpack(frames)
    twins = base.convert(frames)
    phux_stream = b"".join(encode_frame(f) for f in frames)
    base_stream = b"".join(base.encode(f) for f in twins)
    assert _phux_decode(phux_stream) == frames
    assert base.decode_stream(base_stream) == twins
    return {
        "phux_enc": median_seconds(lambda: [encode_frame(f) for f in frames], repeat=repeat),
        "base_enc": median_seconds(lambda: [base.encode(f) for f in twins], repeat=repeat),
        "phux_dec": median_seconds(lambda: _phux_decode(phux_stream), repeat=repeat),
        "base_dec": median_seconds(lambda: base.decode_stream(base_stream), repeat=repeat),
        "phux_bytes": float(len(phux_stream)),
        "base_bytes": float(len(base_stream)),
    }


def run(quick: bool) -> list[Measurement]:
    repeat = 3 if quick else 9
    bulk = _bulk(200 if quick else 2000)
    small = _small(2000 if quick else 20000)
    baseline = "msgspec.msgpack, Struct twins + framing"
    results: list[Measurement] = []

    m = _measure(bulk, repeat)
    mb = 1e6
    for op, label in (("enc", "encode"), ("dec", "decode")):
        results.append(
            Measurement(
                bench=BENCH,
                name=f"bulk {label} (OUTPUT 4 KiB)",
                unit="MB/s",
                value=m["phux_bytes"] / m[f"phux_{op}"] / mb,
                baseline_name=baseline,
                baseline=m["base_bytes"] / m[f"base_{op}"] / mb,
                target=">= 50 MB/s",
            )
        )
    m = _measure(small, repeat)
    for op, label in (("enc", "encode"), ("dec", "decode")):
        results.append(
            Measurement(
                bench=BENCH,
                name=f"small-frame {label} (mix of 5)",
                unit="frames/s",
                value=len(small) / m[f"phux_{op}"],
                baseline_name=baseline,
                baseline=len(small) / m[f"base_{op}"],
                target=">= 100k frames/s",
            )
        )
    return results

"""100 000 random and mutated byte strings: the reader raises nothing but WireError.

A seeded generator (not hypothesis) keeps this fast and reproducible. Half the
inputs are mutations of valid frame streams (bit flips, byte overwrites,
insertions, deletions, truncations, and body mutations under a repaired length
so the body decoder is exercised rather than just the framing); the rest are
random bytes, some with a plausible header.
"""

from __future__ import annotations

import random

from phux.wire import FrameReader, WireError, encode_frame
from phux.wire.frames import Frame

from .test_vectors import canonical_frames

N = 100_000
SEED = 0x9E3779B9


def _mutate(rng: random.Random, data: bytearray) -> bytearray:
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:
            data[rng.randrange(len(data))] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF))
        elif op == 2:
            i = rng.randrange(len(data) + 1)
            data[i:i] = rng.randbytes(rng.randint(1, 4))
        elif op == 3 and data:
            i = rng.randrange(len(data))
            del data[i : i + rng.randint(1, 4)]
        elif op == 4:
            del data[rng.randrange(len(data) + 1) :]
        elif op == 5 and len(data) > 8:
            # A huge varint somewhere after the header.
            i = rng.randrange(5, len(data))
            data[i:i] = b"\xff\xff\xff\xff\x0f"
    return data


def _repair_length(data: bytearray) -> bytearray:
    if len(data) >= 5:
        data[:4] = (len(data) - 4).to_bytes(4, "big")
    return data


def _drain(data: bytes, rng: random.Random) -> int:
    reader = FrameReader()
    pieces = 1 if rng.random() < 0.7 else rng.randint(2, 4)
    cuts = sorted(rng.randrange(len(data) + 1) for _ in range(pieces - 1))
    decoded = 0
    prev = 0
    for cut in [*cuts, len(data)]:
        reader.feed(data[prev:cut])
        prev = cut
        while True:
            try:
                frame = reader.next_frame()
            except WireError as exc:
                if not exc.recoverable:
                    return decoded
                continue
            if frame is None:
                break
            assert isinstance(frame, Frame)
            decoded += 1
    return decoded


def test_random_and_mutated_inputs_raise_only_wire_error() -> None:
    rng = random.Random(SEED)
    seeds = [encode_frame(f) for f in canonical_frames()]
    decoded = 0
    for i in range(N):
        kind = i % 4
        if kind == 0:
            data = _mutate(rng, bytearray(rng.choice(seeds)))
        elif kind == 1:
            data = _repair_length(_mutate(rng, bytearray(rng.choice(seeds))))
        elif kind == 2:
            stream = bytearray(b"".join(rng.choice(seeds) for _ in range(rng.randint(2, 3))))
            data = _mutate(rng, stream)
        else:
            data = bytearray(rng.randbytes(rng.randint(0, 40)))
            if rng.random() < 0.5:
                data = _repair_length(bytearray(b"\0\0\0\0") + bytes((rng.randrange(256),)) + data)
        decoded += _drain(bytes(data), rng)
    # Sanity: the mutations leave plenty of frames decodable, so bodies really get exercised.
    assert decoded > N // 10

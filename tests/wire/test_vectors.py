"""spec/vectors/ is current, and every vector decodes to its fields and re-encodes to its bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tools import gen_vectors

from phux.wire import ALL_FRAMES, FrameReader, WireError, decode_frame, encode_frame
from phux.wire.frames import Frame

FRAMES_DOC = json.loads(gen_vectors.FRAMES_JSON.read_text())
MALFORMED_DOC = json.loads(gen_vectors.MALFORMED_JSON.read_text())


def canonical_frames() -> list[Frame]:
    return [frame for _, frame in gen_vectors.canonical_cases()]


def test_vector_files_are_current() -> None:
    for path, build in gen_vectors.OUTPUTS.items():
        assert path.read_text() == gen_vectors.render(build()), (
            f"{path.name} is stale: run python -m tools.gen_vectors"
        )


def test_every_frame_type_has_a_vector() -> None:
    types = {int(v["type"], 16) for v in FRAMES_DOC["vectors"]}
    assert types >= {cls.TYPE for cls in ALL_FRAMES}


@pytest.mark.parametrize("vector", FRAMES_DOC["vectors"], ids=lambda v: v["name"])
def test_vector(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    frame = decode_frame(data)
    assert f"0x{frame.TYPE:02X}" == vector["type"]
    assert gen_vectors.frame_name(type(frame)) == vector["frame"]
    assert gen_vectors.to_json(frame) == vector["fields"]
    built = gen_vectors.frame_from_json(vector["frame"], vector["fields"])
    assert built == frame
    assert encode_frame(built).hex() == vector.get("canonical_hex", vector["hex"])


@pytest.mark.parametrize("vector", MALFORMED_DOC["vectors"], ids=lambda v: v["name"])
def test_malformed_vector(vector: dict[str, Any]) -> None:
    reader = FrameReader()
    reader.feed(bytes.fromhex(vector["hex"]))
    try:
        frame = reader.next_frame()
    except WireError as exc:
        assert exc.reason.value == vector["reason"]
        assert exc.code.name == vector["code"]
        assert exc.recoverable is not vector["fatal"]
    else:
        assert frame is None
        assert vector["reason"] == "truncated"

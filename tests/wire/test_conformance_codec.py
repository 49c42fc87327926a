"""The conformance suite's own codec (conformance/codec.py) against spec/vectors/, and its
catalog against the wire's: the suite needs nothing of phux to check another server."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from conformance import catalog, codec
from tools import gen_conformance_catalog, gen_vectors

FRAMES_DOC = json.loads(gen_vectors.FRAMES_JSON.read_text())
MALFORMED_DOC = json.loads(gen_vectors.MALFORMED_JSON.read_text())
CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance"


def to_json(value: Any) -> Any:
    """spec/vectors/README.md's mapping, written again from the README."""
    if isinstance(value, catalog.Record):
        obj = {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}  # type: ignore[arg-type]
        tag = getattr(type(value), "TAG", None)
        if tag is not None:
            return {"tag": tag, "variant": type(value).__name__, "fields": obj}
        return obj
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def from_json(spec: str, value: Any) -> Any:
    if value is None:
        return None
    if spec == "bytes":
        return bytes.fromhex(value)
    if spec.startswith("list<"):
        return [from_json(spec[5:-1], v) for v in value]
    if spec == "ExitStatus":
        cls = next(c for c in catalog.EXIT_STATUS_VARIANTS if c.__name__ == value["variant"])
        return record_from_json(cls, value["fields"])
    if spec in catalog.RECORDS_BY_NAME:
        return record_from_json(catalog.RECORDS_BY_NAME[spec], value)
    return value


def record_from_json(cls: type[catalog.Record], obj: dict[str, Any]) -> Any:
    return cls(**{name: from_json(spec, obj[name]) for _, name, spec in cls.FIELDS})


def test_catalog_is_current() -> None:
    assert gen_conformance_catalog.CATALOG.read_text() == gen_conformance_catalog.render(), (
        "conformance/catalog.py is stale: run python -m tools.gen_conformance_catalog"
    )


@pytest.mark.parametrize("vector", FRAMES_DOC["vectors"], ids=lambda v: v["name"])
def test_frame_vector(vector: dict[str, Any]) -> None:
    reader = codec.FrameReader()
    reader.feed(bytes.fromhex(vector["hex"]))
    frame = reader.next_frame()
    assert frame is not None and reader.next_frame() is None
    assert f"0x{frame.TYPE:02X}" == vector["type"]
    assert to_json(frame) == vector["fields"]
    cls = catalog.FRAMES_BY_TYPE[int(vector["type"], 16)]
    rebuilt = record_from_json(cls, vector["fields"])
    assert codec.encode_frame(rebuilt).hex() == vector.get("canonical_hex", vector["hex"])


@pytest.mark.parametrize("vector", MALFORMED_DOC["vectors"], ids=lambda v: v["name"])
def test_malformed_vector(vector: dict[str, Any]) -> None:
    reader = codec.FrameReader()
    reader.feed(bytes.fromhex(vector["hex"]))
    if vector["reason"] == "truncated" and len(bytes.fromhex(vector["hex"])) < 5:
        assert reader.next_frame() is None
        return
    try:
        frame = reader.next_frame()
    except codec.DecodeError as exc:
        assert exc.reason.value == vector["reason"], exc
        assert exc.recoverable == (not vector["fatal"])
        return
    assert frame is None and vector["reason"] == "truncated", (vector, frame)


def test_the_suite_imports_nothing_of_phux() -> None:
    for path in sorted(CONFORMANCE.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            bad = [n for n in names if n == "phux" or n.startswith("phux.")]
            assert not bad, f"{path.name} imports {bad}"

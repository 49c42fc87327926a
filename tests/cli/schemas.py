"""Validate documents against spec/schemas/ (needs the `jsonschema` test extra)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"


@functools.cache
def validator(shape: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / f"{shape}.schema.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(shape: str, document: Any) -> None:
    validator(shape).validate(document)

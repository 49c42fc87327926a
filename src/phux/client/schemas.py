"""JSON Schemas of the agent shapes, built from their msgspec Structs.

One code path for both homes of a schema: ``tools/gen_schemas.py`` writes them
into ``spec/schemas/``, and the MCP adapter declares them as its tools'
``outputSchema``. ``msgspec.json.schema`` gets two corrections so that a schema
describes what the encoder really writes:

- a field with a default is still always written unless its Struct sets
  ``omit_defaults`` or the default is ``UNSET``, so such fields are listed as
  required;
- ``schema_version`` is pinned to the version (or versions) the code emits;

and the Structs' Python docstrings are dropped (each schema's reader is not a
Python reader).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import msgspec.inspect as mi

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _structs(t: mi.Type) -> Iterator[mi.StructType]:
    """Every Struct type reachable from ``t``."""
    seen: set[type] = set()
    stack = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, mi.StructType):
            if node.cls in seen:
                continue
            seen.add(node.cls)
            yield node
            stack.extend(field.type for field in node.fields)
        elif isinstance(node, mi.UnionType):
            stack.extend(node.types)
        elif isinstance(node, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
            stack.append(node.item_type)
        elif isinstance(node, mi.TupleType):
            stack.extend(node.item_types)
        elif isinstance(node, mi.DictType):
            stack.extend((node.key_type, node.value_type))


def json_schema(*types: Any, schema_version: int | Sequence[int] | None = None) -> dict[str, Any]:
    """The corrected schema of one type, or of any one of several (``anyOf``).

    Several untagged Structs cannot form a msgspec union, but a tool may still
    return one of them (``phux_run``: a result or a timeout body).
    """
    refs, defs = msgspec.json.schema_components(types)
    if schema_version is None:
        pin = None
    elif isinstance(schema_version, int):
        pin = {"const": schema_version, "type": "integer"}
    else:
        pin = {"enum": list(schema_version), "type": "integer"}
    for t in types:
        for struct in _structs(mi.type_info(t)):
            definition = defs.get(struct.cls.__name__)
            if definition is None:
                continue
            definition.pop("description", None)
            props: dict[str, Any] = definition.get("properties", {})
            if not struct.cls.__struct_config__.omit_defaults:
                # ...except a field left UNSET, which the encoder leaves out.
                unset = {
                    f.encode_name
                    for f in struct.fields
                    if not f.required
                    and f.default is msgspec.NODEFAULT
                    and f.default_factory is msgspec.NODEFAULT
                }
                required = list(definition.get("required", []))
                required += [name for name in props if name not in required and name not in unset]
                definition["required"] = required
            if pin is not None and "schema_version" in props:
                props["schema_version"] = dict(pin)
    schema: dict[str, Any] = dict(refs[0]) if len(refs) == 1 else {"anyOf": list(refs)}
    if defs:
        schema["$defs"] = defs
    return schema


def object_schema(*types: Any, schema_version: int | Sequence[int] | None = None) -> dict[str, Any]:
    """:func:`json_schema` with an object at its root, as MCP's ``outputSchema`` must be
    (through revision 2025-11-25): a lone Struct's definition is inlined at the
    root, a choice of several gets ``"type": "object"`` beside its ``anyOf``."""
    schema = json_schema(*types, schema_version=schema_version)
    ref = schema.pop("$ref", None)
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        # The definition stays in $defs too: a recursive Struct refers to itself there.
        schema = {**schema["$defs"][ref.removeprefix("#/$defs/")], **schema}
    schema.setdefault("type", "object")
    return {"$schema": DIALECT, **schema}

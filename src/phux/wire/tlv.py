"""Field-tagged TLV: the body encoding of every frame (spec/proto.md, "Body encoding").

A body is a sequence of fields, each ``field id (varint) | wire type (u8) |
length (varint) | value``. Field ids are the 1-based position of the field in
its record class (:mod:`phux.record`). The value encoding of each leaf
type is defined once here and used by every frame: this module compiles a
plan per record class from its type annotations and drives encoding and
decoding from that plan.
"""

from __future__ import annotations

import _thread
import enum
import types
from collections.abc import Callable

from phux.record import MISSING, Record, builder, fields
from phux.wire.errors import DecodeReason, WireError, enum_of

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from enum import IntEnum as _IntEnumBody
    from typing import Any, ClassVar, TypeVar

    # A leaf codec: encode(value) -> bytes; decode(buf, start, end) -> value.
    Encoder = Callable[[Any], bytes]
    Decoder = Callable[[bytes, int, int], Any]
else:
    _IntEnumBody = object  # enum_of makes the class an IntEnum (see phux.wire.errors)


@enum_of(enum.IntEnum)
class WireType(_IntEnumBody):
    UINT = 0
    SINT = 1
    BOOL = 2
    STRING = 3
    BYTES = 4
    STRUCT = 5
    LIST = 6
    UNION = 7


_MAX_WIRE_TYPE = max(WireType)


class IntSpec:
    """Base of the integer field types: ``U32`` annotates an int sent as 4 bytes, unsigned.

    They are annotations only (a field's value is a plain int), and to the
    type checker they are ``int``. At run time they are classes carrying the
    width, so that ``U32 | None`` and ``list[U32]`` evaluate without the
    typing module.
    """

    width: ClassVar[int] = 0
    """Bytes on the wire."""
    signed: ClassVar[bool] = False


if TYPE_CHECKING:
    U8 = int
    U16 = int
    U32 = int
    U64 = int
    I32 = int
    I64 = int
else:

    class U8(IntSpec):
        width = 1

    class U16(IntSpec):
        width = 2

    class U32(IntSpec):
        width = 4

    class U64(IntSpec):
        width = 8

    class I32(IntSpec):
        width, signed = 4, True

    class I64(IntSpec):
        width, signed = 8, True


class _Budget(_thread._local):
    left: int | None = None
    """Fields and list elements the decode in progress (in this thread) may still visit;
    None: not counted."""


_budget = _Budget()


class item_budget:  # lower case: used like a function, ``with item_budget(n):``
    """Within it, decoding (in this thread) visits at most ``limit`` fields and list
    elements in all; past that it fails with TOO_MANY_ITEMS. Decoding is linear in
    them, so this bounds the work one frame can cost a server."""

    __slots__ = ("_limit", "_saved")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._saved: int | None = None

    def __enter__(self) -> None:
        self._saved = _budget.left
        _budget.left = self._limit

    def __exit__(self, *exc: object) -> None:
        _budget.left = self._saved


def _spend(n: int) -> None:
    left = _budget.left
    if left is not None:
        left -= n
        if left < 0:
            raise WireError(DecodeReason.TOO_MANY_ITEMS, "over the limit of fields per frame")
        _budget.left = left


MAX_VARINT_BYTES = 10
_U64_MAX = (1 << 64) - 1


def encode_varint(value: int) -> bytes:
    if value < 0 or value > _U64_MAX:
        raise ValueError(f"varint out of range: {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Decode a minimal LEB128 varint at ``pos``; return (value, next position)."""
    if pos >= end:
        raise WireError(DecodeReason.TRUNCATED, "varint")
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError(DecodeReason.TRUNCATED, "varint")
        if pos - start >= MAX_VARINT_BYTES:
            raise WireError(DecodeReason.BAD_VARINT, "longer than 10 bytes")
        byte = buf[pos]
        result |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            break
        shift += 7
    if byte == 0:
        raise WireError(DecodeReason.NON_MINIMAL_VARINT, "trailing zero group")
    if result > _U64_MAX:
        raise WireError(DecodeReason.BAD_VARINT, "exceeds 64 bits")
    return result, pos


class Encoded(bytes):
    """A value already in its leaf's encoding: written as it is where the value goes.

    A server that answers the same large reply again and again (LIST_TERMINALS with
    a thousand terminals) keeps the parts that did not change encoded; a field or
    a list element given as ``Encoded`` is not encoded again. Nothing checks that
    the bytes are what the field's leaf would produce: whoever makes one does it
    with that leaf (``leaf_for(...).encode`` or :func:`encode_struct`).
    """

    __slots__ = ()


# The plans are plain slotted classes, not records: a process builds one per
# field it encodes or decodes (a one-shot verb, some sixty), and a record would
# pay the generic __init__ for each, then compile one. Nothing changes them.


class Leaf:
    """How one value type is encoded: its wire type and codec."""

    __slots__ = ("decode", "description", "encode", "wire_type")

    def __init__(
        self, *, wire_type: WireType, encode: Encoder, decode: Decoder, description: str
    ) -> None:
        self.wire_type = wire_type
        self.encode = encode
        self.decode = decode
        self.description = description


class FieldPlan:
    """One field of a record class, as the codec handles it."""

    __slots__ = ("default", "default_factory", "field_id", "leaf", "name", "optional", "required")

    def __init__(
        self,
        *,
        field_id: int,
        name: str,
        leaf: Leaf,
        optional: bool,
        required: bool,
        default: Any,
        default_factory: Callable[[], Any] | None,
    ) -> None:
        self.field_id = field_id
        self.name = name
        self.leaf = leaf
        self.optional = optional
        self.required = required
        self.default = default
        self.default_factory = default_factory


class StructPlan:
    """A record class's fields in field-id order, and how to build one from their values."""

    __slots__ = ("build", "by_id", "cls", "fields")

    def __init__(
        self,
        *,
        cls: type[Record],
        fields: tuple[FieldPlan, ...],
        by_id: dict[int, FieldPlan],
        build: Callable[[dict[str, Any]], Any],
    ) -> None:
        self.cls = cls
        self.fields = fields
        self.by_id = by_id
        self.build = build


_plans: dict[type, StructPlan] = {}


def spec_name(cls: type) -> str:
    """The spec's name of a frame or record class, for messages a peer reads.

    Frames (classes with a ``TYPE``) are named as spec/frames.md names them,
    ``MetaGet`` -> ``META_GET``; records keep their class name (``MetaEntry``).
    """
    name = cls.__name__
    if getattr(cls, "TYPE", None) is None:
        return name
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


_leaves: dict[type, Leaf] = {}


def _int_leaf(spec: type[IntSpec]) -> Leaf:
    width, signed = spec.width, spec.signed
    lo = -(1 << (8 * width - 1)) if signed else 0
    hi = (1 << (8 * width - 1)) - 1 if signed else (1 << (8 * width)) - 1

    def enc(value: Any) -> bytes:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{value!r} does not fit {'i' if signed else 'u'}{8 * width}")
        return value.to_bytes(width, "big", signed=signed)

    def dec(buf: bytes, start: int, end: int) -> int:
        if end - start != width:
            raise WireError(DecodeReason.BAD_INTEGER, f"expected {width} bytes, got {end - start}")
        return int.from_bytes(buf[start:end], "big", signed=signed)

    kind = WireType.SINT if signed else WireType.UINT
    return Leaf(
        wire_type=kind, encode=enc, decode=dec, description=f"{'i' if signed else 'u'}{8 * width}"
    )


def _enc_bool(value: Any) -> bytes:
    return b"\x01" if value else b"\x00"


def _dec_bool(buf: bytes, start: int, end: int) -> bool:
    if end - start != 1 or buf[start] > 1:
        raise WireError(DecodeReason.BAD_BOOL, "a bool is one byte, 0 or 1")
    return buf[start] == 1


def _enc_str(value: Any) -> bytes:
    return bytes(value.encode("utf-8"))


def _dec_str(buf: bytes, start: int, end: int) -> str:
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(DecodeReason.BAD_UTF8, str(exc)) from None


def _enc_bytes(value: Any) -> bytes:
    return bytes(value)


def _dec_bytes(buf: bytes, start: int, end: int) -> bytes:
    return bytes(buf[start:end])


_BOOL = Leaf(wire_type=WireType.BOOL, encode=_enc_bool, decode=_dec_bool, description="bool")
_STR = Leaf(wire_type=WireType.STRING, encode=_enc_str, decode=_dec_str, description="string")
_BYTES = Leaf(wire_type=WireType.BYTES, encode=_enc_bytes, decode=_dec_bytes, description="bytes")


def _struct_leaf(cls: type[Record]) -> Leaf:
    def enc(value: Any) -> bytes:
        return encode_struct(value)

    def dec(buf: bytes, start: int, end: int) -> Any:
        return decode_struct(cls, buf, start, end)

    return Leaf(
        wire_type=WireType.STRUCT, encode=enc, decode=dec, description=f"struct {cls.__name__}"
    )


def _list_leaf(item: Leaf) -> Leaf:
    def enc(value: Any) -> bytes:
        parts = [encode_varint(len(value))]
        for element in value:
            data = element if type(element) is Encoded else item.encode(element)
            parts.append(encode_varint(len(data)))
            parts.append(data)
        return b"".join(parts)

    def dec(buf: bytes, start: int, end: int) -> list[Any]:
        count, pos = decode_varint(buf, start, end)
        # Each element costs at least one length byte: a count that the
        # remaining bytes cannot hold is rejected before anything is built.
        if count > end - pos:
            raise WireError(DecodeReason.BAD_COUNT, f"count {count} exceeds {end - pos} bytes")
        if _budget.left is not None:
            _spend(count)
        out = []
        for _ in range(count):
            length, pos = decode_varint(buf, pos, end)
            if length > end - pos:
                raise WireError(DecodeReason.NESTED_OVERRUN, "list element")
            out.append(item.decode(buf, pos, pos + length))
            pos += length
        if pos != end:
            raise WireError(DecodeReason.BAD_COUNT, f"{end - pos} bytes after the last element")
        return out

    return Leaf(
        wire_type=WireType.LIST, encode=enc, decode=dec, description=f"list of {item.description}"
    )


def _union_leaf(members: tuple[type[Record], ...]) -> Leaf:
    by_tag: dict[int, type[Record]] = {}
    tag_of: dict[type, int] = {}
    for cls in members:
        tag = union_tag(cls)
        if tag is None:
            raise TypeError(f"union member {cls.__name__} needs an integer TAG")
        by_tag[tag] = cls
        tag_of[cls] = tag

    def enc(value: Any) -> bytes:
        return encode_varint(tag_of[type(value)]) + encode_struct(value)

    def dec(buf: bytes, start: int, end: int) -> Any:
        tag, pos = decode_varint(buf, start, end)
        cls = by_tag.get(tag)
        if cls is None:
            raise WireError(DecodeReason.UNKNOWN_UNION_TAG, f"tag {tag}")
        return decode_struct(cls, buf, pos, end)

    names = " | ".join(f"{c.__name__}={tag_of[c]}" for c in members)
    return Leaf(wire_type=WireType.UNION, encode=enc, decode=dec, description=f"union ({names})")


def union_tag(cls: type[Record]) -> int | None:
    """The tag a record class carries as a member of a union (its ``TAG``), if any."""
    tag = getattr(cls, "TAG", None)
    return tag if isinstance(tag, int) and not isinstance(tag, bool) else None


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Record)


def leaf_for(tp: Any) -> Leaf:
    """The leaf codec for a (non-optional) annotated type."""
    if not isinstance(tp, type):
        # Not shared: unions compare equal in any order (a union's description
        # lists its members in order), and list leaves are cheap to make.
        return _make_leaf(tp)
    leaf = _leaves.get(tp)
    if leaf is None:  # one per integer width, scalar and record, not one per field
        leaf = _leaves[tp] = _make_leaf(tp)
    return leaf


def _make_leaf(tp: Any) -> Leaf:
    if isinstance(tp, type) and issubclass(tp, IntSpec):
        return _int_leaf(tp)
    if tp is bool:
        return _BOOL
    if tp is str:
        return _STR
    if tp is bytes:
        return _BYTES
    if tp is int:
        raise TypeError("bare int: annotate integers with a width (U8, U16, U32, U64, I32, I64)")
    if isinstance(tp, types.GenericAlias) and tp.__origin__ is list:
        (item,) = tp.__args__
        return _list_leaf(leaf_for(item))
    if isinstance(tp, types.UnionType):
        members = tp.__args__
        if all(_is_struct(m) for m in members):
            return _union_leaf(members)
    if _is_struct(tp):
        return _struct_leaf(tp)
    raise TypeError(f"no wire encoding for {tp!r}")


def _split_optional(tp: Any) -> tuple[Any, bool]:
    if isinstance(tp, types.UnionType) and type(None) in tp.__args__:
        rest = [a for a in tp.__args__ if a is not type(None)]
        inner = rest.pop(0)
        for other in rest:
            inner = inner | other
        return inner, True
    return tp, False


def plan_for(cls: type[Record]) -> StructPlan:
    plan = _plans.get(cls)
    if plan is not None:
        return plan
    planned = []
    for index, f in enumerate(fields(cls), start=1):
        inner, optional = _split_optional(f.annotation)
        has_default = f.default is not MISSING
        if optional and not (has_default and f.default is None):
            raise TypeError(f"{cls.__name__}.{f.name}: optional fields must default to None")
        planned.append(
            FieldPlan(
                field_id=index,
                name=f.name,
                leaf=leaf_for(inner),
                optional=optional,
                required=f.required,
                default=f.default if has_default else None,
                default_factory=f.factory,
            )
        )
    plan = StructPlan(
        cls=cls,
        fields=tuple(planned),
        by_id={p.field_id: p for p in planned},
        build=builder(cls),
    )
    _plans[cls] = plan
    return plan


def encode_struct(value: Record) -> bytes:
    """Encode a record as a TLV body: every non-None field, in field-id order."""
    plan = plan_for(type(value))
    parts: list[bytes] = []
    for f in plan.fields:
        field_value = getattr(value, f.name)
        if field_value is None:
            if f.optional:
                continue
            raise ValueError(f"{plan.cls.__name__}.{f.name} is None but not optional")
        data = field_value if type(field_value) is Encoded else f.leaf.encode(field_value)
        if f.field_id < 0x80:
            parts.append(bytes((f.field_id, f.leaf.wire_type)))
        else:
            parts.append(encode_varint(f.field_id) + bytes((f.leaf.wire_type,)))
        parts.append(encode_varint(len(data)))
        parts.append(data)
    return b"".join(parts)


if TYPE_CHECKING:
    S = TypeVar("S", bound=Record)


def decode_struct(cls: type[S], buf: bytes, start: int, end: int) -> S:
    """Decode a TLV body held in ``buf[start:end]`` into ``cls``."""
    plan = plan_for(cls)
    values: dict[str, Any] = {}
    pos = start
    by_id = plan.by_id
    counted = _budget.left is not None
    while pos < end:
        if counted:
            _spend(1)
        field_id, pos = decode_varint(buf, pos, end)
        if pos >= end:
            raise WireError(DecodeReason.TRUNCATED, "wire type")
        wire_type = buf[pos]
        pos += 1
        if wire_type > _MAX_WIRE_TYPE:
            raise WireError(DecodeReason.UNKNOWN_WIRE_TYPE, f"field {field_id}: {wire_type}")
        length, pos = decode_varint(buf, pos, end)
        if length > end - pos:
            raise WireError(DecodeReason.NESTED_OVERRUN, f"field {field_id} of {spec_name(cls)}")
        f = by_id.get(field_id)
        if f is not None:
            if f.name in values:
                raise WireError(DecodeReason.DUPLICATE_FIELD, f"{spec_name(cls)}.{f.name}")
            if wire_type != f.leaf.wire_type:
                raise WireError(
                    DecodeReason.WIRE_TYPE_MISMATCH,
                    f"{spec_name(cls)}.{f.name}: {wire_type} for {f.leaf.wire_type.name}",
                )
            values[f.name] = f.leaf.decode(buf, pos, pos + length)
        pos += length
    try:
        built: S = plan.build(values)
    except KeyError as exc:
        raise WireError(DecodeReason.MISSING_FIELD, f"{spec_name(cls)}.{exc.args[0]}") from None
    return built

"""Hypothesis strategies for every frame, derived from the record definitions."""

from __future__ import annotations

import types
import typing
from typing import Any

from hypothesis import strategies as st

from phux.record import Record, fields
from phux.wire.frames import Frame
from phux.wire.tlv import IntSpec

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)


def _for_type(tp: Any) -> st.SearchStrategy[Any]:
    if isinstance(tp, type) and issubclass(tp, IntSpec):
        bits = 8 * tp.width
        if tp.signed:
            return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return st.integers(0, (1 << bits) - 1)
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        members = [a for a in args if a is not type(None)]
        inner = st.one_of(*[_for_type(m) for m in members])
        return st.none() | inner if type(None) in args else inner
    if origin is list:
        (item,) = typing.get_args(tp)
        return st.lists(_for_type(item), max_size=4)
    if tp is bool:
        return st.booleans()
    if tp is str:
        return _TEXT
    if tp is bytes:
        return st.binary(max_size=64)
    if isinstance(tp, type) and issubclass(tp, Record):
        return struct_strategy(tp)
    raise TypeError(f"no strategy for {tp!r}")


def struct_strategy(cls: type[Record]) -> st.SearchStrategy[Any]:
    kwargs = {f.name: _for_type(f.annotation) for f in fields(cls)}
    return st.builds(cls, **kwargs)


def frame_strategy(cls: type[Frame]) -> st.SearchStrategy[Frame]:
    return struct_strategy(cls)

"""The wire's enums are declared with ``enum_of``: the classes a class statement makes."""

from __future__ import annotations

import enum
import pickle
from typing import Any

import pytest

from phux.wire import errors, frames, tlv
from phux.wire.errors import _rebuild_enum, enum_of

WIRE_ENUMS: list[Any] = [
    errors.ErrorCode,
    errors.DetachReason,
    errors.DecodeReason,
    frames.Role,
    frames.Signal,
    frames.TombstoneReason,
    tlv.WireType,
]


def _body(made: Any) -> type:
    """The plain class the declaration of ``made`` starts from."""
    namespace = {
        "__module__": made.__module__,
        "__qualname__": made.__qualname__,
        "__doc__": made.__doc__,
        **{member.name: member.value for member in made},
    }
    if made is errors.DecodeReason:
        namespace["code"] = vars(made)["code"]
    return type(made.__name__, (), namespace)


def _describe(made: Any) -> list[tuple[Any, ...]]:
    return [
        (m.name, m.value, type(m.value), repr(m), str(m), format(m), hash(m), made(m.value))
        for m in made
    ]


@pytest.mark.parametrize("made", WIRE_ENUMS, ids=lambda cls: cls.__name__)
def test_enum_of_makes_what_a_class_statement_makes(made: Any) -> None:
    base = enum.IntEnum if issubclass(made, int) else enum.Enum
    stated = _rebuild_enum(_body(made), base)
    assert type(made) is type(stated) and made.__mro__[1:] == stated.__mro__[1:]
    assert (made.__name__, made.__qualname__, made.__module__, made.__doc__) == (
        stated.__name__,
        stated.__qualname__,
        stated.__module__,
        stated.__doc__,
    )
    assert list(made.__members__) == list(stated.__members__)
    assert [d[:-1] for d in _describe(made)] == [d[:-1] for d in _describe(stated)]
    for member in made:
        assert made(member.value) is member and made[member.name] is member
        assert getattr(made, member.name) is member
        assert pickle.loads(pickle.dumps(member)) is member
        assert isinstance(member, made) and isinstance(member, base)
    with pytest.raises(ValueError):
        made(12345)


def test_decode_reasons_keep_their_code_property() -> None:
    codes = {reason.code for reason in errors.DecodeReason}
    assert codes == {
        errors.ErrorCode.UNKNOWN_MESSAGE_TYPE,
        errors.ErrorCode.FRAME_TOO_LARGE,
        errors.ErrorCode.MALFORMED_MESSAGE,
    }
    assert errors.DecodeReason.UNKNOWN_FRAME_TYPE.code is errors.ErrorCode.UNKNOWN_MESSAGE_TYPE


def test_enum_of_without_the_standard_librarys_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(enum, "_simple_enum")
    made: Any = enum_of(enum.IntEnum)(_body(frames.Signal))
    assert type(made) is enum.EnumType and issubclass(made, enum.IntEnum)
    assert [(m.name, m.value) for m in made] == [(m.name, m.value) for m in frames.Signal]

"""phux.record: the msgspec-free value classes of the wire, the engine and the client."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from typing import ClassVar

import pytest

from phux import record
from phux.record import MISSING, Record, builder, field, fields
from phux.wire import frames
from phux.wire.frames import ALL_FRAMES, Exited, Output, TerminalInfo
from phux.wire.tlv import U16


class Point(Record):
    """A record with every kind of field."""

    KIND: ClassVar[str] = "point"
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    label: str | None = None


class Point3(Point):
    z: U16 = 1


def test_defaults_and_factories() -> None:
    p = Point(x=1)
    assert (p.x, p.y, p.tags, p.label) == (1, 0, [], None)
    assert Point(x=1).tags is not p.tags  # a fresh list per record
    assert Point(x=1, y=2, tags=["a"], label="l").tags == ["a"]


def test_keyword_only_and_required() -> None:
    with pytest.raises(TypeError):
        Point(1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'w'"):
        Point(x=1, w=2)  # type: ignore[call-arg]


def test_immutable() -> None:
    p = Point(x=1)
    with pytest.raises(AttributeError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.x  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.other = 1  # type: ignore[attr-defined]
    assert not hasattr(p, "__dict__")
    assert p.x == 1


def test_equality_hash_repr() -> None:
    assert Point(x=1) == Point(x=1, y=0)
    assert Point(x=1) != Point(x=2)
    assert Point(x=1) != Point3(x=1)  # same fields so far, different class
    assert Point(x=1) != (1, 0, [], None)
    assert hash(Exited(code=2)) == hash(Exited(code=2))
    assert len({Exited(code=2), Exited(code=2), Exited(code=4)}) == 2
    with pytest.raises(TypeError):
        hash(Point(x=1))  # a list field is unhashable, like a tuple holding one
    assert repr(Point(x=1, label="a")) == "Point(x=1, y=0, tags=[], label='a')"
    assert repr(Exited(code=-1)) == "Exited(code=-1)"


def test_fields_lists_evaluated_annotations_and_skips_class_vars() -> None:
    listed = fields(Point3)
    assert [f.name for f in listed] == ["x", "y", "tags", "label", "z"]
    x, y, tags, label, z = listed
    assert (x.annotation, x.default, x.factory, x.required) == (int, MISSING, None, True)
    assert (y.default, y.required) == (0, False)
    assert (tags.annotation, tags.default, tags.factory, tags.required) == (
        list[str],
        MISSING,
        list,
        False,
    )
    assert label.annotation == str | None
    assert z.annotation is U16
    assert Point3.KIND == "point"
    assert fields(Point3) is listed  # evaluated once


@pytest.mark.parametrize(
    "annotation",
    [
        "int",
        " str ",
        "None",
        "U16 | None",
        "int|str|None",
        "list[str]",
        "list[U16 | None]",
        "dict[str, list[int]]",
        "tuple[int, ...]",
        "list['Point']",
        "record.Record | None",
        "ClassVar[str]",
        "(int | None)",
        "Point | Point3 | None",
    ],
)
def test_annotations_evaluate_as_eval_does(annotation: str) -> None:
    expected = eval(annotation, globals())
    assert record._evaluate(annotation, __name__) == expected


@pytest.mark.parametrize("annotation", ["Nowhere", "list[Nowhere]", "int | 3", "list[int"])
def test_bad_annotations_raise_what_eval_raises(annotation: str) -> None:
    with pytest.raises(Exception) as expected:
        eval(annotation, globals())
    with pytest.raises(type(expected.value)):
        record._evaluate(annotation, __name__)


def test_every_catalog_annotation_evaluates_as_eval_does_without_eval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    classes = [cls for cls in vars(frames).values() if isinstance(cls, type)]
    specs = [s for c in [*classes, Point3] if issubclass(c, Record) for s in record._specs(c)]
    expected = [eval(s.annotation, sys.modules[s.module].__dict__) for s in specs]
    # Compiling annotations is the cost _evaluate exists to avoid: none of these needs it.
    monkeypatch.setattr(record, "eval", None, raising=False)
    assert [record._evaluate(s.annotation, s.module) for s in specs] == expected


def test_builder_is_construction_from_a_dict() -> None:
    build = builder(Point3)
    built = build({"x": 1, "label": "l", "unknown": 5})
    assert built == Point3(x=1, label="l")
    assert build({"x": 1}).tags is not build({"x": 1}).tags
    with pytest.raises(KeyError, match="x"):
        build({"y": 1})
    with pytest.raises(AttributeError):
        built.x = 2  # type: ignore[misc]


def test_a_field_cannot_be_declared_twice() -> None:
    with pytest.raises(TypeError, match="already a field"):

        class Bad(Point):
            x: int = 3


def test_copy_and_pickle() -> None:
    info = TerminalInfo(terminal=1, pid=2, cols=3, rows=4, alive=False, exit=Exited(code=1))
    assert pickle.loads(pickle.dumps(info)) == info
    assert copy.deepcopy(info) == info
    assert copy.copy(Output(terminal=1, seq=2, data=b"x")) == Output(terminal=1, seq=2, data=b"x")


def test_every_frame_is_a_record() -> None:
    assert all(issubclass(cls, Record) for cls in ALL_FRAMES)


def test_the_frame_catalog_does_not_import_msgspec() -> None:
    # The one-shot CLI verbs talk to the server through these modules only.
    code = (
        "import sys, phux.wire.frames, phux.wire.framing, phux.wire.handshake; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'msgspec'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("hot", [False, True], ids=["generic", "generated"])
def test_generic_and_generated_code_behave_alike(hot: bool) -> None:
    """A class runs generic loops until it has built _COMPILE_AFTER instances, then
    generated code: both must construct, default, refuse and build identically."""

    class Pair(Record):
        a: int
        b: int = 2
        c: list[int] = field(default_factory=list)

    build = builder(Pair)
    if hot:
        for i in range(record._COMPILE_AFTER + 1):
            assert Pair(a=i).a == i
            assert build({"a": i}).a == i
    made = Pair(a=1)
    assert (made.a, made.b, made.c) == (1, 2, [])
    assert Pair(a=1).c is not made.c
    assert Pair(a=1, b=3, c=[4]) == build({"a": 1, "b": 3, "c": [4], "other": 0})
    assert "__init__" in vars(Pair)
    with pytest.raises(TypeError):
        Pair(1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="'a'"):
        Pair()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'z'"):
        Pair(a=1, z=2)  # type: ignore[call-arg]
    with pytest.raises(KeyError, match="a"):
        build({"b": 1})
    generated = Pair.__init__ is not record._init and (
        Pair.__init__.__code__.co_varnames[:1] == ("self",)
        and "args" not in Pair.__init__.__code__.co_varnames
    )
    assert generated == hot

"""Records: frozen, keyword-only, slotted value classes without msgspec.

The wire's frame catalog, the engine's events and the client's helper types
are declared with them; this is a leaf module every layer may import.

A record class lists its fields as annotations, in order; a field with a value
has that default, ``field(default_factory=...)`` builds a fresh default per
instance, and ``ClassVar`` annotations are class constants, not fields::

    class Resized(Record):
        TYPE: ClassVar[int] = 0x92
        terminal: U32
        cols: U16 = 80
        metadata: list[MetaEntry] = field(default_factory=list)

Instances take keyword arguments only, cannot be changed after construction,
compare equal when they are of the same class with equal fields, hash and
repr by their fields. :func:`fields` lists a class's fields with their
evaluated annotations, for the TLV codec and the spec tools.

They are not msgspec Structs so that a process that only talks to the
server, like ``phux send-keys``, or only reads a screen, like
``phux snapshot``, does not import msgspec (~17 ms,
more with typing_extensions installed). Construction stays cheap where it is
hot: a class that has built :data:`_COMPILE_AFTER` instances gets an
``__init__`` (and a decoder's builder) generated for its fields that stores them
through the slot descriptors, because the server builds an OUTPUT frame per
PTY read. Until then a generic loop does the same; compiling costs ~100 us a
function, and a one-shot CLI process, which builds a handful of each of a
dozen classes, would spend milliseconds compiling code it runs once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from operator import attrgetter

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> Callable[[type], type]:
        """Only the type checker reads this decorator."""
        return lambda cls: cls


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The default of a field that has none (it must be passed)."""


class _Factory:
    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is ``default_factory()``, called for each new record."""
    # Stands in for the value in the class body; the metaclass takes it out.
    return _Factory(default_factory)  # type: ignore[return-value]


class Field:
    """One field of a record class, as :func:`fields` reports it."""

    __slots__ = ("annotation", "default", "factory", "name")

    def __init__(
        self, name: str, annotation: Any, default: Any, factory: Callable[[], Any] | None
    ) -> None:
        self.name = name
        self.annotation = annotation
        """The evaluated annotation (``Annotated[int, IntSpec(...)]``, ``str | None``...)."""
        self.default = default
        """The default value, or :data:`MISSING` (no default, or a factory)."""
        self.factory = factory

    @property
    def required(self) -> bool:
        return self.default is MISSING and self.factory is None

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, annotation={self.annotation!r}, "
            f"default={self.default!r}, factory={self.factory!r})"
        )


class _Spec:
    """A field as declared: its annotation still unevaluated, and where to evaluate it."""

    __slots__ = ("annotation", "default", "factory", "module", "name")

    def __init__(
        self,
        name: str,
        annotation: Any,
        default: Any,
        factory: Callable[[], Any] | None,
        module: str,
    ) -> None:
        self.name = name
        self.annotation = annotation
        self.default = default
        self.factory = factory
        self.module = module


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        text = annotation.strip()
        for prefix in ("ClassVar", "typing.ClassVar"):
            if text == prefix or text.startswith(prefix + "["):
                return True
        return False
    # An evaluated ClassVar comes from typing, which its module has imported then.
    typing = sys.modules.get("typing")
    class_var = getattr(typing, "ClassVar", None)
    return class_var is not None and (
        annotation is class_var or getattr(annotation, "__origin__", None) is class_var
    )


def _compile(
    cls: type, name: str, params: str, body: list[str], scope: dict[str, Any]
) -> Callable[..., Any]:
    """Compile ``def name(params): body`` with ``scope`` as closure variables.

    Closure variables are read faster than globals, and every value the body
    needs (slot setters, defaults, factories) is one.
    """
    lines = [f"def __make__({', '.join(scope)}):", f"    def {name}({params}):"]
    lines += [f"        {line}" for line in body or ["pass"]]
    lines.append(f"    return {name}")
    namespace: dict[str, Any] = {}
    exec("\n".join(lines), {}, namespace)
    function: Callable[..., Any] = namespace["__make__"](**scope)
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    return function


def _setters(cls: type, specs: tuple[_Spec, ...]) -> dict[str, Any]:
    # Each slot's own setter: a frozen record refuses __setattr__, and calling
    # the descriptor is also faster than object.__setattr__.
    scope: dict[str, Any] = {"MISSING": MISSING}
    for i, spec in enumerate(specs):
        scope[f"_set{i}"] = getattr(cls, spec.name).__set__
        if spec.factory is not None:
            scope[f"_factory{i}"] = spec.factory
        elif spec.default is not MISSING:
            scope[f"_default{i}"] = spec.default
    return scope


def _make_init(cls: type, specs: tuple[_Spec, ...]) -> Callable[..., None]:
    scope = _setters(cls, specs)
    params: list[str] = []
    body: list[str] = []
    for i, spec in enumerate(specs):
        name = spec.name
        if spec.factory is not None:
            params.append(f"{name}=MISSING")
            body.append(f"_set{i}(self, _factory{i}() if {name} is MISSING else {name})")
        else:
            params.append(name if spec.default is MISSING else f"{name}=_default{i}")
            body.append(f"_set{i}(self, {name})")
    signature = f"self, *, {', '.join(params)}" if params else "self"
    return _compile(cls, "__init__", signature, body, scope)


def _make_builder(cls: type, specs: tuple[_Spec, ...]) -> Callable[[dict[str, Any]], Any]:
    scope = _setters(cls, specs)
    scope["_new"] = object.__new__
    scope["_cls"] = cls
    body = ["self = _new(_cls)", "get = values.get"]
    for i, spec in enumerate(specs):
        key = repr(spec.name)
        if spec.factory is not None:
            body.append(f"value = get({key}, MISSING)")
            body.append(f"_set{i}(self, _factory{i}() if value is MISSING else value)")
        elif spec.default is MISSING:
            body.append(f"_set{i}(self, values[{key}])")
        else:
            body.append(f"_set{i}(self, get({key}, _default{i}))")
    body.append("return self")
    return _compile(cls, "_build", "values", body, scope)


_COMPILE_AFTER = 32
"""Instances a class builds through the generic loops before its code is generated."""


def _slot_plan(
    cls: type, specs: tuple[_Spec, ...]
) -> tuple[tuple[str, Callable[[Any, Any], None], Any, Callable[[], Any] | None], ...]:
    return tuple(
        (spec.name, getattr(cls, spec.name).__set__, spec.default, spec.factory) for spec in specs
    )


def _fill(cls: type, plan: tuple[Any, ...], self: Any, values: dict[str, Any], init: bool) -> None:
    """Store ``values`` (plus defaults) in ``self``'s slots, as the generated code would."""
    for name, set_slot, default, factory in plan:
        value = values.get(name, MISSING)
        if value is MISSING:
            if factory is not None:
                value = factory()
            elif default is not MISSING:
                value = default
            elif init:
                raise TypeError(f"{cls.__name__}.__init__() missing keyword argument: {name!r}")
            else:
                raise KeyError(name)
        set_slot(self, value)


def _deferred_init(cls: type, specs: tuple[_Spec, ...]) -> Callable[..., None]:
    """An ``__init__`` that loops over the fields until the class proves hot, then
    generates the real one (see the module docstring)."""
    plan: tuple[Any, ...] = ()
    names = frozenset(spec.name for spec in specs)
    built = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal plan, built
        built += 1
        if built > _COMPILE_AFTER:
            init = _make_init(cls, specs)
            type.__setattr__(cls, "__init__", init)
            init(self, *args, **kwargs)
            return
        if args:
            raise TypeError(f"{cls.__name__}.__init__() takes keyword arguments only")
        if not names.issuperset(kwargs):
            unknown = sorted(set(kwargs) - names)[0]
            raise TypeError(
                f"{cls.__name__}.__init__() got an unexpected keyword argument {unknown!r}"
            )
        if not plan:
            plan = _slot_plan(cls, specs)
        _fill(cls, plan, self, kwargs, init=True)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _deferred_builder(cls: type, specs: tuple[_Spec, ...]) -> Callable[[dict[str, Any]], Any]:
    """The decoder's builder for ``cls``: a loop until the class proves hot, then generated."""
    plan = _slot_plan(cls, specs)
    new = object.__new__
    built = 0
    fast: Callable[[dict[str, Any]], Any] | None = None  # callers (TLV plans) keep this function

    def build(values: dict[str, Any]) -> Any:
        nonlocal built, fast
        if fast is not None:
            return fast(values)
        built += 1
        if built > _COMPILE_AFTER:
            fast = _builders[cls] = _make_builder(cls, specs)
            return fast(values)
        self: Any = new(cls)
        _fill(cls, plan, self, values, init=False)
        return self

    return build


def _rebuild(cls: type[R], values: tuple[Any, ...]) -> R:
    names = (spec.name for spec in cls.__record_specs__)
    return cls(**dict(zip(names, values, strict=True)))


class _RecordMeta(type):
    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> _RecordMeta:
        inherited: tuple[_Spec, ...] = ()
        for base in bases:
            inherited += getattr(base, "__record_specs__", ())
        taken = {spec.name for spec in inherited}
        module = namespace.get("__module__", "")
        own: list[_Spec] = []
        for field_name, annotation in namespace.get("__annotations__", {}).items():
            if _is_classvar(annotation):
                continue
            if field_name in taken:
                raise TypeError(f"{name}.{field_name} is already a field of a base record")
            value = namespace.pop(field_name, MISSING)
            factory = value.factory if isinstance(value, _Factory) else None
            default = MISSING if factory is not None else value
            own.append(_Spec(field_name, annotation, default, factory, module))
        namespace["__slots__"] = tuple(spec.name for spec in own)
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        specs = inherited + tuple(own)
        cls.__record_specs__ = specs  # type: ignore[attr-defined]
        names = tuple(spec.name for spec in specs)
        if names:
            get = attrgetter(*names)
            key: Callable[[Any], tuple[Any, ...]] = (
                (lambda self: (get(self),)) if len(names) == 1 else get
            )
        else:
            key = lambda self: ()  # noqa: E731
        cls._record_key = staticmethod(key)  # type: ignore[attr-defined]
        if "__init__" not in namespace:
            cls.__init__ = _deferred_init(cls, specs)  # type: ignore[misc]
        return cls


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Record(metaclass=_RecordMeta):
    """Base of every record class (see the module docstring)."""

    __slots__ = ()
    __record_specs__: ClassVar[tuple[_Spec, ...]]
    _record_key: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        key = type(self)._record_key
        return bool(key(self) == key(other))

    def __hash__(self) -> int:
        return hash(type(self)._record_key(self))

    def __repr__(self) -> str:
        values = type(self)._record_key(self)
        text = ", ".join(
            f"{spec.name}={value!r}"
            for spec, value in zip(self.__record_specs__, values, strict=True)
        )
        return f"{type(self).__name__}({text})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), type(self)._record_key(self)))


if TYPE_CHECKING:
    R = TypeVar("R", bound=Record)

_resolved: dict[type, tuple[Field, ...]] = {}
_builders: dict[type, Callable[[dict[str, Any]], Any]] = {}
_evaluated: dict[tuple[str, str], Any] = {}


def builder(cls: type[R]) -> Callable[[dict[str, Any]], R]:
    """A function that builds a ``cls`` from a dict of field values.

    What ``cls(**values)`` does, minus the argument parsing (the TLV decoder
    builds every frame it reads this way): absent fields take their defaults,
    an absent required field raises KeyError naming it, other keys are ignored.
    """
    build = _builders.get(cls)
    if build is None:
        build = _builders[cls] = _deferred_builder(cls, cls.__record_specs__)
    return build


def fields(cls: type[Record]) -> tuple[Field, ...]:
    """The fields of a record class, in order, with their annotations evaluated.

    A string annotation (``from __future__ import annotations``) is evaluated in
    the module of the class that declares the field, once per class.
    """
    done = _resolved.get(cls)
    if done is not None:
        return done
    out = []
    for spec in cls.__record_specs__:
        annotation = spec.annotation
        if isinstance(annotation, str):
            key = (spec.module, annotation)
            evaluated = _evaluated.get(key, MISSING)
            if evaluated is MISSING:  # the catalog repeats a few dozen annotations
                evaluated = _evaluated[key] = eval(annotation, sys.modules[spec.module].__dict__)
            annotation = evaluated
        out.append(Field(spec.name, annotation, spec.default, spec.factory))
    done = tuple(out)
    _resolved[cls] = done
    return done

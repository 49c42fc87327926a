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

For the same process, declaring a class does only what the class statement
needs (its slots, its defaults taken out of the namespace): the frame catalog
declares some fifty classes and a one-shot verb uses a dozen, so the field
specs, the construction plans and the evaluated annotations are made the first
time a class is constructed, decoded or asked for its :func:`fields`.
"""

from __future__ import annotations

import builtins
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


# ---------------------------------------------------------------- annotations


_BUILTINS: dict[str, Any] = vars(builtins)


class _Unsupported(Exception):
    """An annotation :func:`_evaluate` leaves to ``eval``."""


def _name(token: str, namespace: dict[str, Any]) -> Any:
    """What the (dotted) name ``token`` means in ``namespace``, as ``eval`` would find it."""
    head, *rest = token.split(".")
    if not head.isidentifier():
        raise _Unsupported
    if head in namespace:
        value = namespace[head]
    elif head == "None":
        value = None
    elif head in _BUILTINS:
        value = _BUILTINS[head]
    else:
        raise _Unsupported  # eval raises the NameError
    for part in rest:
        if not part.isidentifier():
            raise _Unsupported
        value = getattr(value, part)
    return value


def _operand(tokens: list[str], pos: int, namespace: dict[str, Any]) -> tuple[Any, int]:
    """``name`` or ``name[args]...`` at ``tokens[pos]``; return it and the next position."""
    value = _name(tokens[pos], namespace)
    pos += 1
    while pos < len(tokens) and tokens[pos] == "[":
        args = []
        while True:
            arg, pos = _union(tokens, pos + 1, namespace)
            args.append(arg)
            if tokens[pos] == "]":
                break
            if tokens[pos] != ",":
                raise _Unsupported
        value = value[args[0] if len(args) == 1 else tuple(args)]
        pos += 1
    return value, pos


def _union(tokens: list[str], pos: int, namespace: dict[str, Any]) -> tuple[Any, int]:
    """``operand | operand | ...`` at ``tokens[pos]``, combined left to right as Python does."""
    value, pos = _operand(tokens, pos, namespace)
    while pos < len(tokens) and tokens[pos] == "|":
        other, pos = _operand(tokens, pos + 1, namespace)
        value = value | other
    return value, pos


def _evaluate(annotation: str, module: str) -> Any:
    """``eval(annotation)`` in ``module``'s globals, for the annotations records use.

    Names, dotted names, subscripts and ``|`` are looked up and combined here,
    the same operations in the same order as ``eval``, several times faster
    than compiling each distinct annotation, which was a sizeable part of a
    one-shot verb's first frames. Anything else (literals, calls,
    parentheses) goes to ``eval``.
    """
    namespace = sys.modules[module].__dict__
    if annotation in namespace:  # a bare name, the most common annotation
        return namespace[annotation]
    tokens = (
        annotation.replace("[", " [ ")
        .replace("]", " ] ")
        .replace(",", " , ")
        .replace("|", " | ")
        .split()
    )
    try:
        value, end = _union(tokens, 0, namespace)
        if end == len(tokens):
            return value
    except Exception:  # eval below gives the real answer, or raises the real error
        pass
    return eval(annotation, namespace)


# ---------------------------------------------------------------- construction


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


_slot_plans: dict[type, tuple[Any, ...]] = {}


def _slot_plan(
    cls: type,
) -> tuple[tuple[str, Callable[[Any, Any], None], Any, Callable[[], Any] | None], ...]:
    """Per field: name, slot setter, default, factory (what the generic loops run on)."""
    plan = _slot_plans.get(cls)
    if plan is None:  # one per class, shared by its __init__ and its decoder's builder
        plan = _slot_plans[cls] = tuple(
            (spec.name, getattr(cls, spec.name).__set__, spec.default, spec.factory)
            for spec in _specs(cls)
        )
    return plan


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


class _Generic:
    """A class constructing through the generic ``__init__`` loop, until it proves hot."""

    __slots__ = ("built", "names", "plan")

    def __init__(self, cls: type[Record]) -> None:
        self.names = frozenset(cls.__record_fields__)
        self.plan = _slot_plan(cls)
        self.built = 0


_generic: dict[type, _Generic] = {}


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    """The ``__init__`` of every record class until it has built :data:`_COMPILE_AFTER`
    instances; then the class gets one generated for its fields (see the module
    docstring). One shared function: a class statement creates no code."""
    cls = type(self)
    state = _generic.get(cls)
    if state is None:
        state = _generic[cls] = _Generic(cls)
    state.built += 1
    if state.built > _COMPILE_AFTER:
        init = _make_init(cls, _specs(cls))
        type.__setattr__(cls, "__init__", init)
        init(self, *args, **kwargs)
        return
    if args:
        raise TypeError(f"{cls.__name__}.__init__() takes keyword arguments only")
    if not state.names.issuperset(kwargs):
        unknown = sorted(set(kwargs) - state.names)[0]
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {unknown!r}")
    _fill(cls, state.plan, self, kwargs, init=True)


def _deferred_builder(cls: type, specs: tuple[_Spec, ...]) -> Callable[[dict[str, Any]], Any]:
    """The decoder's builder for ``cls``: a loop until the class proves hot, then generated."""
    plan = _slot_plan(cls)
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
    return cls(**dict(zip(cls.__record_fields__, values, strict=True)))


def _no_key(self: Any) -> tuple[Any, ...]:
    return ()


_keys: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _key(cls: type[Record]) -> Callable[[Any], tuple[Any, ...]]:
    """A function from a ``cls`` record to the tuple of its field values (eq, hash, repr)."""
    key = _keys.get(cls)
    if key is None:
        # Made on first use, not by the class statement: an attrgetter of a few
        # names costs as much as a fifth of a whole record class statement.
        names = cls.__record_fields__
        if len(names) > 1:
            key = attrgetter(*names)
        elif names:
            get = attrgetter(names[0])
            key = lambda self: (get(self),)  # noqa: E731
        else:
            key = _no_key
        _keys[cls] = key
    return key


# ---------------------------------------------------------------- declaration


_declared: dict[type, tuple[dict[str, Any], dict[str, Any]]] = {}
"""Each record class's own annotations and field values (defaults, ``field()``s)."""

_specs_of: dict[type, tuple[_Spec, ...]] = {}


def _specs(cls: type) -> tuple[_Spec, ...]:
    """The fields of ``cls``, its bases' first, in declaration order."""
    specs = _specs_of.get(cls)
    if specs is not None:
        return specs
    inherited: tuple[_Spec, ...] = ()
    for base in cls.__bases__:
        if isinstance(base, _RecordMeta):
            inherited += _specs(base)
    own = []
    annotations, values = _declared[cls]
    for name in cls.__dict__["__slots__"]:
        value = values.get(name, MISSING)
        factory = value.factory if isinstance(value, _Factory) else None
        default = MISSING if factory is not None else value
        own.append(_Spec(name, annotations[name], default, factory, cls.__module__))
    specs = _specs_of[cls] = inherited + tuple(own)
    return specs


class _RecordMeta(type):
    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> _RecordMeta:
        inherited: tuple[str, ...] = ()
        for base in bases:
            inherited += getattr(base, "__record_fields__", ())
        own: list[str] = []
        values: dict[str, Any] = {}
        annotations: dict[str, Any] = namespace.get("__annotations__", {})
        for field_name, annotation in annotations.items():
            # The substring test spares nearly every field a call.
            if (type(annotation) is not str or "ClassVar" in annotation) and _is_classvar(
                annotation
            ):
                continue
            if field_name in inherited:
                raise TypeError(f"{name}.{field_name} is already a field of a base record")
            own.append(field_name)
            if field_name in namespace:  # a slot cannot share its name with a class attribute
                values[field_name] = namespace.pop(field_name)
        names = inherited + tuple(own)
        namespace["__slots__"] = tuple(own)
        namespace["__record_fields__"] = names
        # In the namespace, not set on the class afterwards: setting __init__ on
        # a class costs more than the whole class statement.
        if "__init__" not in namespace:
            namespace["__init__"] = _init
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        _declared[cls] = (annotations, values)
        return cls


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Record(metaclass=_RecordMeta):
    """Base of every record class (see the module docstring)."""

    __slots__ = ()
    __record_fields__: ClassVar[tuple[str, ...]]
    """The names of the class's fields, in order (a base's first)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        key = _key(type(self))
        return bool(key(self) == key(other))

    def __hash__(self) -> int:
        return hash(_key(type(self))(self))

    def __repr__(self) -> str:
        values = _key(type(self))(self)
        text = ", ".join(
            f"{name}={value!r}"
            for name, value in zip(type(self).__record_fields__, values, strict=True)
        )
        return f"{type(self).__name__}({text})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), _key(type(self))(self)))


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
        build = _builders[cls] = _deferred_builder(cls, _specs(cls))
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
    for spec in _specs(cls):
        annotation = spec.annotation
        if isinstance(annotation, str):
            key = (spec.module, annotation)
            evaluated = _evaluated.get(key, MISSING)
            if evaluated is MISSING:  # the catalog repeats a few dozen annotations
                evaluated = _evaluated[key] = _evaluate(annotation, spec.module)
            annotation = evaluated
        out.append(Field(spec.name, annotation, spec.default, spec.factory))
    done = tuple(out)
    _resolved[cls] = done
    return done

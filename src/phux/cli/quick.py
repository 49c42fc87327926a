"""The quick path: parse the common one-shot command lines without click.

``phux send-keys``, ``snapshot``, ``run`` and ``wait`` are what an agent runs
in a loop, and importing click costs more than the work of a ``send-keys``.
:func:`parse` accepts only command lines whose meaning is plain (known long
options with well-formed values, then the positionals) and returns the verb
function of :mod:`phux.cli.actions` with exactly the parameters click would
pass it. Anything else (help, short options, a bad or unusual value, a
missing argument) returns None and goes through click, which gives the same
answer or the usual error and help. ``tests/cli/test_quick.py`` checks the
agreement with click's own parser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phux.cli import actions
from phux.cli.quick_table import (
    COUNT,
    DEFAULTS,
    FLAG,
    LAYOUT,
    OPTIONS,
    SCROLLBACK,
    SECONDS,
    TEXT,
)
from phux.cli.render import write_out

_BAD = object()

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    Call = tuple[Callable[..., Any], dict[str, Any]]


class Spec:
    """How one verb's command line is laid out (a plain class: cheap to import)."""

    __slots__ = ("defaults", "exclusive", "options", "rest", "target_required", "verb")

    def __init__(
        self, name: str, verb: Callable[..., Any], exclusive: tuple[str, ...] = ()
    ) -> None:
        self.verb = verb
        self.options: dict[str, tuple[str, int]] = OPTIONS[name]
        self.defaults: dict[str, Any] = DEFAULTS[name]
        self.target_required, self.rest = LAYOUT[name]
        """``rest``: the name of the trailing ``nargs=-1, required`` argument (KEYS, CMD)."""
        self.exclusive = exclusive


# The options, defaults and layout come from click (quick_table.py is generated
# from phux.cli.verbs); only which function runs each verb, and the conditions
# click checks in the verb itself, are said here.
SPECS: dict[str, Spec] = {
    "snapshot": Spec("snapshot", actions.snapshot),
    "send-keys": Spec("send-keys", actions.send_keys),
    "run": Spec("run", actions.run),
    "wait": Spec("wait", actions.wait, exclusive=("until", "regex")),
}


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _convert(kind: int, value: str) -> Any:
    if kind == TEXT:
        return value
    if kind in (COUNT, SCROLLBACK):
        return int(value) if _digits(value) else _BAD
    # Seconds: plain decimals only (click also takes 1e3, inf, ...: it decides those).
    whole, _, frac = value.partition(".")
    if not (whole or frac) or not (_digits(whole) or not whole) or not (_digits(frac) or not frac):
        return _BAD
    seconds = float(value)
    if seconds < 0 or (seconds == 0 and kind == SECONDS):
        return _BAD
    return seconds


def version() -> None:
    """``phux --version``, worded as click's version option words it."""
    from phux import __version__

    write_out(f"phux, version {__version__}\n")


def parse(args: Sequence[str]) -> Call | None:
    """``(verb, params)`` for a plain one-shot command line, else None (use click)."""
    if not args:
        return None
    if list(args) == ["--version"]:
        return version, {}
    spec = SPECS.get(args[0])
    if spec is None:
        return None
    params = dict(spec.defaults)
    positionals: list[str] = []
    rest = list(args[1:])
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            positionals += rest[i + 1 :]
            break
        if not arg.startswith("-") or arg == "-":
            if spec.rest is not None:
                # KEYS / CMD: everything from TARGET on is literal, but a word that is
                # one of the verb's own options is refused (by click, with the remedy).
                if any(w.partition("=")[0] in spec.options for w in rest[i + 1 :]):
                    return None
                positionals += rest[i:]
                break
            positionals.append(arg)  # options may follow TARGET
            i += 1
            continue
        name, eq, value = arg.partition("=")
        option = spec.options.get(name)
        if option is None:
            return None  # -h, --help, a short or unknown option: click decides
        dest, kind = option
        if kind == FLAG:
            if eq:
                return None
            params[dest] = True
            i += 1
            continue
        if eq:
            i += 1
        elif kind == SCROLLBACK:
            # A word of digits right after --scrollback is its count; else it is bare.
            following = rest[i + 1] if i + 1 < len(rest) else None
            if following is not None and _digits(following):
                value, i = following, i + 2
            elif following is not None and following.isdigit():
                return None  # a non-ASCII digit: click decides
            else:
                value, i = "0", i + 1
        elif i + 1 < len(rest):
            value, i = rest[i + 1], i + 2
        else:
            return None
        converted = _convert(kind, value)
        if converted is _BAD:
            return None
        params[dest] = converted
    if spec.rest is not None:
        if len(positionals) < 2:
            return None
        params["target"] = positionals[0]
        params[spec.rest] = tuple(positionals[1:])
    else:
        if len(positionals) > 1 or (spec.target_required and not positionals):
            return None
        params["target"] = positionals[0] if positionals else None
    if spec.exclusive and all(params[name] is not None for name in spec.exclusive):
        return None
    if spec.verb is actions.wait:
        text = params["until"] is not None or params["regex"] is not None
        if text + params["prompt"] + params["exit_"] > 1:
            return None  # conflicting conditions: click's usage error
    return spec.verb, params

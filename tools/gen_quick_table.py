"""Generate ``src/phux/cli/quick_table.py``: the quick path's option table, from click.

The click commands in :mod:`phux.cli.verbs` are the one home of the agent
verbs' options. ``phux.cli.quick`` parses their plain command lines without
importing click, so it reads this table instead: for each quick verb, the long
options it may decide (with their destination and the kind of value), the
defaults click would pass, and the positional layout. An option of a kind the
quick path does not know (a choice, a callback) is left out, so a command line
that uses it goes through click. ``python -m tools.gen_quick_table`` rewrites
the file; ``--check`` fails if it is stale (tests/cli/test_quick.py runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import click

from tools.generated import write_or_check

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "src" / "phux" / "cli" / "quick_table.py"
QUICK_VERBS = ("snapshot", "send-keys", "run", "wait")
KINDS = ("FLAG", "TEXT", "SECONDS", "SECONDS_OR_ZERO", "COUNT", "SCROLLBACK")


def kind_of(option: click.Option) -> str | None:
    """The quick path's name for what the option takes, or None: click decides."""
    if option.callback is not None or not option.expose_value:
        return None
    kind = option.type
    if option.is_flag and option.is_bool_flag:
        return "FLAG"
    if isinstance(kind, click.IntRange) and kind.min == 0 and kind.max is None:
        if option._flag_needs_value:
            return "SCROLLBACK"  # --scrollback [N]: bare, or a count
        return "COUNT"
    if option._flag_needs_value:
        return None
    if isinstance(kind, click.FloatRange) and kind.min == 0 and kind.max is None:
        return "SECONDS" if kind.min_open else "SECONDS_OR_ZERO"
    if kind is click.STRING:
        return "TEXT"
    return None


def q(text: str) -> str:
    return json.dumps(text)  # double quotes, as ruff format writes them


def table() -> str:
    from phux.cli.app import cli

    options: dict[str, dict[str, tuple[str, str]]] = {}
    defaults: dict[str, dict[str, object]] = {}
    layout: dict[str, tuple[bool, str | None]] = {}
    for verb in QUICK_VERBS:
        command = cli.commands[verb]
        options[verb], defaults[verb] = {}, {}
        target_required, rest = False, None
        for param in command.params:
            if isinstance(param, click.Argument):
                if param.nargs == -1:
                    rest = param.name
                elif param.name == "target":
                    target_required = param.required
                else:
                    raise SystemExit(f"{verb}: the quick path knows no argument {param.name}")
                continue
            if not isinstance(param, click.Option) or not param.expose_value:
                continue
            assert param.name is not None
            kind = kind_of(param)
            if kind is None:
                continue
            for name in param.opts:
                if name.startswith("--"):
                    options[verb][name] = (param.name, kind)
        layout[verb] = (target_required, rest)
        # What click passes for an option not given: ask click itself.
        given = ["T", "K"] if rest else ["T"]
        params = command.make_context(verb, given).params
        defaults[verb] = {k: v for k, v in params.items() if k not in ("target", rest)}
    out = [
        '"""The quick path\'s option table (see ``phux.cli.quick``).',
        "",
        "Generated from the click commands in ``phux.cli.verbs`` by",
        "``python -m tools.gen_quick_table``; do not edit.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"{', '.join(KINDS)} = range({len(KINDS)})",
        "",
        "OPTIONS = {",
    ]
    for verb in QUICK_VERBS:
        out.append(f"    {q(verb)}: {{")
        for name, (dest, kind) in options[verb].items():
            out.append(f"        {q(name)}: ({q(dest)}, {kind}),")
        out.append("    },")
    out += ["}", '"""Per verb: the long options the quick path decides, as (destination, kind)."""']
    out += ["", "DEFAULTS = {"]
    for verb in QUICK_VERBS:
        out.append(f"    {q(verb)}: {{")
        for dest, value in defaults[verb].items():
            out.append(f"        {q(dest)}: {value!r},")
        out.append("    },")
    out += ["}", '"""Per verb: the value click passes for each option not given."""']
    out += ["", "LAYOUT = {"]
    for verb in QUICK_VERBS:
        target_required, rest = layout[verb]
        out.append(f"    {q(verb)}: ({target_required!r}, {q(rest) if rest else None}),")
    out += [
        "}",
        '"""Per verb: (TARGET is required, the name of the trailing KEYS/CMD argument or None)."""',
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    return write_or_check(
        TABLE, table(), check=args.check, command="python -m tools.gen_quick_table"
    )


if __name__ == "__main__":
    sys.exit(main())

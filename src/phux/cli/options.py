"""What the click verbs share: the Verb class (TARGET-then-options parsing) and the
options every verb takes (--socket/--host, --json, --timeout, --env, --select).

Below :mod:`phux.cli.verbs`, :mod:`phux.cli.manage_cmd` and the verbs with a file
of their own, which all build on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from phux.cli import actions
from phux.cli import help as texts

if TYPE_CHECKING:
    from phux.client.client import Client

F = TypeVar("F", bound=Callable[..., Any])


class Verb(click.Command):
    """A verb, with the CLI's one grammar on top of click's parser.

    * A verb without a free-form trailing argument (snapshot, wait, watch, kill
      ...) takes options anywhere: ``snapshot build --json --scrollback 200``.
    * A verb whose last argument takes the rest of the line (KEYS, CMD) reads
      options only before TARGET, and everything after TARGET literally; a word
      there that is one of the verb's own options (``run build 'make' --json``)
      is refused with the remedy, since typing it was most likely not meant.
      After ``--`` nothing is an option.
    * ``--scrollback`` takes a row count only as the next word of digits (or
      ``=N``); otherwise it is bare and means all history.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = dict(kwargs.pop("context_settings", None) or {})
        settings.setdefault("help_option_names", ["-h", "--help"])
        settings.setdefault("max_content_width", 100)
        kwargs["context_settings"] = settings
        super().__init__(*args, **kwargs)
        self.trailing = next(
            (p.name for p in self.params if isinstance(p, click.Argument) and p.nargs == -1),
            None,
        )
        self.context_settings["allow_interspersed_args"] = self.trailing is None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if any(param.name == "scrollback" for param in self.params):
            args = _bare_scrollback(self, args)
        if self.trailing is not None:
            stray = _options_after_target(self, args)
            if stray:
                raise click.UsageError(
                    f"{stray!r} comes after TARGET, where every word is part of "
                    f"{self.trailing.upper()}; put {self.name}'s options before TARGET "
                    f"(phux {self.name} {stray} TARGET ...), or write -- before TARGET "
                    f"to pass {stray!r} on literally",
                    ctx,
                )
        return super().parse_args(ctx, args)


def _option_names(command: click.Command) -> dict[str, bool]:
    """Every option name of ``command`` -> whether it takes a value."""
    names: dict[str, bool] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                names[name] = not param.is_flag and not param.count
    return names


def _options_after_target(command: click.Command, args: list[str]) -> str | None:
    """The first word after TARGET that is one of ``command``'s options, unless a
    ``--`` before TARGET made the rest literal."""
    names = _option_names(command)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return None
        if not arg.startswith("-") or arg == "-":
            break
        name = arg.partition("=")[0]
        i += 2 if names.get(name) and "=" not in arg else 1
    for word in args[i + 1 :]:
        if word.partition("=")[0] in names and word.startswith("--"):
            return word
    return None


def _bare_scrollback(command: click.Command, args: list[str]) -> list[str]:
    """``--scrollback`` not followed by a word of digits means all history
    (``--scrollback=0``); a word of digits right after it is always its count. A
    ``--scrollback`` that is another option's value (``--socket --scrollback``) is
    left alone, as click will read it."""
    takes_value = {name for name, value in _option_names(command).items() if value}
    takes_value.discard("--scrollback")
    out = list(args)
    i = 0
    while i < len(out):
        arg = out[i]
        if arg == "--":
            break
        if arg in takes_value:
            i += 2
            continue
        if arg == "--scrollback" and not (i + 1 < len(out) and _digits(out[i + 1])):
            out[i] = "--scrollback=0"
        i += 1
    return out


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def open_client(socket: str | None) -> Client:
    """The verbs' client (``actions.open_client``, looked up at call time)."""
    return actions.open_client(socket)


# ---------------------------------------------------------------- shared options


def socket_option(f: F) -> F:
    """--socket, and --host: where the server is."""
    f = click.option(
        "--host",
        metavar="[USER@]HOST",
        default=None,
        expose_value=False,
        callback=_use_host,
        help="Drive the phux server on HOST, over ssh (default: $PHUX_HOST; "
        "a TARGET may also say HOST/name). --socket is then HOST's socket.",
    )(f)
    return click.option(
        "--socket",
        metavar="PATH",
        default=None,
        help="Server socket (default: $PHUX_SOCKET, then the per-user default).",
    )(f)


def _use_host(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # --host H is $PHUX_HOST=H for this process: the client reads one place.
    if value is not None:
        if not value or value.startswith("-"):
            raise click.BadParameter("name it as [USER@]HOST", ctx, param)
        os.environ["PHUX_HOST"] = value


def json_option(what: str) -> Callable[[F], F]:
    def deco(f: F) -> F:
        return click.option("--json", "as_json", is_flag=True, help=what)(f)

    return deco


def deadline_option(f: F) -> F:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=texts.DEFAULT_DEADLINE,
        show_default=True,
        metavar="SECS",
        help=texts.DEADLINE_HELP,
    )(f)


def _parse_env(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> dict[str, str]:
    from phux.client.client import parse_env
    from phux.client.errors import InvalidArgument

    try:
        return parse_env(value)
    except InvalidArgument as exc:
        raise click.BadParameter(exc.message) from None


def env_option(f: F) -> F:
    """tmux's ``-e VAR=VALUE``: set in the new pane over the server's environment."""
    return click.option(
        "-e",
        "env",
        metavar="VAR=VALUE",
        multiple=True,
        callback=_parse_env,
        help="Set VAR in the pane (repeatable); the rest of its environment is the "
        "server's, not this command's.",
    )(f)


def select_option(f: F) -> F:
    return click.option(
        "--select",
        "select",
        is_flag=True,
        help="Make the new pane its session's active pane, which the session's name "
        "then names (default: the active pane stays; target the new one by its @N).",
    )(f)


def verb_epilog(*extra: str) -> str:
    return texts.epilog(*extra, texts.SOCKET)

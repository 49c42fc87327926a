"""Entry point of the ``phux`` command."""

from __future__ import annotations

import click

from phux import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="phux")
def cli() -> None:
    """phux: a terminal server for AI agents and the people beside them."""


def main() -> None:
    cli()

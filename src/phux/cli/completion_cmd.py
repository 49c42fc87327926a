"""``phux completion SHELL``: the shell's completion script, from click."""

from __future__ import annotations

import click

from phux.cli.render import write_out

SHELLS = ("bash", "zsh", "fish")
_ENABLE = {
    "bash": 'eval "$(phux completion bash)"          # in ~/.bashrc',
    "zsh": 'eval "$(phux completion zsh)"           # in ~/.zshrc, after compinit',
    "fish": "phux completion fish > ~/.config/fish/completions/phux.fish",
}


@click.command(
    "completion",
    short_help="Print a shell completion script (bash, zsh, fish).",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="\b\nEnable it:\n" + "\n".join(f"  {line}" for line in _ENABLE.values()),
)
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_cmd(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL: verbs, options and choices complete on Tab,
    and so do TARGETs and session names (from the running server's listing: sessions,
    windows, panes, @N, #tags; nothing when no server runs, and none is started) and
    send-keys key names (Enter, C-c, ...).

    The script asks `phux` itself what to complete (with _PHUX_COMPLETE set),
    so it follows the installed version.
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"click has no completion for {shell}")
    # The script completes the command group this verb runs in (phux.cli.app's,
    # which imports this module).
    comp = cls(ctx.find_root().command, {}, "phux", "_PHUX_COMPLETE")
    write_out(comp.source())

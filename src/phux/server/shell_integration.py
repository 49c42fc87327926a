"""Automatic shell integration: how a pane's shell is started so it prints OSC 133/7 marks.

When a pane's program is bash, zsh, fish, sh or dash started interactively,
the server changes its argv and environment the way kitty, VS Code and
WezTerm do, so that the shell first loads the user's own startup files
unchanged and then the scripts in ``phux/shell_integration/`` (package data),
which add the hooks. The bytes those hooks print are specified in
spec/shell-integration.md. Anything the server does not recognise (``-c``, a
script argument, an unknown option) is started exactly as asked.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from phux.signed_marks import KEY_METADATA, SHELL_METADATA

VARIABLE = "PHUX_SHELL_INTEGRATION"
"""``0`` in a SPAWN's environment opts that pane out; in the server's own
environment it makes opting out the default (a SPAWN's ``1`` opts back in)."""

SHELLS = frozenset({"bash", "zsh", "fish", "sh", "dash"})

SCRIPTS = Path(__file__).resolve().parent.parent / "shell_integration"


def wanted(spawn_env: Mapping[str, str], server_default: bool) -> bool:
    """Whether a SPAWN with these environment overrides gets integration."""
    value = spawn_env.get(VARIABLE)
    if value == "0":
        return False
    return server_default or value == "1"


def server_default(environ: Mapping[str, str]) -> bool:
    return environ.get(VARIABLE) != "0"


KEY_VARIABLE = "_PHUX_KEY"
"""How the shell gets its pane's key: the scripts move it into an unexported
variable before the user's files run (spec/shell-integration.md, "Signed marks")."""


def inject(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, bytes]]:
    """The argv to start (``env`` is updated in place) and the terminal metadata the
    server writes for it: the pane's mark key and the shell kind. Unchanged, and no
    metadata, when not a shell we know or not an interactive invocation."""
    env.pop(KEY_VARIABLE, None)  # only the server hands out keys
    name = os.path.basename(argv[0])
    if name == "bash":
        kind, start = "bash", _bash(argv, env)
    elif name == "zsh":
        kind, start = "zsh", _zsh(argv, env)
    elif name == "fish":
        kind, start = "fish", _fish(argv, env)
    elif name in ("sh", "dash"):
        kind, start = "sh", _sh(argv, env)
    else:
        return argv, {}
    if start is None:
        return argv, {}
    key = secrets.token_hex(16)
    env[KEY_VARIABLE] = key
    return start, {KEY_METADATA: key.encode(), SHELL_METADATA: kind.encode()}


def _save_env(env: dict[str, str], name: str) -> None:
    """Keep the user's value of a variable the injection borrows (set iff the user had it)."""
    saved = "_PHUX_" + name
    env.pop(saved, None)
    if name in env:
        env[saved] = env[name]


def _bash(argv: list[str], env: dict[str, str]) -> list[str] | None:
    # A posix-mode bash reads $ENV at startup whether or not it is a login
    # shell; the script leaves posix mode and reads the usual files itself.
    login = interactive = False
    flags: list[str] = []
    rcfile = ""
    args = argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-l", "--login"):
            login = True
        elif arg == "-i":
            interactive = True
        elif arg in ("-il", "-li"):
            login = interactive = True
        elif arg in ("--noprofile", "--norc"):
            flags.append(arg[2:])
        elif arg in ("--rcfile", "--init-file") and i + 1 < len(args):
            i += 1
            rcfile = args[i]
        else:
            return None
        i += 1
    if "HISTFILE" not in env:
        flags.append("histfile")  # posix mode would default it to ~/.sh_history
    if "inherit_errexit" in env.get("BASHOPTS", "").split(":"):
        flags.append("keep_errexit")
    _save_env(env, "ENV")
    env["ENV"] = str(SCRIPTS / "bash" / "phux.bash")
    env["_PHUX_BASH_FLAGS"] = " ".join(flags)
    env["_PHUX_BASH_RCFILE"] = rcfile
    new = [argv[0], "--posix"]
    if login:
        new.append("--login")
    if interactive:
        new.append("-i")
    return new


def _only_options(argv: list[str], allowed: frozenset[str]) -> bool:
    return all(arg in allowed for arg in argv[1:])


_ZSH_OPTIONS = frozenset({"-l", "--login", "-i", "--interactive", "-il", "-li"})


def _zsh(argv: list[str], env: dict[str, str]) -> list[str] | None:
    # zsh reads $ZDOTDIR/.zshenv first; ours puts ZDOTDIR back, so zsh goes on
    # to read the user's .zprofile/.zshrc/.zlogin, and hooks in at the first prompt.
    if not _only_options(argv, _ZSH_OPTIONS):
        return None
    _save_env(env, "ZDOTDIR")
    env["ZDOTDIR"] = str(SCRIPTS / "zsh")
    return argv


_FISH_OPTIONS = frozenset({"-l", "--login", "-i", "--interactive", "-il", "-li"})


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(argv: list[str], env: dict[str, str]) -> list[str] | None:
    # --init-command runs after config.fish, so the user's prompt is defined by then.
    if not _only_options(argv, _FISH_OPTIONS):
        return None
    script = SCRIPTS / "fish" / "phux.fish"
    return [*argv, "--init-command", "source " + _fish_quote(str(script))]


_SH_OPTIONS = frozenset({"-i", "-l", "-il", "-li"})


def _sh(argv: list[str], env: dict[str, str]) -> list[str] | None:
    # An interactive POSIX shell reads the file $ENV names; ours reads the user's first.
    if not _only_options(argv, _SH_OPTIONS):
        return None
    _save_env(env, "ENV")
    env["ENV"] = str(SCRIPTS / "sh" / "phux.sh")
    return argv

"""Real-world shell configurations for the tests (issue 23): HOMEs built from Debian
packages and small rc files, the way developers' machines are set up.

Each :class:`Config` names the shell it is for, the rc files it writes and the
Debian packages it needs (``.ci/run`` installs them). ``build(config, home)``
writes a HOME; ``need(config)`` skips a test when a package is missing, except
under ``CI=true``, where a missing package fails the test (CI must run them all).

Usage::

    from shell.corpus import CONFIGS, build, need

    @pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
    def test_x(config: Config, tmp_path: Path) -> None:
        need(config)
        home = build(config, tmp_path / "home")
        ...  # start the server (or the SPAWN) with HOME=home, run config.shell

``Config.marker`` is text the configuration prints at every prompt (a right
prompt, a banner line) that must never show up in a command's output or in a
command line; ``Config.rprompt`` is True when it draws a right prompt.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tools.bash_preexec import INSTALLED as BASH_PREEXEC

from .kit import settled_home

__all__ = ["CONFIGS", "Config", "build", "need"]


@dataclass(frozen=True)
class Config:
    name: str
    shell: str
    """The program the pane runs (bash, zsh, fish, dash)."""
    files: dict[str, str] = field(default_factory=dict)
    """rc files (and any other files) relative to HOME."""
    packages: tuple[str, ...] = ()
    """Debian packages it needs."""
    needs: tuple[str, ...] = ()
    """Files those packages install that it reads (checked by :func:`need`)."""
    rprompt: bool = False
    marker: str | None = None
    """Text drawn at every prompt (or by the rc file) that is never typed input."""
    slow: bool = False
    """Its rc file or prompt hook sleeps (a banner, a slow hook)."""


def build(config: Config, home: Path) -> Path:
    """Write ``config``'s files into ``home`` (created, and settled for fish: see
    :func:`kit.settled_home`); returns ``home``."""
    settled_home(home)
    for rel, text in config.files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return home


def need(config: Config) -> None:
    """Skip unless ``config``'s shell and packages are installed; under CI=true a
    missing one fails instead (``.ci/run`` installs them)."""
    missing = [] if shutil.which(config.shell) else [config.shell]
    missing += [path for path in config.needs if not Path(path).exists()]
    if not missing:
        return
    what = f"{config.name} needs {', '.join(missing)} (Debian: {' '.join(config.packages)})"
    if os.environ.get("CI") == "true":
        pytest.fail(what + ": .ci/run installs it")
    pytest.skip(what)


P9K = "/usr/share/powerlevel9k/powerlevel9k.zsh-theme"
AUTOSUGGEST = "/usr/share/zsh-autosuggestions/zsh-autosuggestions.zsh"
HIGHLIGHT = "/usr/share/zsh-syntax-highlighting/zsh-syntax-highlighting.zsh"
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
DIRENV = "/usr/bin/direnv"

# A history line for the autosuggestions to offer ("echo" typed shows the rest).
_ZSH_HISTORY = ": 1700000000:0;echo suggested-from-history\n"
_FISH_HISTORY = "- cmd: echo suggested-from-history\n  when: 1700000000\n"

# The real bash-preexec (github.com/rcaloras/bash-preexec), which atuin, bashhub and
# many dotfiles source: not packaged by Debian 12, so tools/env.sh fetches it from a
# pinned PyPI wheel into the virtualenv (tools/bash_preexec.py). Its hooks log, so a
# test can tell they kept running.
_BASH_PREEXEC = f"""\
PS1='\\u$ '
source {BASH_PREEXEC}
preexec() {{ echo "preexec[$1]" >> ~/fw.log; }}
precmd() {{ echo "precmd" >> ~/fw.log; }}
"""

_CONFIGS = [
    Config(
        "zsh-powerlevel9k",
        "zsh",
        {".zshrc": f"source {P9K}\n"},
        ("zsh", "zsh-theme-powerlevel9k"),
        (P9K,),
        rprompt=True,
    ),
    Config(
        "zsh-autosuggestions",
        "zsh",
        {
            ".zshrc": "PS1='%n> '\nHISTFILE=~/.zsh_history HISTSIZE=100 SAVEHIST=100\n"
            "setopt extended_history\n"
            f"source {AUTOSUGGEST}\nsource {HIGHLIGHT}\n",
            ".zsh_history": _ZSH_HISTORY,
        },
        ("zsh", "zsh-autosuggestions", "zsh-syntax-highlighting"),
        (AUTOSUGGEST, HIGHLIGHT),
    ),
    Config(
        "zsh-rprompt-clock",
        "zsh",
        {".zshrc": "PS1='%n> '\nRPROMPT='[%*]'\n"},
        ("zsh",),
        rprompt=True,
    ),
    Config(
        # The right prompt is taken off each line once it is accepted.
        "zsh-transient-rprompt",
        "zsh",
        {".zshrc": "PS1='%n> '\nRPROMPT='[%*]'\nsetopt transient_rprompt\n"},
        ("zsh",),
        rprompt=True,
    ),
    Config(
        # powerlevel10k-style transient prompt: an accepted line is redrawn with a
        # short prompt and no right prompt (zle-line-finish, zle reset-prompt).
        "zsh-transient-prompt",
        "zsh",
        {
            ".zshrc": "_full() { PROMPT='%n@%m %~ > '; RPROMPT='[%*]' }\n"
            "autoload -Uz add-zsh-hook\nadd-zsh-hook precmd _full\n"
            "_transient() { PROMPT='> '; RPROMPT=''; zle reset-prompt }\n"
            "zle -N zle-line-finish _transient\n"
        },
        ("zsh",),
        rprompt=True,
    ),
    Config(
        "fish-right-prompt",
        "fish",
        {
            ".config/fish/config.fish": "set -g fish_greeting\n"
            "function fish_prompt; echo -n (whoami)'> '; end\n"
            "function fish_right_prompt; echo -n '['(date +%T)']'; end\n",
            ".local/share/fish/fish_history": _FISH_HISTORY,
        },
        ("fish",),
        rprompt=True,
    ),
    Config(
        "bash-completion",
        "bash",
        {".bashrc": f"PS1='\\u$ '\n. {BASH_COMPLETION}\n"},
        ("bash-completion",),
        (BASH_COMPLETION,),
    ),
    Config(
        "bash-direnv",
        "bash",
        {".bashrc": "PS1='\\u$ '\neval \"$(direnv hook bash)\"\n"},
        ("direnv",),
        (DIRENV,),
    ),
    Config(
        "zsh-direnv",
        "zsh",
        {".zshrc": "PS1='%n> '\neval \"$(direnv hook zsh)\"\n"},
        ("zsh", "direnv"),
        (DIRENV,),
    ),
    Config(
        "bash-preexec",
        "bash",
        {".bashrc": _BASH_PREEXEC},
        ("a PyPI wheel: tools/bash_preexec.py",),
        (str(BASH_PREEXEC),),
    ),
    Config(
        "bash-two-line",
        "bash",
        {".bashrc": "PS1='\\u@\\h \\w\\n\\$ '\n"},
    ),
    Config(
        "zsh-two-line",
        "zsh",
        {".zshrc": "PS1=$'%n@%m %~\\n%# '\n"},
        ("zsh",),
    ),
    Config("bash-vi", "bash", {".bashrc": "PS1='\\u$ '\nset -o vi\n"}),
    Config("zsh-vi", "zsh", {".zshrc": "PS1='%n> '\nbindkey -v\n"}, ("zsh",)),
    Config(
        # fish draws its vi mode ("[I]") before the prompt, fish_mode_prompt.
        "fish-vi",
        "fish",
        {
            ".config/fish/config.fish": "set -g fish_greeting\nfish_vi_key_bindings\n"
            "function fish_prompt; echo -n (whoami)'> '; end\n"
        },
        ("fish",),
    ),
    Config(
        # starship-style: a prompt hook builds PS1 anew before every prompt.
        "bash-rebuilt-ps1",
        "bash",
        {
            ".bashrc": '_build() { local s=$?; PS1="[$s] \\w \\$(date +%S)\\$ "; }\n'
            "PROMPT_COMMAND=_build\n"
        },
    ),
    Config(
        "zsh-rebuilt-prompt",
        "zsh",
        {
            ".zshrc": "autoload -Uz add-zsh-hook\n"
            "_build() { PROMPT=\"[%?] %~ $(date +%S)> \"; RPROMPT='%*' }\n"
            "add-zsh-hook precmd _build\n"
        },
        ("zsh",),
        rprompt=True,
    ),
    Config(
        # pyenv virtualenv-init style: a banner, a slow start, a prompt hook that
        # runs a child process every prompt.
        "bash-pyenv-like",
        "bash",
        {
            ".bashrc": "echo 'pyenv: loading shims'\nsleep 0.5\nPS1='\\u$ '\n"
            "_pyenv_hook() { local s=$?; sleep 0.3; return $s; }\n"
            'PROMPT_COMMAND="_pyenv_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"\n'
        },
        marker="pyenv: loading shims",
        slow=True,
    ),
    Config(
        # conda init style: a banner, a slow start, an environment name in PS1.
        "zsh-conda-like",
        "zsh",
        {
            ".zshrc": "print 'conda: activating base'\nsleep 0.5\n"
            "PS1='(base) %n> '\n"
            "_conda_hook() { sleep 0.3 }\nautoload -Uz add-zsh-hook\n"
            "add-zsh-hook precmd _conda_hook\n"
        },
        ("zsh",),
        marker="conda: activating base",
        slow=True,
    ),
    Config(
        "fish-conda-like",
        "fish",
        {
            ".config/fish/config.fish": "set -g fish_greeting\necho 'conda: activating base'\n"
            "sleep 0.5\nfunction fish_prompt; echo -n '(base) '(whoami)'> '; end\n"
            "function _conda_hook --on-event fish_prompt; sleep 0.3; end\n"
        },
        ("fish",),
        marker="conda: activating base",
        slow=True,
    ),
]

CONFIGS: dict[str, Config] = {c.name: c for c in _CONFIGS}

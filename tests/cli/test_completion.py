"""Shell completion: ``phux completion SHELL`` prints click's script, and the
script completes in the real shells (bash's completion function, fish's
``complete -C``; zsh loads it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_e2e import Phux, phux  # noqa: F401  (the module-scoped server fixture)

BIN = Path(sys.executable).parent


def phux_env() -> dict[str, str]:
    # The scripts call `phux` by name: the one installed beside this Python.
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PHUX_HOST", None)
    return env


def script(shell: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "phux", "completion", shell],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_script(shell: str) -> None:
    text = script(shell)
    assert "_PHUX_COMPLETE" in text
    assert f"{shell}_complete" in text


def test_unknown_shell_is_a_usage_error() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "phux", "completion", "tcsh"], capture_output=True, timeout=30
    )
    assert res.returncode == 2


def complete_in_bash(
    tmp_path: Path, words: list[str], env: dict[str, str] | None = None
) -> list[str]:
    """Run the completion function in a real bash, as bash does on Tab."""
    path = tmp_path / "phux.bash"
    path.write_text(script("bash"))
    array = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {path}\n"
        f"COMP_WORDS=({array}); COMP_CWORD={len(words) - 1}\n"
        "_phux_completion phux\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    res = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        env={**phux_env(), **(env or {})},
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_verbs_and_options(tmp_path: Path) -> None:
    assert complete_in_bash(tmp_path, ["phux", "sn"]) == ["snapshot"]
    assert set(complete_in_bash(tmp_path, ["phux", "re"])) == {"record", "rename", "resize"}
    assert "--scrollback" in complete_in_bash(tmp_path, ["phux", "snapshot", "--sc"])
    assert complete_in_bash(tmp_path, ["phux", "skill", "q"]) == ["quick"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_verbs() -> None:
    program = "phux completion fish | source; complete -C 'phux sk'"
    res = subprocess.run(
        ["fish", "--no-config", "-c", program],
        capture_output=True,
        text=True,
        env=phux_env(),
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\t")[0].strip() == "skill", res.stdout


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_loads_the_script() -> None:
    program = (
        "autoload -Uz compinit && compinit -u -D\n"
        'eval "$(phux completion zsh)"\n'
        "whence -w _phux_completion\n"
    )
    res = subprocess.run(
        ["zsh", "-f", "-c", program],
        capture_output=True,
        text=True,
        env=phux_env(),
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    assert "_phux_completion: function" in res.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_targets_from_the_server_and_key_names(
    tmp_path: Path,
    phux: Phux,  # noqa: F811
) -> None:
    tid = phux.new("compl-one", "sh", "-c", "exec sleep 60")
    made = phux("new-window", "compl-one", "-n", "logs", "--", "sh", "-c", "exec sleep 60")
    assert made.code == 0, made.err
    assert phux("tag", "compl-one:0", "ctag").code == 0
    env = {"PHUX_SOCKET": str(phux.socket)}
    words = complete_in_bash(tmp_path, ["phux", "snapshot", "compl-"], env)
    assert {"compl-one", "compl-one:0", "compl-one:1", "compl-one:logs", "compl-one:0.0"} <= set(
        words
    ), words
    assert f"@{tid}" in complete_in_bash(tmp_path, ["phux", "run", "@"], env)
    assert complete_in_bash(tmp_path, ["phux", "kill", "#ct"], env) == ["#ctag"]
    assert complete_in_bash(tmp_path, ["phux", "new-window", "compl-o"], env) == ["compl-one"]
    keys = complete_in_bash(tmp_path, ["phux", "send-keys", "compl-one", "Ent"], env)
    assert keys == ["Enter"]
    assert "C-c" in complete_in_bash(tmp_path, ["phux", "send-keys", "compl-one", "C-"], env)
    # Without a server, Tab offers nothing and prints no error.
    gone = {"PHUX_SOCKET": str(tmp_path / "none.sock")}
    assert complete_in_bash(tmp_path, ["phux", "snapshot", "compl-"], gone) == []
    assert phux("kill", "compl-one").code == 0

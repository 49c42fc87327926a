"""`run`'s word quoting, checked by real shells: each word comes back unchanged."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from phux.client.run_base import command_line, quote_word

WORDS = [
    "plain",
    "it's",
    "two words",
    "",
    "$HOME",
    "`id`",
    "a\\b",
    "ends\\",
    "back\\\\slash",
    '"dq"',
    "=ls",
    "a=b",
    "~",
    "*",
    "semi;colon",
    "new\nline",
    "tab\there",
    "{a,b}",
    "%self",
    "ünïcödé",
    "'",
    "''",
    "!bang",
]


@pytest.mark.parametrize("shell", ["bash", "zsh", "dash", "fish"])
def test_words_survive_the_shell(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    line = command_line(["printf", "[%s]\\n", *WORDS], shell)
    out = subprocess.run(
        [shell, "-c", line], capture_output=True, text=True, timeout=20, check=True
    ).stdout
    assert out == "".join(f"[{word}]\n" for word in WORDS)


def test_one_word_is_a_command_line() -> None:
    assert command_line(["echo a | tr a b"]) == "echo a | tr a b"
    assert command_line("echo a; echo b") == "echo a; echo b"
    assert command_line(["echo", "it's"]) == "echo 'it'\"'\"'s'"
    assert command_line(["echo", "it's"], "fish") == "echo 'it\\'s'"
    assert quote_word("safe-word_1.2/x") == "safe-word_1.2/x"

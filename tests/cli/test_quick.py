"""The quick path parses exactly as click does, for every command line it accepts."""

from __future__ import annotations

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.cli import actions
from phux.cli.app import cli
from phux.cli.quick import SPECS, parse

WORDS = [
    "--json",
    "--cells",
    "--scrollback",
    "--scrollback=3",
    "--scrollback=",
    "--timeout",
    "--timeout=2",
    "--timeout=0",
    "--until",
    "--until=x",
    "--regex",
    "--idle",
    "--idle=5",
    "--socket",
    "--socket=/tmp/s",
    "--literal",
    "-l",
    "--json=1",
    "--help",
    "-h",
    "-x",
    "--",
    "-",
    "0",
    "7",
    "007",
    "1.5",
    ".5",
    "5.",
    ".",
    "0.0",
    "1e3",
    "inf",
    "-1",
    "²",
    "",
    "work",
    "@3",
    "C-c",
    "Enter",
    "make test",
]


def click_params(verb: str, args: list[str]) -> dict[str, object] | None:
    command = cli.commands[verb]
    try:
        ctx = command.make_context(verb, list(args))
    except click.ClickException:
        return None
    return dict(ctx.params)


@settings(max_examples=1500, deadline=None)
@given(verb=st.sampled_from(sorted(SPECS)), args=st.lists(st.sampled_from(WORDS), max_size=7))
def test_quick_parse_agrees_with_click(verb: str, args: list[str]) -> None:
    quick = parse([verb, *args])
    if quick is None:
        return  # click decides
    function, params = quick
    assert function is SPECS[verb].verb
    assert params == click_params(verb, args)


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "--json", "bench"],
        ["snapshot"],
        ["snapshot", "--scrollback", "work"],
        ["snapshot", "--json", "--scrollback", "200", "--cells", "work"],
        ["send-keys", "bench", "C-u"],
        ["send-keys", "work", "make test", "Enter"],
        ["send-keys", "--socket", "/tmp/s", "work", "--json"],
        ["run", "bench", "true"],
        ["run", "--timeout", "120", "--json", "build", "cargo", "test"],
        ["run", "--force", "build", "echo", "it's"],
        ["wait", "--until", "passed", "--timeout", "120", "build"],
        ["wait", "--idle", "200", "--timeout", "10", "bench"],
        ["wait", "--regex", "^ok", "--json"],
        ["wait", "--prompt", "--timeout", "60", "build"],
        ["wait", "--exit", "--json", "@3"],
        # Seed 001's own examples: options after TARGET where no CMD/KEYS follows.
        ["snapshot", "build", "--json", "--scrollback", "200"],
        ["wait", "build", "--until", "test result:", "--timeout", "120"],
        ["send-keys", "--literal", "work", "Enter"],
        ["run", "--", "build", "echo", "--json"],
        # An option's value that looks like --scrollback is that value (hypothesis found it).
        ["snapshot", "--socket", "--scrollback"],
    ],
)
def test_the_usual_command_lines_take_the_quick_path(argv: list[str]) -> None:
    quick = parse(argv)
    assert quick is not None
    assert quick[1] == click_params(argv[0], argv[1:])


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--version", "x"],
        ["ls"],
        ["snapshot", "--help"],
        ["snapshot", "-h"],
        ["snapshot", "a", "b"],
        ["send-keys", "work"],
        ["run", "work"],
        ["wait", "--until", "a", "--regex", "b"],
        ["wait", "--timeout"],
        ["snapshot", "--timeout", "0"],
        ["snapshot", "--timeout", "1e3"],
        ["run", "build", "cargo test", "--json"],
        ["send-keys", "work", "x", "--timeout=3"],
    ],
)
def test_anything_else_goes_through_click(argv: list[str]) -> None:
    assert parse(argv) is None


def test_the_quick_verbs_are_the_click_verbs_callbacks() -> None:
    # The click commands delegate to the same functions the quick path calls.
    assert SPECS["snapshot"].verb is actions.snapshot
    assert set(SPECS) <= set(cli.commands)


def test_version_says_what_click_says(capsys: pytest.CaptureFixture[str]) -> None:
    from phux import __version__
    from phux.cli.main import run_cli

    assert run_cli(["--version"]) == 0
    quick = capsys.readouterr().out
    assert cli.main(["--version"], prog_name="phux", standalone_mode=False) == 0
    assert capsys.readouterr().out == quick == f"phux, version {__version__}\n"


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["run", "build", "cargo test", "--json"], "--json"),
        (["run", "build", "make", "--timeout", "5"], "--timeout"),
        (["send-keys", "work", "ls", "--socket=/tmp/s"], "--socket=/tmp/s"),
    ],
)
def test_an_option_word_after_the_target_of_run_or_send_keys_is_refused(
    argv: list[str], word: str
) -> None:
    with pytest.raises(click.UsageError) as info:
        cli.commands[argv[0]].make_context(argv[0], argv[1:])
    message = info.value.message
    assert repr(word) in message and "before TARGET" in message and "--" in message


def test_after_double_dash_option_words_are_literal() -> None:
    assert click_params("run", ["--", "build", "echo", "--json"]) == {
        "timeout": actions.RUN_TIMEOUT,
        "as_json": False,
        "force": False,
        "socket": None,
        "target": "build",
        "cmd": ("echo", "--json"),
    }


def test_a_number_after_scrollback_is_always_its_count() -> None:
    assert click_params("snapshot", ["--scrollback", "0"])["scrollback"] == 0  # type: ignore[index]
    assert click_params("snapshot", ["--scrollback", "0"])["target"] is None  # type: ignore[index]
    params = click_params("snapshot", ["7", "--scrollback"])
    assert params is not None and (params["target"], params["scrollback"]) == ("7", 0)


def test_the_quick_table_is_generated_from_click() -> None:
    from tools.gen_quick_table import QUICK_VERBS, main

    assert main(["--check"]) == 0, "run python -m tools.gen_quick_table"
    assert tuple(SPECS) == QUICK_VERBS

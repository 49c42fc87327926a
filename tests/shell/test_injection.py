"""Which panes get shell integration: shells only, interactive only, and never when opted out."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.server.shell_integration import SCRIPTS, inject, wanted

from .kit import Pane, ShellHost, shell_host

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def host() -> Iterator[ShellHost]:
    with shell_host() as h:
        yield h


def ran(pane: Pane, line: str) -> bytes:
    """Type ``line`` (which must print ok42) and wait for its output, without relying on marks."""
    pane.type(line + "\r")
    pane.read_until(lambda d: b"ok42" in d)
    return pane.data


def test_a_pane_opted_out_gets_no_marks(host: ShellHost) -> None:
    home = host.make_home("optout", {".bashrc": "PS1='$ '\n"})
    pane = host.spawn(["bash"], env={"HOME": str(home), "PHUX_SHELL_INTEGRATION": "0"})
    data = ran(pane, 'false; echo "[$PHUX_SHELL_INTEGRATION][$ENV]" ok$((6*7))')
    assert b"\x1b]133;" not in data and b"\x1b]7;" not in data
    assert b"[][] ok42" in data


def test_programs_that_are_not_interactive_shells_start_unchanged(host: ShellHost) -> None:
    pane = host.spawn(["cat"])
    data = ran(pane, "ok42")
    pane.type(b"\x04")
    assert b"\x1b]" not in data
    script = (
        "import os, sys; print(sys.argv[1:], 'ok' + '42', "
        "[k for k in os.environ if 'PHUX_' in k[:6] or k in ('ENV', 'ZDOTDIR')])"
    )
    pane = host.spawn(["python3", "-c", script, "a"])
    pane.read_until(lambda d: b"']\r\n" in d)
    assert b"['a'] ok42 ['PHUX_SOCKET', 'PHUX_TERMINAL']" in pane.data
    pane = host.spawn(["bash", "-c", 'echo "[$ENV][$-]" ok$((6*7))'])
    pane.read_until(lambda d: b"ok42" in d)
    assert b"[][hBc] ok42" in pane.data


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bash", "-c", "true"], None),
        (["bash", "script.sh"], None),
        (["bash", "--posix"], None),
        (["/bin/bash", "-l"], ["/bin/bash", "--posix", "--login"]),
        (["bash", "-il", "--norc"], ["bash", "--posix", "--login", "-i"]),
        (["zsh", "-f"], None),
        (["zsh", "-c", "true"], None),
        (["zsh", "-l"], ["zsh", "-l"]),
        (["fish", "-c", "true"], None),
        (["dash", "x.sh"], None),
        (["sh", "-i"], ["sh", "-i"]),
        (["python3"], None),
        (["bashful"], None),
    ],
)
def test_argv_rewrites(argv: list[str], expected: list[str] | None) -> None:
    env: dict[str, str] = {"ENV": "mine", "_PHUX_KEY": "from-the-caller"}
    start, facts = inject(argv, env)
    assert start == (argv if expected is None else expected)
    if expected is None:
        assert env == {"ENV": "mine"} and facts == {}
    else:
        # A fresh key for each pane, given to the shell and published as metadata.
        key = env["_PHUX_KEY"]
        assert len(key) == 32 and key != "from-the-caller"
        assert facts["phux.shell_key"] == key.encode()
        assert facts["phux.shell"] in (b"bash", b"zsh", b"fish", b"sh")
        assert inject(argv, dict(env))[1]["phux.shell_key"] != key.encode()


def test_opt_out_rules() -> None:
    assert wanted({}, True)
    assert not wanted({"PHUX_SHELL_INTEGRATION": "0"}, True)
    assert not wanted({}, False)
    assert wanted({"PHUX_SHELL_INTEGRATION": "1"}, False)
    assert not wanted({"PHUX_SHELL_INTEGRATION": "yes"}, False)


@pytest.mark.parametrize("how", ["env", "option"])
def test_server_wide_default_off(how: str) -> None:
    env = {"PHUX_SHELL_INTEGRATION": "0"} if how == "env" else {}
    args = () if how == "env" else ("--no-shell-integration",)
    with shell_host(env, *args) as h:
        home = h.make_home("h", {".bashrc": "PS1='$ '\n"})
        pane = h.spawn(["bash"], env={"HOME": str(home)})
        assert b"\x1b]133;" not in ran(pane, "echo ok$((6*7))")
        pane = h.spawn(["bash"], env={"HOME": str(home), "PHUX_SHELL_INTEGRATION": "1"})
        pane.wait_prompt(1)


def test_cli_new_no_shell_integration(host: ShellHost) -> None:
    home = host.make_home("cli", {".bashrc": "PS1='$ '\n"})
    for name, flag in (("plain", ["--no-shell-integration"]), ("marked", [])):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "phux",
                "new",
                "--json",
                "-s",
                name,
                "--socket",
                str(host.server.socket),
                *flag,
                "--",
                "bash",
            ],
            capture_output=True,
            check=True,
            timeout=30,
            env={**host.server.env, "HOME": str(home)},  # type: ignore[dict-item]
            cwd=home,
        )
        tid = json.loads(out.stdout)["terminal_id"]
        pane = host.attach(tid)
        data = ran(pane, "echo ok$((6*7))")
        assert (b"\x1b]133;A\x07" in data) == (not flag)


def test_every_script_is_package_data() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["phux"]
    package = SCRIPTS.parent
    files = [p for p in SCRIPTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert {p.name for p in files} >= {"phux.bash", ".zshenv", "phux.zsh", "phux.fish", "phux.sh"}
    for path in files:
        rel = path.relative_to(package)
        assert any(rel.match(pattern) for pattern in patterns), rel


def listed_metadata(host: ShellHost, tid: int) -> dict[str, bytes]:
    from phux.client.deadline import Deadline
    from phux.wire.frames import ListTerminals, TerminalList

    with host.server.connect() as conn:
        listing = conn.call_expect(
            lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(5.0)
        )
    info = next(t for t in listing.terminals if t.terminal == tid)
    return {m.key: m.value for m in info.metadata}


def test_the_key_is_the_server_s_and_never_reaches_the_user_s_commands(host: ShellHost) -> None:
    from phux.client.deadline import Deadline
    from phux.wire.frames import EnvVar, MetaEntry, Spawn, TerminalSpawned

    forged = [
        MetaEntry(key="phux.shell_key", value=b"f" * 32),
        MetaEntry(key="phux.shell", value=b"x"),
    ]
    home = host.make_home("keyed", {".bashrc": "PS1='$ '\necho \"rc[$_PHUX_KEY]\"\n"})
    with host.server.connect() as conn:
        ids = []
        for argv in (["cat"], ["bash"]):
            reply = conn.call_expect(
                lambda rid, argv=argv: Spawn(
                    request_id=rid,
                    argv=argv,
                    metadata=forged,
                    env=[
                        EnvVar(name="HOME", value=str(home)),
                        EnvVar(name="_PHUX_KEY", value="f" * 32),
                    ],
                    cwd=str(home),
                ),
                TerminalSpawned,
                Deadline.after(5.0),
            )
            ids.append(reply.terminal)
    cat, bash = (listed_metadata(host, tid) for tid in ids)
    # A pane the server did not integrate has no key, whatever the SPAWN said.
    assert "phux.shell_key" not in cat and "phux.shell" not in cat
    key = bash["phux.shell_key"]
    assert bash["phux.shell"] == b"bash" and len(key) == 32 and key != b"f" * 32
    pane = host.attach(ids[1])
    data = ran(pane, 'echo "cmd[$_PHUX_KEY][$(env | grep -c PHUX_KEY)]" ok$((6*7))')
    assert b"rc[]" in data and b"cmd[][0] ok42" in data
    # Every mark the shell printed is signed with its own key.
    raw = pane.raw
    marks = raw.count(b"\x1b]133;")
    assert marks >= 4 and raw.count(b";phux_k=" + key + b"\x07") == marks

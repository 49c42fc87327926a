"""Every test's phux state, and the HOME of what it starts, live in temporary directories.

A server a test starts without ``--log-file`` (an autostart, a test that only
gives a socket) writes its log and input audit under ``$XDG_STATE_HOME/phux``,
by default the user's real ``~/.local/state/phux``; the shells and programs
the tests drive write their own files under HOME (``.bash_history``,
``.viminfo``, fish's config). Each pytest process (each xdist worker) points
``XDG_STATE_HOME`` and ``HOME`` at temporary directories of its own before any
test runs, so whatever it starts inherits them; tests that need another value
still set their own.

The HOME is one fish has run in before (see FISH_COMPLETIONS): a fresh one makes
the first interactive fish start a man page parser that outlives the test.

Under ``CI=true`` the run needs every program the tests drive: a missing one fails
the run at its start instead of skipping its tests one by one (``.ci/run``
installs them), and tests that need root say in the summary that they did not run.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

FISH_COMPLETIONS = ".local/share/fish/generated_completions"
"""Where fish keeps the completions it generates from man pages. Without it, an
interactive fish starts (and disowns) a python that parses every man page into
it: half a minute of CPU that outlives the test, the server and the HOME. Every
HOME the tests give fish has it (tests/shell/kit.py ``settled_home``)."""

_STATE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    state = tempfile.mkdtemp(prefix="phux-test-state-")
    home = tempfile.mkdtemp(prefix="phux-test-home-")
    _STATE.extend((state, home))
    os.environ["XDG_STATE_HOME"] = state
    os.environ["HOME"] = home
    os.makedirs(os.path.join(home, FISH_COMPLETIONS))


def pytest_unconfigure(config: pytest.Config) -> None:
    for state in _STATE:
        shutil.rmtree(state, ignore_errors=True)


REQUIRED_PROGRAMS = ("bash", "zsh", "fish", "dash", "tmux", "vim", "less", "top", "python3")
"""What the tests drive; each skips its tests when missing, except under CI=true."""


def missing_programs() -> list[str]:
    return [program for program in REQUIRED_PROGRAMS if shutil.which(program) is None]


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") != "true":
        return
    missing = missing_programs()
    if missing:
        pytest.exit(
            f"CI=true but {', '.join(missing)} not installed: their tests would be skipped "
            "(.ci/run installs them)",
            returncode=1,
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.geteuid() != 0:
        rooted = [
            r
            for r in terminalreporter.stats.get("skipped", [])
            if "root" in str(getattr(r, "longrepr", ""))
        ]
        if rooted:
            terminalreporter.write_line(
                f"{len(rooted)} tests that need root did not run (not run as root): the "
                "two-user security tests (tests/attack, tests/server/test_security.py)",
                yellow=True,
            )

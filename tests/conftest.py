"""Every test's phux state, and the HOME of what it starts, live in temporary directories.

A server a test starts without ``--log-file`` (an autostart, a test that only
gives a socket) writes its log and input audit under ``$XDG_STATE_HOME/phux``,
by default the user's real ``~/.local/state/phux``; the shells and programs
the tests drive write their own files under HOME (``.bash_history``,
``.viminfo``, fish's config). Each pytest process (each xdist worker) points
``XDG_STATE_HOME`` and ``HOME`` at temporary directories of its own before any
test runs, so whatever it starts inherits them; tests that need another value
still set their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_STATE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    state = tempfile.mkdtemp(prefix="phux-test-state-")
    home = tempfile.mkdtemp(prefix="phux-test-home-")
    _STATE.extend((state, home))
    os.environ["XDG_STATE_HOME"] = state
    os.environ["HOME"] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    for state in _STATE:
        shutil.rmtree(state, ignore_errors=True)

"""Every test's phux state lives in a temporary directory.

A server a test starts without ``--log-file`` (an autostart, a test that only
gives a socket) writes its log and input audit under ``$XDG_STATE_HOME/phux``,
by default the user's real ``~/.local/state/phux``. Each pytest process (each
xdist worker) points ``XDG_STATE_HOME`` at a temporary directory of its own
before any test runs, so whatever it starts inherits that; tests that need
another value still set their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_STATE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    state = tempfile.mkdtemp(prefix="phux-test-state-")
    _STATE.append(state)
    os.environ["XDG_STATE_HOME"] = state


def pytest_unconfigure(config: pytest.Config) -> None:
    for state in _STATE:
        shutil.rmtree(state, ignore_errors=True)

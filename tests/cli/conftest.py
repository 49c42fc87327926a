"""Make the repository root importable so tests can use ``tools.*`` generators; one
CLI zygote per test process for the CLI calls of tests/cli/test_e2e.py's ``Phux``."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.shell.cli_fork import CliForker  # noqa: E402  (needs ROOT on sys.path)


@pytest.fixture(scope="session")
def cli_forker() -> Iterator[CliForker]:
    """A process that imported the CLI and forks one ``phux ARGS`` per call, each
    with the caller's environment and working directory (tests/shell/cli_fork.py):
    ~0.1 s of CPU less per call than a ``python -m phux`` of its own."""
    scratch = Path(tempfile.mkdtemp(prefix="phux-cli-zygote-", dir="/tmp"))
    forker = CliForker(dict(os.environ), scratch, scratch)
    try:
        yield forker
    finally:
        forker.close()
        shutil.rmtree(scratch, ignore_errors=True)

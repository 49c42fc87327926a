"""Under CI=true a missing program fails the run at its start (tests/conftest.py),
instead of skipping its tests quietly (issue 24 item 11)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REQUIRED_PROGRAMS, missing_programs

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_program_fails_a_ci_run(tmp_path: Path) -> None:
    if missing_programs():
        pytest.skip("needs every required program, to remove one")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in REQUIRED_PROGRAMS:
        if program != "fish":
            (bin_dir / program).symlink_to(shutil.which(program) or program)
    env = {**os.environ, "PATH": str(bin_dir)}
    proc = _pytest({**env, "CI": "true"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CI=true but fish not installed" in proc.stdout + proc.stderr
    # Without CI the same run goes on (its tests would skip instead).
    env.pop("CI", None)
    proc = _pytest(env)
    assert proc.returncode == 5, proc.stdout + proc.stderr  # no test selected


def _pytest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A pytest run that selects no test, so only its start is exercised (tests/conftest.py
    runs whatever plugins load: without the installed ones it starts in a quarter of
    the time)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*argv, "tests/test_runtime_paths.py", "-k", "no_test_has_this_name"],
        cwd=ROOT,
        env={**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import phux
from phux.engine import native_strip

ROOT = Path(__file__).resolve().parents[1]


def test_python_dash_m_reports_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "phux", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert phux.__version__ in out.stdout


def _wheel_names(tmp_path: Path, **env: str) -> set[str]:
    """The files of the wheel built from this tree (``env``: more of the build's
    environment).

    Built by the build-system's backend as installed here (the test extra holds it):
    an isolated build would download setuptools into a fresh environment every run."""
    (requirement,) = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"][
        "requires"
    ]
    backend, _, floor = requirement.partition(">=")
    assert backend == "setuptools", requirement
    assert int(version("setuptools").split(".")[0]) >= int(floor), version("setuptools")
    src = tmp_path / "src"
    # (without the editable install's compiled strip: the wheel's build compiles its own)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so")
    shutil.copytree(ROOT / "src", src, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, tmp_path / name)
    out = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(tmp_path),
        ],
        capture_output=True,
        check=True,
        timeout=300,
        env={**os.environ, **env},
    )
    (wheel,) = out.glob("phux-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def _native(names: set[str]) -> bool:
    return any(n.startswith("phux/engine/_strip.") and n.endswith(".so") for n in names)


def test_wheel_carries_the_package_data(tmp_path: Path) -> None:
    """The files read at run time through importlib.resources are in the wheel."""
    names = _wheel_names(tmp_path)
    wanted = {f"phux/skill/{level}.md" for level in ("quick", "agent", "full")}
    wanted |= {
        "phux/py.typed",
        "phux/shell_integration/bash/phux.bash",
        "phux/shell_integration/zsh/.zshenv",
        "phux/engine/_strip.pyi",
    }
    assert wanted <= names, sorted(wanted - names)
    # The native strip (optional: only where this install could compile it too).
    if native_strip.strip is not None:
        assert _native(names)


def test_a_wheel_builds_without_a_compiler(tmp_path: Path) -> None:
    """The native strip is optional: where no compiler runs, the wheel still builds,
    without it (phux then runs on the pure path; native_strip.strip is None)."""
    names = _wheel_names(tmp_path, CC="false", LDSHARED="false")
    assert "phux/engine/native_strip.py" in names
    assert not _native(names)

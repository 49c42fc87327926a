"""phux as a user installs it, for the benches that time whole CLI processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def installed_bin(root: Path) -> Path | None:
    """A fresh venv holding phux as a user installs it: the package and its runtime
    dependencies only (``pip install .``, no test or dev extras). None when pip
    cannot install it here (offline, say); the figures then come from the dev venv.

    This is the environment the targets are judged in: the dev venv also holds
    the test tools' dependencies (typing_extensions among them, which msgspec
    picks up and which drags in inspect), adding ~15 ms to every process that
    imports msgspec, which no installed phux pays.
    """
    venv = root / "installed"
    repo = Path(__file__).resolve().parents[2]
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(repo)],
            check=True,
            timeout=600,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"# no installed venv ({exc}); measuring the dev venv only", file=sys.stderr)
        return None
    return venv / "bin"

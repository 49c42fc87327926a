import subprocess
import sys

import phux


def test_python_dash_m_reports_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "phux", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert phux.__version__ in out.stdout

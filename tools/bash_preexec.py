"""The real bash-preexec for the shell-configuration tests (tests/shell/corpus.py).

bash-preexec (github.com/rcaloras/bash-preexec, MIT) is what atuin, bashhub,
starship and many dotfiles source for preexec/precmd hooks in bash. Debian 12 and
npm do not package it; the PyPI wheel of bashhub carries an unmodified copy. This
fetches that pinned wheel (its hash checked), takes the one file out, and puts it
in the virtualenv (``INSTALLED``), so the repository never holds a copy.

    python -m tools.bash_preexec      # tools/env.sh runs it when it sets up .venv
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "bashhub==3.2.0"
WHEEL_SHA256 = "ead5ae85479318d31eeebee21f18270a599a15e211ddef80db151064b270a754"
MEMBER = "bashhub/shell/deps/bash-preexec.sh"
INSTALLED = Path(sys.prefix) / "share" / "phux-tests" / "bash-preexec.sh"
"""Where the tests find it (in the virtualenv the tests run in)."""


def fetch(target: Path = INSTALLED) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(f"{WHEEL} --hash=sha256:{WHEEL_SHA256}\n")
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        only = ["--only-binary=:all:", "--require-hashes", "-r", str(requirements), "-d", tmp]
        subprocess.run([*pip, *only], check=True)
        [wheel] = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            text = archive.read(MEMBER)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text)
    return target


if __name__ == "__main__":
    print(f"bash-preexec: {fetch()}")

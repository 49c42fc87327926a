"""What the single-file generators share: write the file, or (``--check``) report it stale."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, text: str, *, check: bool, command: str) -> int:
    """Write ``text`` to ``path``; with ``check``, only say (exit status 1) whether
    ``path`` differs from it, naming ``command`` as the way to regenerate it."""
    if check:
        if not path.exists() or path.read_text() != text:
            root = Path(__file__).resolve().parent.parent
            print(f"stale: {path.relative_to(root)} (run {command})", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0

"""ARCHITECTURE.md's module map names every module of src/phux, and only those.

The layering itself is checked by import-linter (.importlinter, run by .ci/run);
this holds the map a newcomer reads module by module to the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "phux"
NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*\.py)`")


def mapped() -> dict[str, set[str]]:
    """Each `### `phux...`` heading of the map with the modules its items name."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Module map\n", 1)[1].split("\n## ", 1)[0]
    packages: dict[str, set[str]] = {}
    current: set[str] = set()
    item = ""  # an item may go on over indented lines; its names come before " — "
    for line in [*section.splitlines(), ""]:
        if line.startswith("  ") and item:
            item += " " + line.strip()
            continue
        current.update(NAME.findall(item.split(" — ", 1)[0]))
        item = line if line.startswith("- ") else ""
        heading = re.fullmatch(r"### `(phux(?:\.\w+)?)`.*", line)
        if heading:
            current = packages.setdefault(heading.group(1), set())
    return packages


def tree() -> dict[str, set[str]]:
    packages = {"phux": {p.name for p in SRC.glob("*.py")}}
    for init in SRC.glob("*/__init__.py"):
        modules = {p.name for p in init.parent.glob("*.py")} - {"__init__.py"}
        if modules:
            packages[f"phux.{init.parent.name}"] = modules
    return packages


def test_the_module_map_matches_the_tree() -> None:
    have, want = mapped(), tree()
    assert set(have) == set(want), "packages in the map differ from src/phux"
    for package, modules in want.items():
        assert have[package] == modules, (
            f"{package}: not in ARCHITECTURE.md's module map: {sorted(modules - have[package])}; "
            f"mapped but gone: {sorted(have[package] - modules)}"
        )

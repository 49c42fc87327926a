"""spec/frames.md is generated from the frame catalog and must not drift from it."""

from __future__ import annotations

import re
from pathlib import Path

from tools import spec_tables
from tools.gen_vectors import frame_name

from phux.wire import ALL_FRAMES

SPEC = Path(spec_tables.ROOT) / "spec"


def test_frames_md_is_current() -> None:
    assert spec_tables.FRAMES_MD.read_text() == spec_tables.render(), (
        "spec/frames.md is stale: run python -m tools.spec_tables"
    )


def test_every_frame_is_documented() -> None:
    text = spec_tables.FRAMES_MD.read_text()
    for cls in ALL_FRAMES:
        assert f"\n### {frame_name(cls)}\n\nType **0x{cls.TYPE:02X}**" in text


def test_prose_names_only_real_frames() -> None:
    """Upper-case frame-like names in the hand-written spec pages must exist in the catalog."""
    names = {frame_name(cls) for cls in ALL_FRAMES}
    bad = []
    for page in ("proto.md", "L1.md", "L3.md", "input.md"):
        text = (SPEC / page).read_text()
        for word in sorted(set(re.findall(r"`([A-Z][A-Z_]{2,})`", text))):
            if word not in names and word not in KNOWN_WORDS:
                bad.append(f"{page}: `{word}`")
    assert not bad, f"not frames, enum members or known terms: {bad}"


KNOWN_WORDS = {
    # enum members and other upper-case terms the prose quotes in backticks
    *(m.name for e in spec_tables.ENUMS for m in e[0]),
    "MUST",
    "SHOULD",
    "MAY",
    "TERM",
    "SHELL",
    "PHUX_SOCKET",
    "PHUX_TERMINAL",
    "SIGHUP",
    "SIGKILL",
    "SIGWINCH",
    "TIOCSWINSZ",
    "ECHO",
    "ICANON",
    "ISIG",
    "FIONREAD",
    "EAGAIN",
    "EIO",
    "EOF",
    "SO_PEERCRED",
    "UTF",
    "PATH",
    "XDG_RUNTIME_DIR",
}

"""The agent contract as a user trial found it broken (issue 14), end to end through
``python -m phux VERB`` against a real server, real vim and real shells."""

from __future__ import annotations

import time
from pathlib import Path

from .schemas import validate
from .test_e2e import Phux, phux  # noqa: F401  (the module-scoped server fixture)


def _wait_for(predicate, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_send_keys_types_colon_wq_into_vim(phux: Phux) -> None:  # noqa: F811
    """`send-keys P ':wq' Enter` saves, as tmux's does: literal text is typed, not
    pasted (vim turns bracketed paste on and would insert the text)."""
    target = phux.root / "vim-wq.txt"
    phux.new("vimwq", "vim", "--clean", "-n", str(target))
    res = phux("wait", "--until", "vim-wq.txt", "--timeout", "15", "vimwq")
    assert res.code == 0, res.err
    for keys in (["ihello from phux", "Escape"], [":wq", "Enter"]):
        res = phux("send-keys", "vimwq", *keys)
        assert res.code == 0, res.err
    _wait_for(target.exists)
    assert target.read_text() == "hello from phux\n"


def test_send_keys_search_in_vim_moves_the_cursor(phux: Phux) -> None:  # noqa: F811
    target = phux.root / "vim-search.txt"
    target.write_text("alpha\nbeta\nneedle here\n")
    phux.new("vimsearch", "vim", "--clean", "-n", str(target))
    assert phux("wait", "--until", "needle", "--timeout", "15", "vimsearch").code == 0
    assert phux("send-keys", "vimsearch", "/needle", "Enter").code == 0
    assert phux("send-keys", "vimsearch", "dd", ":wq", "Enter").code == 0
    _wait_for(lambda: "needle" not in target.read_text())
    assert target.read_text() == "alpha\nbeta\n"


def test_literal_flag_types_key_names_as_text(phux: Phux, tmp_path: Path) -> None:  # noqa: F811
    out = phux.root / "literal.txt"
    phux.new("literal", "sh", "-c", f"IFS= read -r line; printf '%s' \"$line\" > {out}")
    res = phux("send-keys", "-l", "literal", "Enter")
    assert res.code == 0, res.err
    assert phux("send-keys", "literal", "Enter").code == 0
    _wait_for(out.exists)
    _wait_for(lambda: out.read_text() == "Enter")


KITTY_PROGRAM = """
import os, sys, tty
tty.setraw(0)
os.write(1, b"\\x1b[>1u" + b"kitty-ready\\r\\n")  # disambiguate escape codes
got = b""
while not got.endswith(b"\\x1b[120;3u"):  # (M-x ends the test)
    chunk = os.read(0, 100)
    if not chunk:
        break
    got += chunk
with open(sys.argv[1], "wb") as out:
    out.write(got)
"""


def test_send_keys_speaks_the_kitty_keyboard_protocol_a_program_asked_for(phux: Phux) -> None:  # noqa: F811
    """A program that pushes kitty's "disambiguate" flag gets Escape, Ctrl and Alt
    keys and F3 as kitty sends them; a command line still types as text."""
    import sys

    out = phux.root / "kitty-keys.bin"
    phux.new("kittykeys", sys.executable, "-c", KITTY_PROGRAM, str(out))
    res = phux("wait", "--until", "kitty-ready", "--timeout", "15", "kittykeys")
    assert res.code == 0, res.err
    res = phux("send-keys", "kittykeys", "ab", "Escape", "C-a", "F3", "Enter", "M-x")
    assert res.code == 0, res.err
    _wait_for(lambda: out.exists() and out.stat().st_size > 0)
    assert out.read_bytes() == b"ab\x1b[27u\x1b[97;5u\x1b[13~\r\x1b[120;3u"


def test_snapshot_lists_the_hyperlinks_ls_prints(phux: Phux) -> None:  # noqa: F811
    folder = phux.root / "linked"
    folder.mkdir()
    (folder / "first.txt").write_text("")
    (folder / "second").mkdir()
    phux.new("links", "sh", "-c", f"ls -1 --hyperlink=always {folder}; echo listed; exec sleep 600")
    res = phux("wait", "--until", "listed", "--timeout", "15", "links")
    assert res.code == 0, res.err
    res = phux("snapshot", "--json", "links")
    assert res.code == 0, res.err
    doc = res.json()
    validate("screen_state", doc)
    links = [(x["row"], x["col"], x["width"], x["uri"].rsplit("/", 1)[-1]) for x in doc["links"]]
    assert links == [(0, 0, 9, "first.txt"), (1, 0, 6, "second")]
    assert all(x["uri"].startswith("file://") for x in doc["links"])
    phux("kill", "links")

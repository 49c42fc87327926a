"""The agent contract as a user trial found it broken (issue 14), end to end through
``python -m phux VERB`` against a real server, real vim and real shells."""

from __future__ import annotations

import time
from pathlib import Path

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

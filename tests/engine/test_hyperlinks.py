"""OSC 8 hyperlinks in ScreenState: ``links`` and the runs' ``link``.

As the OSC 8 specification (egmontkob's "Hyperlinks in terminal emulators",
which kitty, VTE, iTerm2, WezTerm and tmux 3.1+ follow) says:
``OSC 8 ; params ; URI ST`` opens a link, ``OSC 8 ; ; ST`` closes it; the text
drawn in between is the link; ``params`` are ``key=value`` pairs separated by
``:``, of which ``id`` ties cells drawn apart into one link; SGR does not
close a link; erased cells are not links.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint

CI = os.environ.get("CI") == "true"


def links(t: Terminal) -> list[dict[str, object]]:
    result: list[dict[str, object]] = t.project_data().get("links", [])
    return result


def test_a_link_covers_the_text_drawn_while_it_is_open() -> None:
    t = Terminal(30, 3, history=0)
    t.feed(b"see \x1b]8;;https://example.com/a\x1b\\the docs\x1b]8;;\x1b\\ now")
    assert links(t) == [{"row": 0, "col": 4, "width": 8, "uri": "https://example.com/a"}]
    assert t.project().links is not None
    assert t.project().links[0].uri == "https://example.com/a"  # type: ignore[index]


def test_id_params_sgr_and_rows() -> None:
    t = Terminal(10, 3, history=0)
    t.feed(
        b"\x1b]8;foo=1:id=x7;file:///tmp/f\x07ab\x1b[0;1mcd\x1b[m" + b"efghijkl" + b"\x1b]8;;\x07"
    )
    assert links(t) == [
        {"row": 0, "col": 0, "width": 10, "uri": "file:///tmp/f", "id": "x7"},
        {"row": 1, "col": 0, "width": 2, "uri": "file:///tmp/f", "id": "x7"},
    ]


def test_adjacent_links_stay_apart_and_erasing_removes_a_link() -> None:
    t = Terminal(20, 2, history=0)
    t.feed(b"\x1b]8;;a:1\x07ab\x1b]8;;a:2\x07cd\x1b]8;;\x07")
    assert [(x["col"], x["width"], x["uri"]) for x in links(t)] == [(0, 2, "a:1"), (2, 2, "a:2")]
    t.feed(b"\x1b[1;2H\x1b[K")
    assert [(x["col"], x["width"], x["uri"]) for x in links(t)] == [(0, 1, "a:1")]
    t.feed(b"\x1b[2J")
    assert "links" not in t.project_data()


def test_styles_carry_the_link() -> None:
    t = Terminal(20, 2, history=0)
    t.feed(b"\x1b]8;;https://x.test/\x07\x1b[31mred\x1b[mplain\x1b]8;;\x07")
    runs = t.project_data(cells=True)["styles"]
    assert [(r["text"], r["style"]) for r in runs] == [
        ("red", {"fg": {"kind": "palette", "index": 1}, "link": "https://x.test/"}),
        ("plain", {"link": "https://x.test/"}),
    ]


def test_links_survive_a_checkpoint_and_an_open_link_stays_open() -> None:
    t = Terminal(12, 3, history=5)
    t.feed(
        b"".join(b"\x1b]8;id=%d;file:///f%d\x07f%d\x1b]8;;\x07\r\n" % (i, i, i) for i in range(5))
    )
    t.feed(b"\x1b[1m\x1b]8;;https://open\x07op")
    fresh = Terminal(12, 3, history=5)
    fresh.feed(write_checkpoint(t))
    assert links(fresh) == links(t)
    assert fresh.project_data(cells=True)["styles"] == t.project_data(cells=True)["styles"]
    fresh.feed(b"en")
    t.feed(b"en")
    assert links(fresh) == links(t)


def test_a_flood_of_links_takes_the_bulk_path_to_the_same_screen() -> None:
    rows = b"".join(
        b"\x1b[01;34m\x1b]8;;file:///d/%d\x1b\\name%d\x1b]8;;\x1b\\\x1b[0m \r\n" % (i, i)
        for i in range(3000)
    )
    fast = Terminal(40, 10, history=100)
    fast.feed(rows)
    slow = Terminal(40, 10, history=100)
    slow.stream.bulk = False
    slow.feed(rows)
    assert links(fast) == links(slow)
    assert links(fast)[-1] == {"row": 8, "col": 0, "width": 8, "uri": "file:///d/2999"}
    assert write_checkpoint(fast) == write_checkpoint(slow)


@pytest.mark.skipif(shutil.which("ls") is None, reason="no ls")
def test_ls_hyperlink(tmp_path: Path) -> None:
    for name in ("alpha", "beta.txt"):
        (tmp_path / name).write_text("")
    out = subprocess.run(
        ["ls", "--hyperlink=always", "--color=always", "-1", str(tmp_path)],
        capture_output=True,
        check=True,
        timeout=10,
    ).stdout
    t = Terminal(80, 5, history=0)
    t.feed(out.replace(b"\n", b"\r\n"))
    found = links(t)
    assert [(x["row"], x["col"], x["width"]) for x in found] == [(0, 0, 5), (1, 0, 8)]
    assert all(str(x["uri"]).startswith("file://") for x in found)
    assert str(found[1]["uri"]).endswith("/beta.txt")


def test_gcc_diagnostics_link_their_options(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        if CI:
            pytest.fail("gcc is missing under CI")
        pytest.skip("no gcc")
    src = tmp_path / "w.c"
    src.write_text("int main(void) { return; }\n")
    err = subprocess.run(
        [
            "gcc",
            "-Wall",
            "-fdiagnostics-color=always",
            "-fdiagnostics-urls=always",
            "-c",
            str(src),
            "-o",
            os.devnull,
        ],
        capture_output=True,
        timeout=60,
    ).stderr
    t = Terminal(200, 10, history=0)
    t.feed(err.replace(b"\n", b"\r\n"))
    found = links(t)
    assert found, err
    assert any("gcc.gnu.org" in str(x["uri"]) and x["width"] == len("-Wreturn-type") for x in found)

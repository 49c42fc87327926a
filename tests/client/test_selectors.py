"""Selector grammar and resolution over a TERMINAL_LIST snapshot (no server needed)."""

from __future__ import annotations

import pytest

from phux.client.errors import LastNotAvailable, SelectorSyntax, TargetNotFound
from phux.client.selectors import (
    ById,
    ByTag,
    Current,
    Last,
    SessionSel,
    Snapshot,
    parse_selector,
    resolve,
    validate_session_name,
)
from phux.wire.frames import MetaEntry, TerminalInfo


def term(tid: int, alive: bool = True, **meta: str) -> TerminalInfo:
    entries = [MetaEntry(key="phux." + k, value=v.encode()) for k, v in meta.items()]
    return TerminalInfo(
        terminal=tid, pid=100 + tid, cols=80, rows=24, alive=alive, metadata=entries
    )


def snap() -> Snapshot:
    return Snapshot.from_wire(
        [
            term(1, session="work", window="0", pane="0", focus_ms="10"),
            term(2, session="work", window="0", pane="1", focus_ms="50"),
            term(3, session="work", window="1", pane="0", window_name="logs", tags="build,x"),
            term(4, session="play", window="0", pane="0", focus_ms="30"),
            term(5, session="idle", window="0", pane="0"),
            term(6, session="idle", window="0", pane="1"),
            term(7, alive=False, session="gone", window="0", pane="0"),
            term(8, tags="build"),
        ]
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (".", Current()),
        ("=", Last()),
        ("@7", ById(terminal=7)),
        ("#build", ByTag(tag="build")),
        ("work", SessionSel(session="work")),
        ("work:1", SessionSel(session="work", window=1)),
        ("work:logs", SessionSel(session="work", window="logs")),
        ("work:0.1", SessionSel(session="work", window=0, pane=1)),
        ("work:logs.0", SessionSel(session="work", window="logs", pane=0)),
        ("0", SessionSel(session="0")),
    ],
)
def test_parse(text: str, parsed: object) -> None:
    assert parse_selector(text) == parsed


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("@", "terminal id"),
        ("@x1", "terminal id"),
        ("@0", "1..4294967295"),
        ("#", "tag"),
        ("work:", "missing window"),
        (":1", "missing session"),
        ("work:0.x", "pane after"),
        ("work:0.1.2", "pane after"),
        ("work:.1", "missing window"),
        ("a.b", "cannot contain"),
        (" work", "whitespace"),
        ("@@1", "terminal id"),
    ],
)
def test_parse_errors(text: str, needle: str) -> None:
    with pytest.raises(SelectorSyntax) as info:
        parse_selector(text)
    assert needle in info.value.message
    assert info.value.exit_code == 1
    assert info.value.code == "bad_selector"


def test_resolution() -> None:
    s = snap()
    env: dict[str, str] = {}
    assert resolve("work", s, env).terminal == 2  # focused pane of the session
    assert resolve("work:0", s, env).terminal == 2
    assert resolve("work:1", s, env).terminal == 3
    assert resolve("work:logs", s, env).terminal == 3
    assert resolve("work:0.0", s, env).terminal == 1
    assert resolve("idle", s, env).terminal == 5  # no focus: first in order
    assert resolve("@6", s, env).terminal == 6
    assert resolve("@7", s, env).terminal == 7  # closed but retained: by id only
    assert resolve("#build", s, env).terminal in (3, 8)
    assert resolve(".", s, env).terminal == 2  # most recently focused session: work
    assert resolve(None, s, env).terminal == 2
    assert resolve(".", s, {"PHUX_TERMINAL": "5"}).terminal == 5
    assert resolve(".", s, {"PHUX_TERMINAL": "99"}).terminal == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nope", "no session named 'nope'"),
        ("gone:1", "no window 1"),
        ("work:9", "no window 9"),
        ("work:zzz", "window named 'zzz'"),
        ("work:0.9", "no pane 9"),
        ("@99", "no terminal @99"),
        ("#nothing", "tagged 'nothing'"),
    ],
)
def test_misses(text: str, needle: str) -> None:
    with pytest.raises(TargetNotFound) as info:
        resolve(text, snap(), {})
    assert needle in info.value.message
    assert info.value.code == "target_not_found"


def test_a_retained_sessions_name_reaches_its_closed_pane() -> None:
    """L3.md §2: no live session named `gone`, so the name selects its retained pane."""
    assert resolve("gone", snap(), {}).terminal == 7
    assert resolve("gone:0.0", snap(), {}).terminal == 7


def test_last_is_the_pane_used_before_the_last_one() -> None:
    """`=` is tmux's last pane: the second greatest phux.focus_ms among live panes."""
    assert resolve("=", snap(), {}).terminal == 4
    with pytest.raises(LastNotAvailable) as info:
        resolve("=", Snapshot.from_wire([term(1, session="a", focus_ms="5")]), {})
    assert info.value.code == "no_last_pane"


def test_current_without_sessions() -> None:
    with pytest.raises(TargetNotFound):
        resolve(".", Snapshot([]), {})


def test_sessions_listing() -> None:
    sessions = snap().sessions()
    assert list(sessions) == ["idle", "play", "work"]
    assert [p.terminal for p in sessions["work"]] == [1, 2, 3]


@pytest.mark.parametrize("name", ["", "a:b", "a.b", "a b", "@x", "#x", "=x", "a\x01"])
def test_bad_session_names(name: str) -> None:
    assert validate_session_name(name) is not None


def test_good_session_names() -> None:
    for name in ["work", "0", "my-session", "ü"]:
        assert validate_session_name(name) is None


def test_a_tag_matches_whole_tags_only() -> None:
    """``#build`` names panes tagged ``build``, not ``builder`` or ``rebuild``."""
    s = Snapshot.from_wire([term(1, tags="builder,rebuild"), term(2, tags="x,build,y")])
    assert resolve("#build", s, {}).terminal == 2
    only_builder = Snapshot.from_wire([term(1, tags="builder")])
    with pytest.raises(TargetNotFound, match="tagged 'build'"):
        resolve("#build", only_builder, {})

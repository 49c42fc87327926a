"""Key names to bytes, per terminal modes (no server needed)."""

from __future__ import annotations

import pytest

from phux.client.errors import UnknownKey
from phux.client.keys import KeyModes, encode_keys, for_foreground, key_bytes, needs_modes
from phux.wire.frames import Foreground

APP = KeyModes(app_cursor=True)
BRACKETED = KeyModes(bracketed_paste=True)


@pytest.mark.parametrize(
    ("name", "normal", "app"),
    [
        ("Enter", b"\r", b"\r"),
        ("Tab", b"\t", b"\t"),
        ("BTab", b"\x1b[Z", b"\x1b[Z"),
        ("Escape", b"\x1b", b"\x1b"),
        ("Space", b" ", b" "),
        ("BSpace", b"\x7f", b"\x7f"),
        ("Up", b"\x1b[A", b"\x1bOA"),
        ("Down", b"\x1b[B", b"\x1bOB"),
        ("Right", b"\x1b[C", b"\x1bOC"),
        ("Left", b"\x1b[D", b"\x1bOD"),
        ("Home", b"\x1b[H", b"\x1bOH"),
        ("End", b"\x1b[F", b"\x1bOF"),
        ("PageUp", b"\x1b[5~", b"\x1b[5~"),
        ("PPage", b"\x1b[5~", b"\x1b[5~"),
        ("PageDown", b"\x1b[6~", b"\x1b[6~"),
        ("NPage", b"\x1b[6~", b"\x1b[6~"),
        ("IC", b"\x1b[2~", b"\x1b[2~"),
        ("Insert", b"\x1b[2~", b"\x1b[2~"),
        ("DC", b"\x1b[3~", b"\x1b[3~"),
        ("Delete", b"\x1b[3~", b"\x1b[3~"),
        ("F1", b"\x1bOP", b"\x1bOP"),
        ("F4", b"\x1bOS", b"\x1bOS"),
        ("F5", b"\x1b[15~", b"\x1b[15~"),
        ("F8", b"\x1b[19~", b"\x1b[19~"),
        ("F10", b"\x1b[21~", b"\x1b[21~"),
        ("F11", b"\x1b[23~", b"\x1b[23~"),
        ("F12", b"\x1b[24~", b"\x1b[24~"),
        ("C-c", b"\x03", b"\x03"),
        ("C-C", b"\x03", b"\x03"),
        ("C-a", b"\x01", b"\x01"),
        ("C-Space", b"\x00", b"\x00"),
        ("C-@", b"\x00", b"\x00"),
        ("C-?", b"\x7f", b"\x7f"),
        ("C-[", b"\x1b", b"\x1b"),
        ("M-x", b"\x1bx", b"\x1bx"),
        ("C-M-x", b"\x1b\x18", b"\x1b\x18"),
        ("M-C-x", b"\x1b\x18", b"\x1b\x18"),
        ("S-Tab", b"\x1b[Z", b"\x1b[Z"),
        ("C-Up", b"\x1b[1;5A", b"\x1b[1;5A"),
        ("M-Left", b"\x1b[1;3D", b"\x1b[1;3D"),
        ("S-F5", b"\x1b[15;2~", b"\x1b[15;2~"),
        ("C-F1", b"\x1b[1;5P", b"\x1b[1;5P"),
        ("M-Enter", b"\x1b\r", b"\x1b\r"),
    ],
)
def test_named_keys(name: str, normal: bytes, app: bytes) -> None:
    assert key_bytes(name) == normal
    assert key_bytes(name, APP) == app


@pytest.mark.parametrize(
    "literal", ["ls -la", "hello", "enter", "well-known", "é", "-", "C", "x-y"]
)
def test_literals(literal: str) -> None:
    assert key_bytes(literal) is None


@pytest.mark.parametrize(
    ("token", "needle"),
    [
        ("C-", "modifier needs a key"),
        ("C-M-", "modifier needs a key"),
        ("F13", "F1 to F12"),
        ("F0", "F1 to F12"),
        ("Foo-x", "not a modifier"),
        ("C-Foo", "not a key name"),
        ("C-é", "no control character"),
        ("C-1", "no control character"),
    ],
)
def test_unknown_keys(token: str, needle: str) -> None:
    with pytest.raises(UnknownKey) as info:
        key_bytes(token)
    assert needle in info.value.message
    assert info.value.code == "unknown_key"


def test_literal_text_is_typed_not_pasted() -> None:
    # vim turns bracketed paste on: a pasted ":wq" would be inserted, not run.
    assert encode_keys([":wq", "Enter"], BRACKETED) == b":wq\r"
    assert encode_keys(["echo ", "hi", "Enter"]) == b"echo hi\r"


def test_one_write_for_the_whole_call() -> None:
    assert encode_keys(["C-c", "abc", "Up"], APP) == b"\x03abc\x1bOA"
    assert encode_keys(["x"]) == b"x"
    assert encode_keys(["Enter", "Enter"]) == b"\r\r"


def test_literal_mode_types_key_names_as_text() -> None:
    assert encode_keys(["Enter", " C-c"], literal=True) == b"Enter C-c"


def test_needs_modes() -> None:
    assert not needs_modes(["C-c"])
    assert needs_modes(["Up"], LINE_EDITOR)
    for keys in (["abc"], ["Enter"], ["abc", "Enter"]):
        assert not needs_modes(keys, LINE_EDITOR), keys
        assert needs_modes(keys, RAW), keys


PASTE = KeyModes(bracketed_paste=True)


@pytest.mark.parametrize(
    ("text", "body"),
    [
        (b"a\x1b[201~rm -rf ~\r", b"arm -rf ~\r"),  # an early end: the rest typed as keys
        (b"a\x1b[200~b", b"ab"),
        # Delimiters that a single removal would leave behind, formed around another.
        (b"x\x1b[20\x1b[201~1~y", b"xy"),
        (b"x\x1b[2\x1b[200~01~y", b"xy"),
        (b"\x1b[20\x1b[20\x1b[201~1~1~", b""),
    ],
)
def test_a_paste_cannot_end_itself_early(text: bytes, body: bytes) -> None:
    """Text holding the paste's own delimiters (a paste injection) is pasted without
    them, so the program sees one paste whose end is the real one."""
    from phux.client.keys import paste_bytes

    assert paste_bytes(text, PASTE) == b"\x1b[200~" + body + b"\x1b[201~"
    assert paste_bytes(text, KeyModes()) == text  # no bracketed paste: sent unchanged


KITTY = KeyModes(kitty=1)


@pytest.mark.parametrize(
    ("keys", "want"),
    [
        # As kitty's keyboard protocol specifies "disambiguate escape codes" (flag 1).
        (["Escape"], b"\x1b[27u"),
        (["C-a"], b"\x1b[97;5u"),
        (["M-x"], b"\x1b[120;3u"),
        (["C-M-x"], b"\x1b[120;7u"),
        (["C-S-i"], b"\x1b[105;6u"),
        (["M-S-a"], b"\x1b[97;4u"),
        (["C-c", "C-z"], b"\x03\x1a"),
        (["C-["], b"\x1b[91;5u"),
        (["M-Escape"], b"\x1b[27;3u"),
        (["S-Enter"], b"\x1b[13;2u"),
        (["C-Enter"], b"\x1b[13;5u"),
        (["BTab"], b"\x1b[9;2u"),
        (["C-Space"], b"\x1b[32;5u"),
        (["M-BSpace"], b"\x1b[127;3u"),
        (["F1", "F2", "F3", "F4"], b"\x1b[P\x1b[Q\x1b[13~\x1b[S"),
        (["C-F1", "S-F3"], b"\x1b[1;5P\x1b[13;2~"),
        # Unchanged: text, shifted text, Enter, Tab, Backspace, Space, arrows, tilde keys.
        (["ls -l", "Enter", "Tab", "BSpace", "Space", "S-a"], b"ls -l\r\t\x7f A"),
        (["Up", "C-Left", "F5", "S-Delete"], b"\x1b[A\x1b[1;5D\x1b[15~\x1b[3;2~"),
    ],
)
def test_kitty_disambiguate(keys: list[str], want: bytes) -> None:
    assert encode_keys(keys, KITTY) == want


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        # "Report all keys as escape codes" (8) is a superset of disambiguate, and
        # makes a shifted letter a key event: its unshifted key and Shift.
        (8, b"\x1b[97;2u\x1b[97;6u\x1b[27u\x1b[97;5u\x1b[49;2u"),
        # "Report alternate keys" (4): the shifted key after a colon.
        (8 | 4, b"\x1b[97:65;2u\x1b[97:65;6u\x1b[27u\x1b[97;5u\x1b[49;2u"),
        # "Report associated text" (16): the text a key types (Ctrl types none).
        # (S-1 types 1: what Shift does to a digit depends on a layout phux does not know.)
        (8 | 16, b"\x1b[97;2;65u\x1b[97;6u\x1b[27u\x1b[97;5u\x1b[49;2;49u"),
        (29, b"\x1b[97:65;2;65u\x1b[97:65;6u\x1b[27u\x1b[97;5u\x1b[49;2;49u"),
        # Every flag: "report event types" (2) adds each key's release, with no text.
        (
            31,
            b"\x1b[97:65;2;65u\x1b[97:65;2:3u\x1b[97:65;6u\x1b[97:65;6:3u"
            b"\x1b[27u\x1b[27;1:3u\x1b[97;5u\x1b[97;5:3u\x1b[49;2;49u\x1b[49;2:3u",
        ),
        # Without 8 a shifted letter is text; 4 still reports C-S-a's shifted key.
        (1 | 4, b"A\x1b[97:65;6u\x1b[27u\x1b[97;5u1"),
    ],
)
def test_kitty_all_keys_alternate_keys_and_text(flags: int, want: bytes) -> None:
    keys = ["S-a", "C-S-a", "Escape", "C-a", "S-1"]
    assert encode_keys(keys, KeyModes(kitty=flags)) == want


LINE_EDITOR = Foreground(pgrp=7, name="bash", echo=False, canonical=False, isig=True)
"""A shell at its prompt: readline (and ZLE, fish, a Python REPL) keep ISIG on."""
RAW = Foreground(pgrp=8, name="python3", echo=False, canonical=False, isig=False)
"""A raw program (Textual, vim): the kind that pushes kitty's flags 2 and 8."""
CANONICAL = Foreground(pgrp=9, name="cat", echo=True, canonical=True, isig=True)


@pytest.mark.parametrize(
    ("flags", "keys", "want"),
    [
        # "Report event types" (2): each key's release follows its press, as kitty sends
        # it (CSI code ; mods:3 u), a letter's too (its press is its text) ...
        (2, ["a"], b"a\x1b[97;1:3u"),
        (2, ["S-a"], b"A\x1b[97;2:3u"),
        (2 | 4, ["S-a"], b"A\x1b[97:65;2:3u"),
        (2, ["C-a", "M-x"], b"\x01\x1b[97;5:3u\x1bx\x1b[120;3:3u"),
        (1 | 2, ["C-a"], b"\x1b[97;5u\x1b[97;5:3u"),
        (1 | 2, ["Escape"], b"\x1b[27u\x1b[27;1:3u"),
        (
            2,
            ["Up", "C-Up", "F5", "F1"],
            b"\x1b[A\x1b[1;1:3A\x1b[1;5A\x1b[1;5:3A\x1b[15~\x1b[15;1:3~\x1b[P\x1b[1;1:3P",
        ),
        (2, ["BTab", "F3"], b"\x1b[9;2u\x1b[9;2:3u\x1b[13~\x1b[13;1:3~"),
        # ... but Enter, Tab and Backspace alone keep their bytes and have no release
        # unless every key is reported (8), and Escape alone without 1 or 8 neither.
        (1 | 2, ["Enter", "Tab", "BSpace"], b"\r\t\x7f"),
        (2, ["Escape"], b"\x1b"),
        (1 | 2, ["S-Enter"], b"\x1b[13;2u\x1b[13;2:3u"),
        (2 | 8, ["Enter"], b"\x1b[13u\x1b[13;1:3u"),
        (2 | 8 | 16, ["a"], b"\x1b[97;;97u\x1b[97;1:3u"),
        # The interrupt keys stay the bytes a tty turns into signals: no release.
        (31, ["C-c", "C-\\", "C-z"], b"\x03\x1c\x1a"),
        # "Report all keys as escape codes" (8): text key by key, Enter, Tab, Backspace.
        (
            8,
            ["ls", "Enter", "Tab", "BSpace", "Space"],
            b"\x1b[108u\x1b[115u\x1b[13u\x1b[9u\x1b[127u\x1b[32u",
        ),
        # ... with "report associated text" (16) the text the key types.
        (8 | 16, ["ls", "Enter", "Space"], b"\x1b[108;;108u\x1b[115;;115u\x1b[13u\x1b[32;;32u"),
        (8 | 16, ["Ab"], b"\x1b[97;2;65u\x1b[98;;98u"),
        (8 | 4, ["Ab"], b"\x1b[97:65;2u\x1b[98u"),
        # Text a US keyboard types with neither one key nor Shift and a letter: as an
        # input method's text, plain UTF-8.
        (8 | 16, ["é!", "x"], "é!".encode() + b"\x1b[120;;120u"),
        (8, ["C-Space", "M-Space", "S-Space"], b"\x1b[32;5u\x1b[32;3u\x1b[32;2u"),
        (1, ["S-Space", "C-Space"], b" \x1b[32;5u"),
        # Flag 4 or 16 alone changes nothing a send-keys call types.
        (4, ["Escape", "C-a", "ab", "Enter", "F3"], b"\x1b\x01ab\r\x1bOR"),
        (16, ["Escape", "C-a", "ab", "Enter", "F3"], b"\x1b\x01ab\r\x1bOR"),
    ],
)
def test_kitty_event_types_and_all_keys(flags: int, keys: list[str], want: bytes) -> None:
    assert encode_keys(keys, KeyModes(kitty=flags)) == want


def test_kitty_keys_ignore_application_cursor_mode() -> None:
    """Under the protocol kitty sends the arrows as CSI A whatever DECCKM says."""
    for flags in (1, 8):
        assert (
            encode_keys(["Up", "Home"], KeyModes(app_cursor=True, kitty=flags)) == b"\x1b[A\x1b[H"
        )
    events = KeyModes(app_cursor=True, kitty=2)
    assert encode_keys(["Up"], events) == b"\x1b[A\x1b[1;1:3A"
    assert encode_keys(["Up"], KeyModes(app_cursor=True, kitty=4)) == b"\x1bOA"


def test_literal_words_are_typed_key_by_key_under_all_keys() -> None:
    assert encode_keys(["Enter"], KeyModes(kitty=8), literal=True) == (
        b"\x1b[101;2u\x1b[110u\x1b[116u\x1b[101u\x1b[114u"
    )


@pytest.mark.parametrize("fg", [LINE_EDITOR, CANONICAL])
def test_a_foreground_reading_lines_types_text_the_legacy_way(fg: Foreground) -> None:
    """A shell's line editor or a canonical tty gets text, Enter, Tab and Backspace
    as bytes whatever flags a program left pushed (flags 2, 8 and 16 dropped), and
    costs no look at the modes; the keys 1 and 4 change still look."""
    left = for_foreground(KeyModes(app_cursor=True, kitty=31), fg)
    assert left == KeyModes(app_cursor=True, kitty=1 | 4)
    assert encode_keys(["echo hi", "Enter"], left) == b"echo hi\r"
    plain = ["echo hi", "Enter", "Tab", "BSpace", "Space", "PageUp", "F5", "C-c"]
    assert not needs_modes(plain, fg)
    assert not needs_modes(["echo", "Enter"], fg, literal=True)
    for keys in (["Escape"], ["C-a"], ["M-x"], ["F3"], ["BTab"], ["Up"]):
        assert needs_modes(keys, fg), keys


def test_a_raw_program_gets_every_key_the_way_it_asked() -> None:
    assert for_foreground(KeyModes(kitty=31), RAW) == KeyModes(kitty=31)
    assert for_foreground(KeyModes(kitty=31), None) == KeyModes(kitty=31)
    for fg in (RAW, None):  # (None: the foreground is unknown)
        for keys in (["echo hi"], ["Enter"], ["Tab"], ["BSpace"], ["Space"], ["F5"]):
            assert needs_modes(keys, fg), keys
        assert needs_modes(["echo"], fg, literal=True)
        assert not needs_modes(["C-c", "C-z"], fg)


def test_a_pane_without_kitty_flags_costs_no_import_of_their_encoder() -> None:
    """Typing into a pane no program pushed flags to (a shell, the common case) does not
    import phux.client.kitty_keys: a module more on every send-keys call's path."""
    import sys

    from phux.client import keys, kitty_keys

    assert kitty_keys.KITTY_EVENTS | kitty_keys.KITTY_ALL_KEYS | kitty_keys.KITTY_TEXT == (
        keys._RAW_ONLY
    )
    typed = ["echo hi", "Enter", "Tab", "Up", "C-a", "M-x", "S-F5", "Escape", "C-c"]
    saved = sys.modules.pop("phux.client.kitty_keys")
    try:
        encode_keys(typed, APP)
        encode_keys(["echo hi"], KeyModes(kitty=1), literal=True)  # (1 leaves text alone)
        assert "phux.client.kitty_keys" not in sys.modules
        assert encode_keys(["C-a"], KeyModes(kitty=1)) == b"\x1b[97;5u"
    finally:
        sys.modules["phux.client.kitty_keys"] = saved

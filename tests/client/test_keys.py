"""Key names to bytes, per terminal modes (no server needed)."""

from __future__ import annotations

import pytest

from phux.client.errors import UnknownKey
from phux.client.keys import KeyModes, encode_keys, key_bytes, needs_modes

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
    assert not needs_modes(["abc"])
    assert not needs_modes(["Enter"])
    assert needs_modes(["Up"])
    assert not needs_modes(["abc", "Enter"])


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
        (8 | 16, b"\x1b[97;2;65u\x1b[97;6u\x1b[27u\x1b[97;5u\x1b[49;2u"),
        (31, b"\x1b[97:65;2;65u\x1b[97:65;6u\x1b[27u\x1b[97;5u\x1b[49;2u"),
        # Without 8 a shifted letter is text; 4 still reports C-S-a's shifted key.
        (1 | 4, b"A\x1b[97:65;6u\x1b[27u\x1b[97;5u1"),
    ],
)
def test_kitty_all_keys_alternate_keys_and_text(flags: int, want: bytes) -> None:
    keys = ["S-a", "C-S-a", "Escape", "C-a", "S-1"]
    assert encode_keys(keys, KeyModes(kitty=flags)) == want
    # Typed without a look at the modes, under every flag: text, Enter, Tab,
    # Backspace and Space, and the interrupt keys.
    plain = ["ls -l", "Enter", "Tab", "BSpace", "Space", "C-c"]
    assert encode_keys(plain, KeyModes(kitty=flags)) == b"ls -l\r\t\x7f \x03"


def test_kitty_flags_without_disambiguate_keep_the_legacy_encoding() -> None:
    keys = ["Escape", "C-a", "M-x", "F3", "BTab"]
    assert encode_keys(keys, KeyModes(kitty=2)) == encode_keys(keys)


def test_the_modes_are_looked_at_for_every_key_kitty_changes() -> None:
    from phux.client.keys import needs_modes

    for keys in (["Escape"], ["C-a"], ["M-x"], ["F3"], ["BTab"], ["Up"]):
        assert needs_modes(keys), keys
    assert not needs_modes(["echo hi", "Enter", "Tab", "BSpace", "Space"])

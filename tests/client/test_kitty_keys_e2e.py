"""send-keys into real programs that pushed kitty keyboard flags, on a real server.

The oracle is a program that puts its tty in raw mode (as the programs that push
these flags do), pushes the flags (``CSI > flags u``) and records the bytes it
reads; what it must read is written out here from kitty's keyboard protocol
specification, not computed by phux. A shell a program left flag 8 to still
gets its command line as bytes, without a look at the pane's modes; a Textual
app (which pushes 1, 8 and 16) takes the keys kitty's way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import pytest

from phux.client import Client, Deadline

from .conftest import BASH, new_shell, unique

RECORDER = r"""
import os, sys, tty
tty.setraw(0)
flags, want, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.write(1, b"\x1b[>" + flags.encode() + b"u" + b"recording\r\n")
got = b""
while len(got) < want:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    got += chunk
with open(out, "wb") as f:
    f.write(got)
os.write(1, b"recorded\r\n")
os.read(0, 1)
"""

CSI = b"\x1b["


def _wait(client: Client, name: str, *, until: str, timeout: float = 15) -> None:
    """Wait for ``until`` on the screen of ``name``; fail with the screen if it never came."""
    result = client.wait(name, until=until, timeout=timeout, deadline=Deadline.after(timeout + 5))
    assert result.met, (until, result.screen.lines)


def _recorded(client: Client, tmp_path: Path, flags: int, keys: list[str], want: bytes) -> bytes:
    """What a raw program that pushed ``flags`` reads when send-keys types ``keys``."""
    name = unique("kk")
    out = tmp_path / f"{name}.bin"
    argv = [sys.executable, "-c", RECORDER, str(flags), str(len(want)), str(out)]
    env = {"TERM": "xterm-256color"}
    client.new(name, command=argv, env=env, shell_integration=False, deadline=Deadline.after(10))
    try:
        _wait(client, name, until="recording")
        client.send_keys(name, keys, Deadline.after(10))
        _wait(client, name, until="recorded")
        return out.read_bytes()
    finally:
        client.kill(name, Deadline.after(5))


@pytest.mark.parametrize(
    ("flags", "keys", "want"),
    [
        # Disambiguate (1) and report event types (2): a release after each press, a
        # letter's too; Enter keeps its byte and has no release.
        (
            1 | 2,
            ["a", "C-a", "Enter", "Escape"],
            b"a" + CSI + b"97;1:3u" + CSI + b"97;5u" + CSI + b"97;5:3u"
            b"\r" + CSI + b"27u" + CSI + b"27;1:3u",
        ),
        # Textual's flags: 1, report all keys as escape codes (8) and their text (16).
        (
            1 | 8 | 16,
            ["ls", "Enter", "Tab", "BSpace", "Space", "A"],
            CSI + b"108;;108u" + CSI + b"115;;115u" + CSI + b"13u" + CSI + b"9u"
            b"" + CSI + b"127u" + CSI + b"32;;32u" + CSI + b"97;2;65u",
        ),
        # Every flag: Enter reported, released, like any key.
        (31, ["a", "Enter"], CSI + b"97;;97u" + CSI + b"97;1:3u" + CSI + b"13u" + CSI + b"13;1:3u"),
    ],
)
def test_a_raw_program_reads_the_keys_kitty_would_send(
    client: Client, tmp_path: Path, flags: int, keys: list[str], want: bytes
) -> None:
    assert _recorded(client, tmp_path, flags, keys, want) == want


def test_a_shell_a_program_left_flag_8_to_still_reads_its_command_line(client: Client) -> None:
    """bash at its prompt (readline keeps ISIG) gets text and Enter as bytes whatever
    flags are left pushed, and send-keys does not look at the pane's modes for them."""
    name = new_shell(client, BASH)
    client.run(name, r"printf '\033[>25u'", timeout=15, deadline=Deadline.after(20))

    def looked(*_: object) -> NoReturn:
        raise AssertionError("send-keys looked at the modes of a shell at its prompt")

    client.modes = looked  # type: ignore[method-assign,assignment]
    try:
        client.send_keys(name, ["echo kitty-$((6*7))", "Enter"], Deadline.after(10))
    finally:
        del client.modes
    _wait(client, name, until="kitty-42")
    # At its prompt again (keys typed while the command still ran would meet the
    # kernel's line editing, which echoes Left as ^[[D and erases its D with BSpace).
    at_prompt = client.wait(name, prompt=True, timeout=15, deadline=Deadline.after(20))
    assert at_prompt.met, at_prompt.screen.lines
    # Left needs the modes (flag 1 changes it): the text around it stays bytes still.
    client.send_keys(name, ["echo mixed-$((6*7)) x", "Left", "BSpace", "Enter"], Deadline.after(10))
    _wait(client, name, until="mixed-42x")
    client.kill(name, Deadline.after(5))


TEXTUAL_APP = """
from textual.app import App
from textual.widgets import Static


class Keys(App):
    seen = []

    def compose(self):
        yield Static("keys:", id="k")

    def on_key(self, event):
        self.seen.append(event.key)
        self.query_one("#k", Static).update("keys: " + " ".join(self.seen) + " .")


Keys().run()
"""


def test_a_textual_app_takes_text_and_shift_space_kitty_s_way(client: Client) -> None:
    """Textual pushes 1, 8 and 16: text and Enter reach it as key events, and
    S-Space, which the legacy encoding can only send as a space, as shift+space."""
    name = unique("tx")
    env = {"TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
    argv = [sys.executable, "-c", TEXTUAL_APP]
    client.new(
        name, command=argv, env=env, rows=10, shell_integration=False, deadline=Deadline.after(10)
    )
    try:
        _wait(client, name, until="keys:", timeout=30)
        client.send_keys(name, ["a", "S-Space", "Enter", "BSpace"], Deadline.after(10))
        _wait(client, name, until="keys: a shift+space enter backspace .")
    finally:
        client.kill(name, Deadline.after(5))

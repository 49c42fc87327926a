"""``phux attach`` end to end: a person (tmux) attached to a real server's terminal."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from phux.client import Deadline
from phux.client.connection import Connection
from server.harness import interruptible, paste_in_background

from .conftest import PhuxServer, Tmux, clean_env, needs_tmux

pytestmark = needs_tmux

EXITED_OK = "EXITED 0"


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan waits for PID 1 to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def prompt_ready(screen: str) -> bool:
    return any(line.rstrip() == "$" for line in screen.splitlines())


def test_type_a_command_and_see_its_output(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    tmux.literal("echo hi $((6*7))")
    tmux.keys("Enter")
    tmux.wait_for("hi 42")
    # The person's window size became the terminal's size.
    tmux.literal("stty size")
    tmux.keys("Enter")
    tmux.wait_for("30 100")


def test_detach_and_reattach(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    tmux.literal("echo before-detach")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("before-detach") == 2)
    tmux.keys("C-b", "d")
    screen = tmux.wait_for(EXITED_OK)
    assert "[detached from work (@1); reattach with: phux attach work]" in screen
    # The session kept running: reattach (default target: the last used session).
    tmux.kill()
    tmux.attach()
    screen = tmux.wait_for("before-detach")
    tmux.literal("echo again")
    tmux.keys("Enter")
    tmux.wait_for("again\n")
    # C-b C-b sends one C-b (readline: back one char), C-b x sends both.
    tmux.literal("echo ab")
    tmux.keys("C-b", "C-b", "X", "Enter")
    tmux.wait_for("aXb")


def test_detach_key_is_configurable(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("--detach-key", "C-a q", "work")
    tmux.wait_for(prompt_ready)
    tmux.keys("C-b", "d")  # not the detach key now: typed into the shell
    tmux.keys("C-a", "q")
    screen = tmux.wait_for(EXITED_OK)
    assert "[detached from work" in screen


def test_resize_follows_the_window(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work", cols=100, rows=30)
    tmux.wait_for(prompt_ready)
    tmux.cmd("resize-window", "-x", "72", "-y", "18")
    tmux.literal("stty size")
    tmux.keys("Enter")
    tmux.wait_for("18 72")
    # An agent's read never changes the size.
    assert phux_server.phux("snapshot", "work").returncode == 0
    tmux.literal("clear; stty size")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.splitlines()[:1] == ["18 72"])


def test_vim_edit_quit_restores_the_shell(phux_server: PhuxServer, tmux: Tmux) -> None:
    vim = subprocess.run(["which", "vim"], capture_output=True, text=True).stdout.strip()
    if not vim:
        pytest.skip("vim is not installed")
    target = phux_server.dir / "edit.txt"
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    tmux.literal("echo shell-marker")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("shell-marker") == 2)
    tmux.literal(f"vim -u NONE -N -n {target}")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "shell-marker" not in s and "~" in s)
    tmux.keys("i")
    tmux.literal("typed in vim")
    tmux.keys("Escape")
    tmux.wait_for("typed in vim")
    # Detach and reattach while vim holds the alternate screen: the bootstrap
    # paints the main screen underneath, so quitting vim restores the shell.
    tmux.keys("C-b", "d")
    tmux.wait_for(EXITED_OK)
    tmux.kill()
    tmux.attach("work")
    tmux.wait_for("typed in vim")
    tmux.literal(":wq")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "shell-marker" in s and "typed in vim" not in s)
    assert f"vim -u NONE -N -n {target}" in screen
    assert target.read_text() == "typed in vim\n"


def test_agent_send_keys_and_run_show_up_live(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    result = phux_server.phux("send-keys", "work", "echo from-agent", "Enter")
    assert result.returncode == 0, result.stderr
    tmux.wait_for(lambda s: s.count("from-agent") == 2)
    result = phux_server.phux("run", "work", "echo ran $((40+2))")
    assert result.returncode == 0, result.stderr
    tmux.wait_for("ran 42")


def test_two_people_on_one_terminal(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.cmd("new-window", "-d", "-t", "0:1", tmux.attach_line("work"))
    tmux.wait_for(prompt_ready, target="0:0")
    tmux.wait_for(prompt_ready, target="0:1")
    tmux.literal("echo typed-by-one", target="0:0")
    tmux.keys("Enter", target="0:0")
    tmux.wait_for("typed-by-one\n", target="0:0")
    tmux.wait_for("typed-by-one\n", target="0:1")
    phux_server.phux("send-keys", "work", "echo by-agent", "Enter")
    tmux.wait_for("by-agent\n", target="0:0")
    tmux.wait_for("by-agent\n", target="0:1")
    with phux_server.client() as c:
        from phux.client import Deadline

        (info,) = c.ls(deadline=Deadline.after(5))
        assert info.attached_client_count >= 1


def test_exit_prints_the_status(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    tmux.literal("exit 3")
    tmux.keys("Enter")
    screen = tmux.wait_for(EXITED_OK)
    assert "[work: exited with status 3]" in screen


def test_killed_program_prints_the_signal(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    assert phux_server.phux("signal", "work", "KILL").returncode == 0
    screen = tmux.wait_for(EXITED_OK)
    assert "[work: killed by signal 9]" in screen


def test_server_gone_restores_the_terminal(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    before = phux_server.dir / "before"
    after = phux_server.dir / "after"
    tmux.start("bash --norc --noprofile")
    save_after = f"stty -a > {after}.tmp && mv {after}.tmp {after}"  # appears whole
    tmux.literal(f"stty -a > {before}; {tmux.attach_line('work', then=save_after)}")
    tmux.keys("Enter")
    tmux.wait_for(prompt_ready)
    # The program turned on modes attach must undo when it leaves.
    tmux.literal("printf '\\033[?1049h\\033[?2004h\\033[?1000h\\033[?25l\\033[31m'")
    tmux.keys("Enter")
    # The person's terminal (tmux) has seen the modes once it is in the alternate screen.
    deadline = time.monotonic() + 10
    while tmux.cmd("display-message", "-p", "#{alternate_on}").strip() != "1":
        assert time.monotonic() < deadline, "the program's modes never reached the terminal"
        time.sleep(0.03)
    phux_server.stop(signal.SIGKILL)
    screen = tmux.wait_for("EXITED 1")
    assert "[server went away]" in screen
    deadline = time.monotonic() + 10
    while not after.exists() and time.monotonic() < deadline:
        time.sleep(0.03)
    assert before.read_text() == after.read_text()
    # And the person's screen left the alternate screen and mouse/paste modes.
    modes = tmux.cmd(
        "display-message", "-p", "#{alternate_on} #{mouse_any_flag} #{cursor_flag} #{pane_in_mode}"
    ).split()
    assert modes[:3] == ["0", "0", "1"], modes


def test_sigterm_restores_the_terminal(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    before = phux_server.dir / "before"
    after = phux_server.dir / "after"
    pidfile = phux_server.dir / "attach.pid"
    tmux.start("bash --norc --noprofile")
    attach = (
        f"env PHUX_SOCKET={phux_server.socket} {sys.executable} -c "
        f"\"import os,sys; open('{pidfile}','w').write(str(os.getpid())); "
        "from phux.cli.main import run_cli; sys.exit(run_cli(['attach','work']))\""
    )
    save_after = f"stty -a > {after}.tmp && mv {after}.tmp {after}"  # appears whole
    tmux.literal(f'stty -a > {before}; {attach}; echo "EXITED $?"; {save_after}')
    tmux.keys("Enter")
    tmux.wait_for(prompt_ready)
    os.kill(int(pidfile.read_text()), signal.SIGTERM)
    screen = tmux.wait_for("EXITED 143")
    assert "[SIGTERM: detached from work]" in screen
    deadline = time.monotonic() + 10
    while not after.exists() and time.monotonic() < deadline:
        time.sleep(0.03)
    assert before.read_text() == after.read_text()


def test_queries_are_not_answered_by_the_person_terminal(
    phux_server: PhuxServer, tmux: Tmux
) -> None:
    """The program's queries must not reach tmux, or tmux's answers would be typed
    into the program a second time (the server answers them, once each). tmux
    answers the forms with extra parameters (CSI 0;0 c, CSI >0;1 c) too."""
    script = phux_server.dir / "ask.py"
    got_file = phux_server.dir / "got"
    script.write_text(
        "import os, select, sys, termios, tty\n"
        "fd = sys.stdin.fileno(); old = termios.tcgetattr(fd); tty.setraw(fd)\n"
        "os.write(1, b'\\x1b[c\\x1b[6n\\x1b[>c\\x1b[0;0c\\x1b[>0;1c"
        "\\x1b[>q\\x1b]11;?\\x07\\x1b[18t\\x1bP$qm\\x1b\\\\')\n"
        "import time\n"
        "got = b''\n"
        "end = time.monotonic() + 20\n"  # the last answer, then a second for extras
        "while not got.endswith(b'$r0m\\x1b\\\\') and time.monotonic() < end:\n"
        "    if select.select([fd], [], [], 0.2)[0]:\n"
        "        got += os.read(fd, 1024)\n"
        "while select.select([fd], [], [], 1.0)[0]:\n"
        "    got += os.read(fd, 1024)\n"
        "termios.tcsetattr(fd, termios.TCSADRAIN, old)\n"
        f"open({str(got_file)!r}, 'wb').write(got)\n"
        "print('replies: done')\n"
    )
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    tmux.literal(f"{sys.executable} {script}")
    tmux.keys("Enter")
    tmux.wait_for("replies: done", timeout=40)
    got = got_file.read_bytes()
    # Exactly the server's answers, once each (tmux's DA1 is the same bytes).
    answers = [
        rb"\x1b\[\?1;2c",
        rb"\x1b\[\d+;\d+R",
        rb"\x1b\[>1;10;0c",
        rb"\x1b\[\?1;2c",
        rb"\x1b\[>1;10;0c",
        rb"\x1bP>\|phux\([^)]*\)\x1b\\",
        rb"\x1b\]11;rgb:0000/0000/0000\x07",
        rb"\x1b\[8;\d+;\d+t",
        rb"\x1bP1\$r0m\x1b\\",
    ]
    assert re.fullmatch(b"".join(answers), got), got


def _print_script(phux_server: PhuxServer, data: bytes) -> str:
    script = phux_server.dir / "show.py"
    script.write_text(f"import os\nos.write(1, {data!r} + b'printed: done\\r\\n')\n")
    return f"{sys.executable} {script}"


HOSTILE = (
    b"\x1b]52;c;U0VDUkVU\x07"  # OSC 52: put SECRET on the clipboard
    b"\x1b]2;ti\x08tle\x0e one\x1b\\"  # a title with control characters
    b"\x1b_Ga=q,i=31;AAAA\x1b\\"  # a kitty graphics query (tmux takes APC for a title)
    b"\x1bPtmux;\x1b\x1b]2;passed\x07\x1b\\"  # tmux passthrough
)


def test_what_reaches_the_person_is_filtered(phux_server: PhuxServer, tmux: Tmux) -> None:
    """As tmux does by default: clipboard writes dropped, titles without control
    characters, passthrough and APC/DCS strings dropped."""
    phux_server.new("work")
    tmux.attach("work")
    tmux.cmd("set-option", "-g", "set-clipboard", "on")
    tmux.cmd("set-option", "-g", "allow-passthrough", "on")
    tmux.wait_for(prompt_ready)
    tmux.literal(_print_script(phux_server, HOSTILE))
    tmux.keys("Enter")
    tmux.wait_for("printed: done")
    assert tmux.cmd("list-buffers").strip() == ""  # no clipboard write reached tmux
    assert tmux.cmd("display", "-p", "#{pane_title}").strip() == "title one"


UNKNOWN_OSC = (
    b"\x1b]9;notified\x07"  # ConEmu/iTerm2 notification
    b"\x1b]777;notify;Title;body\x1b\\"  # rxvt/VTE notification
    b"\x1b]1337;File=name=eC50eHQ=;inline=0:U0VDUkVU\x07"  # iTerm2: save a file
    b"\x1b]1337;SetUserVar=k=dg==\x07"
    b"\x1b]99;;kitty notification\x1b\\"
    b"\x1b]7;file://elsewhere/etc\x07"  # the pane's cwd is not the person's
    b"\x1b]133;A\x07"  # nor are its prompt marks
    b"\x1b]50;SetProfile=x\x07"
    b"\x1b]133;"  # split mid-way by a CAN: never a sequence
    b"\x18"
)
KEPT_OSC = (
    b"\x1b]2;kept title\x07"
    b"\x1b]8;;http://example.com/\x1b\\link\x1b]8;;\x1b\\"
    b"\x1b]10;#ffffff\x07"
    b"\x1b]110\x07"
)


def test_unknown_osc_does_not_reach_the_person(phux_server: PhuxServer, tmux: Tmux) -> None:
    """As tmux does: only the OSCs it keeps pass (titles, hyperlinks, colours set
    and reset); notifications, iTerm2's file transfer and user variables, the
    pane's cwd and prompt marks and every OSC unknown to the filter are dropped.
    tmux drops them too, so what `phux attach` writes is read with pipe-pane."""
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    seen = phux_server.dir / "attach-output"
    tmux.cmd("pipe-pane", "-o", f"cat >> {seen}")
    tmux.literal(_print_script(phux_server, UNKNOWN_OSC + KEPT_OSC))
    tmux.keys("Enter")
    tmux.wait_for("printed: done")
    deadline = time.monotonic() + 10
    while b"printed: done" not in (seen.read_bytes() if seen.exists() else b""):
        assert time.monotonic() < deadline, "pipe-pane saw nothing"
        time.sleep(0.03)
    got = seen.read_bytes()
    for code in (b"9;", b"777;", b"1337;", b"99;", b"7;", b"133;", b"50;"):
        assert b"\x1b]" + code not in got, (code, got)
    assert KEPT_OSC in got


def test_clipboard_writes_pass_when_allowed(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("--allow-clipboard", "work")
    tmux.cmd("set-option", "-g", "set-clipboard", "on")
    tmux.wait_for(prompt_ready)
    data = b"\x1b]52;c;U0VDUkVU\x07\x1b]52;c;?\x07"  # a write, and a read (never passed)
    tmux.literal(_print_script(phux_server, data))
    tmux.keys("Enter")
    tmux.wait_for("printed: done")
    assert tmux.cmd("show-buffer") == "SECRET"


def test_refuses_without_a_tty(phux_server: PhuxServer) -> None:
    phux_server.new("work")
    proc = subprocess.run(
        [sys.executable, "-m", "phux", "attach", "work"],
        env=clean_env(PHUX_SOCKET=str(phux_server.socket)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 1
    assert "not a tty" in proc.stderr
    assert proc.stdout == ""


def test_unknown_target_fails_before_taking_the_terminal(
    phux_server: PhuxServer, tmux: Tmux
) -> None:
    phux_server.new("work")
    tmux.attach("nosuch")
    screen = tmux.wait_for("EXITED 1")
    assert "no session named 'nosuch'" in screen


def test_two_sizes_the_most_recently_active_person_wins(
    phux_server: PhuxServer, tmux: Tmux
) -> None:
    phux_server.new("work")
    tmux.attach("work", cols=100, rows=30)
    tmux.wait_for(prompt_ready, target="0:0")
    tmux.cmd("new-window", "-d", "-t", "0:1", tmux.attach_line("work"))
    tmux.wait_for(prompt_ready, target="0:1")
    tmux.cmd("resize-window", "-t", "0:1", "-x", "60", "-y", "10")
    phux_server.phux("send-keys", "work", "clear; seq 1 40; stty size", "Enter")
    tmux.wait_for("10 60\n", target="0:1")
    # The bigger window shows the smaller terminal (a view, not garbled bytes).
    tmux.wait_for(lambda s: "10 60" in s and "40\n" in s, target="0:0")
    # Typing in the first window takes the size back.
    tmux.literal("stty size", target="0:0")
    tmux.keys("Enter", target="0:0")
    tmux.wait_for("30 100\n", target="0:0")
    # The smaller window follows the cursor.
    tmux.wait_for("30 100\n", target="0:1")


def test_default_target_is_the_most_recently_used_session(
    phux_server: PhuxServer, tmux: Tmux
) -> None:
    phux_server.new("older")
    phux_server.new("newer")
    tmux.attach("older")
    tmux.wait_for(prompt_ready)
    listing = phux_server.phux("ls").stdout
    assert "older: 1 window (attached)" in listing, listing
    tmux.literal("echo in-older")
    tmux.keys("Enter")
    tmux.wait_for("in-older\n")
    tmux.keys("C-b", "d")
    tmux.wait_for(EXITED_OK)
    tmux.kill()
    # Attaching marked `older` as used last: no TARGET goes back to it.
    tmux.attach()
    tmux.wait_for("in-older\n")
    tmux.keys("C-b", "d")
    screen = tmux.wait_for(EXITED_OK)
    assert "reattach with: phux attach older" in screen


def test_refuses_to_attach_a_terminal_to_itself(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    # Inside the terminal, PHUX_TERMINAL and PHUX_SOCKET name it.
    tmux.literal(f"{sys.executable} -m phux attach; echo inner=$?")
    tmux.keys("Enter")
    screen = tmux.wait_for("inner=1")
    assert "refusing to attach @1 to itself" in screen


def test_attaching_an_exited_terminal_says_so(phux_server: PhuxServer, tmux: Tmux) -> None:
    tid = phux_server.new("gone", command=["sh", "-c", "exit 5"])
    with phux_server.client() as c:
        from phux.client import Deadline

        deadline = Deadline.after(10)
        while c.resolve(f"@{tid}", deadline).alive:
            time.sleep(0.02)
    tmux.attach(f"@{tid}")
    screen = tmux.wait_for("EXITED 1")
    assert "has exited (exited with status 5)" in screen


def test_scrollback_reaches_the_person_terminal(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    assert phux_server.phux("run", "work", "seq 1 200").returncode == 0
    tmux.attach("work")
    tmux.wait_for(prompt_ready)
    history = tmux.cmd("capture-pane", "-p", "-S", "-400").splitlines()
    numbers = [line for line in history if line.strip().isdigit()]
    assert numbers == [str(i) for i in range(1, 201)]


def test_create_then_attach_as_new_does(phux_server: PhuxServer, tmux: Tmux) -> None:
    """`phux new` without --json: create, then run_attach("@N") at once."""
    script = phux_server.dir / "new.py"
    script.write_text(
        "import os, sys\n"
        "from phux.client import Client, Deadline\n"
        "from phux.tui.attach import require_tty, run_attach\n"
        "require_tty()\n"
        f"with Client({str(phux_server.socket)!r}) as c:\n"
        "    r = c.new('fresh', command=['bash', '--norc', '--noprofile'],\n"
        "              env={'PS1': '$ '}, deadline=Deadline.after(10))\n"
        f"sys.exit(run_attach(f'@{{r.terminal_id}}', socket={str(phux_server.socket)!r}))\n"
    )
    tmux.start(f'{sys.executable} {script}; echo "EXITED $?"; sleep 120')
    tmux.wait_for(prompt_ready)
    tmux.literal("stty size")
    tmux.keys("Enter")
    tmux.wait_for("30 100")
    tmux.keys("C-b", "d")
    screen = tmux.wait_for(EXITED_OK)
    assert "reattach with: phux attach fresh" in screen


def test_closing_the_window_detaches(phux_server: PhuxServer, tmux: Tmux) -> None:
    phux_server.new("work")
    pidfile = phux_server.dir / "attach.pid"
    tmux.start(
        f"env PHUX_SOCKET={phux_server.socket} {sys.executable} -c "
        f"\"import os,sys; open('{pidfile}','w').write(str(os.getpid())); "
        "from phux.cli.main import run_cli; sys.exit(run_cli(['attach','work']))\""
    )
    tmux.wait_for(prompt_ready)
    pid = int(pidfile.read_text())
    assert "(attached)" in phux_server.phux("ls").stdout
    tmux.kill()  # the person's terminal goes away: SIGHUP
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not running(pid):
            break
        time.sleep(0.03)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("attach did not exit on SIGHUP")
    while "(attached)" in phux_server.phux("ls").stdout:
        assert time.monotonic() < deadline, "still attached"
        time.sleep(0.05)
    # The session itself keeps running.
    assert phux_server.phux("run", "work", "echo still-here").stdout.strip() == "still-here"


def test_a_tombstone_repaints_the_screen(small_queue_server: PhuxServer) -> None:
    """Attach falls behind (stopped) while the program floods: the server drops its
    output and sends a fresh bootstrap; once running again the screen is right."""
    server = small_queue_server
    tmux = Tmux(server.dir, server)
    try:
        server.new("work")
        pidfile = server.dir / "attach.pid"
        tmux.start(
            f"env PHUX_SOCKET={server.socket} {sys.executable} -c "
            f"\"import os,sys; open('{pidfile}','w').write(str(os.getpid())); "
            "from phux.cli.main import run_cli; sys.exit(run_cli(['attach','work']))\""
        )
        tmux.wait_for(prompt_ready)
        pid = int(pidfile.read_text())
        os.kill(pid, signal.SIGSTOP)
        try:
            sent = server.phux("send-keys", "work", "seq 1 30000; echo END-$((1+1))", "Enter")
            assert sent.returncode == 0, sent.stderr
            waited = server.phux("wait", "--until", "END-2", "--timeout", "30", "work")
            assert waited.returncode == 0, waited.stderr
        finally:
            os.kill(pid, signal.SIGCONT)
        screen = tmux.wait_for(lambda s: "END-2" in s and prompt_ready(s))
        lines = [line.rstrip() for line in screen.splitlines() if line.strip()]
        assert lines[-3:] == ["30000", "END-2", "$"], lines[-5:]
        tmux.literal("echo after-tombstone")
        tmux.keys("Enter")
        tmux.wait_for("after-tombstone\n")
    finally:
        tmux.kill()


# Cooked mode (C-c is SIGINT), no echo, reads one line at a time, slowly.
SLOW_READER = r"""
import os, signal, termios, time
def interrupted(signum, frame):
    os.write(1, b"\r\nINTERRUPTED\r\n")
    time.sleep(30)
    os._exit(0)
signal.signal(signal.SIGINT, interrupted)
attrs = termios.tcgetattr(0)
attrs[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, attrs)
os.write(1, b"READY\r\n")
while os.read(0, 4096):
    time.sleep(0.002)
"""


def test_person_interrupt_jumps_an_agent_paste(phux_server: PhuxServer, tmux: Tmux) -> None:
    """A person's C-c goes ahead of the 36 MB an agent queued (issue 15, item 7)."""
    tid = phux_server.new("slow", [sys.executable, "-c", SLOW_READER])
    tmux.attach("slow")
    tmux.wait_for("READY")
    agent = Connection.open(phux_server.socket, Deadline.after(5))
    sending = paste_in_background(agent, tid, (b"q" * 999 + b"\n") * 1024, 36)
    try:
        time.sleep(0.2)  # the paste is queued and flowing
        tmux.keys("C-c")
        tmux.wait_for("INTERRUPTED", timeout=8)
    finally:
        agent.interrupt()  # the rest of the paste is never sent
        sending.join(10)
        agent.close()


def test_a_recording_with_input_holds_the_person_and_the_agent(
    phux_server: PhuxServer, tmux: Tmux
) -> None:
    """`phux record --input`: what a person attached types and what an agent sends,
    as asciicast "i" events in the order they reached the pane."""
    import json

    phux_server.new("work")
    cast = phux_server.dir / "work.cast"
    recorder = subprocess.Popen(
        [sys.executable, "-m", "phux", "record", "--input", "work", str(cast)],
        env=clean_env(PHUX_SOCKET=str(phux_server.socket)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,  # (stopped by SIGINT below)
    )
    try:
        deadline = time.monotonic() + 20
        while not (cast.exists() and cast.read_text().count("\n") >= 1):
            assert time.monotonic() < deadline and recorder.poll() is None, "no header"
            time.sleep(0.02)
        tmux.attach("work")
        tmux.wait_for(prompt_ready)
        tmux.literal("echo by-person")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: s.count("by-person") == 2)
        result = phux_server.phux("send-keys", "work", "echo by-agent", "Enter")
        assert result.returncode == 0, result.stderr
        tmux.wait_for(lambda s: s.count("by-agent") == 2)

        def typed() -> str:
            events = [json.loads(line) for line in cast.read_text().splitlines()[1:]]
            return "".join(data for _, code, data in events if code == "i")

        while "echo by-agent\r" not in typed():
            assert time.monotonic() < deadline, typed()
            time.sleep(0.02)
    finally:
        recorder.send_signal(signal.SIGINT)
        _, err = recorder.communicate(timeout=20)
    assert recorder.returncode == 0, err
    text = typed()
    assert "echo by-person\r" in text
    assert text.index("echo by-person\r") < text.index("echo by-agent\r")

"""Shell awareness from OSC 133 marks: phase, pending input, commands and their output."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.engine import (
    CommandFinished,
    CommandRecord,
    CommandStarted,
    PromptStarted,
    Terminal,
)
from phux.engine.checkpoint import write_checkpoint

A = "\x1b]133;A\x07"
AS = "\x1b]133;A;k=s\x07"
B = "\x1b]133;B\x07"


def C(cmdline: str | None = None) -> str:
    return "\x1b]133;C\x07" if cmdline is None else f"\x1b]133;C;cmdline_url={cmdline}\x07"


def D(code: int | None = None) -> str:
    return "\x1b]133;D\x07" if code is None else f"\x1b]133;D;{code}\x07"


def cwd(path: str) -> str:
    return f"\x1b]7;file://host{path}\x07"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        self.now += 10
        return self.now


def feed(t: Terminal, text: str) -> Terminal:
    t.feed(text.encode())
    return t


def outputs(t: Terminal) -> list[tuple[str, str, int | None, bool]]:
    out = []
    for rec in t.commands:
        text, truncated = t.command_output(rec)
        out.append((rec.command, text, rec.exit_code, truncated))
    return out


def bash_cycle(cmd: str, output: str, code: int, url: str | None = None) -> str:
    """What an integrated bash prints for one command typed at the prompt."""
    out = output.replace("\n", "\r\n")
    mark = C(url if url is not None else cmd.replace(" ", "%20"))
    return f"{A}$ {B}{cmd}\r\n{mark}{out}{D(code)}"


def test_no_marks_is_phase_none() -> None:
    t = feed(Terminal(40, 5), "$ ls\r\nfoo\r\n")
    assert t.shell_phase == "none"
    assert t.pending_input == ""
    assert t.commands == []


def test_full_cycle_with_clock() -> None:
    clock = Clock()
    t = Terminal(40, 10, clock=clock)
    feed(t, cwd("/home/u") + bash_cycle("ls -l", "a\nb\n", 2))
    assert t.shell_phase == "prompt"
    feed(t, A + "$ " + B)
    (rec,) = t.commands
    assert rec.command == "ls -l"
    assert rec.cwd == "/home/u"
    assert rec.exit_code == 2
    assert (rec.started_ms, rec.finished_ms) == (1020, 1030)
    assert rec.duration_ms == 10
    assert t.command_output(rec) == ("a\nb", False)
    events = [e for e in t.take_events() if not hasattr(e, "cwd")]
    assert events == [
        PromptStarted(),
        CommandStarted(command="ls -l"),
        CommandFinished(exit_code=2, command="ls -l", started_ms=1020, finished_ms=1030),
        PromptStarted(),
    ]


def test_phases_and_pending_input() -> None:
    t = feed(Terminal(40, 5), A + "$ " + B)
    assert (t.shell_phase, t.pending_input) == ("prompt", "")
    feed(t, "echo hi  ")
    assert (t.shell_phase, t.pending_input) == ("prompt", "echo hi")
    feed(t, "\x1b[5D")  # the cursor moved back: the input is what lies before it
    assert t.pending_input == "echo"
    feed(t, "\x1b[5C")
    feed(t, "\r\n" + C("echo%20hi"))
    assert (t.shell_phase, t.pending_input) == ("running", "")
    assert t.commands[-1].running
    feed(t, "hi\r\n")
    assert t.command_output(t.commands[-1]) == ("hi", False)
    feed(t, D(0))
    assert t.shell_phase == "prompt"
    assert not t.commands[-1].running


def test_pending_input_soft_wrapped() -> None:
    t = feed(Terminal(10, 5), A + "$ " + B + "echo 123456789 x")
    assert t.pending_input == "echo 123456789 x"


# How zsh draws RPROMPT='%*' and fish its fish_right_prompt (bytes as they print
# them at 60 columns, tests/shell/test_right_prompts.py runs the shells).
ZSH_RPROMPT = A + "user> " + B + "\x1b[K\x1b[45C20:40:00\x1b[53D"
FISH_RPROMPT = A + "user> " + B + "\x1b[K\r\x1b[52C20:40:22\r\x1b[52C\r\x1b[6C"


def test_a_right_prompt_is_not_input() -> None:
    for prompt in (ZSH_RPROMPT, FISH_RPROMPT):
        t = feed(Terminal(60, 5), prompt)
        assert (t.shell_phase, t.pending_input) == ("prompt", "")
        feed(t, "echo  hi")
        assert t.pending_input == "echo  hi"
        feed(t, "\x1b[2D")  # back over "hi": the line before the cursor
        assert t.pending_input == "echo"
        feed(t, "\x1b[6D")  # home: what follows, up to the right prompt
        assert t.pending_input == "echo  hi"


def test_an_autosuggestion_is_not_input() -> None:
    # zsh-autosuggestions draws the rest of a history line in grey after the cursor.
    t = feed(
        Terminal(60, 5),
        A + "user> " + B + "\x1b[1m\x1b[31mec\x1b[0m\x1b[90mho hello\x1b[39m\x1b[8D",
    )
    assert t.pending_input == "ec"


def test_a_command_read_without_cmdline_url_leaves_the_right_prompt_out() -> None:
    t = feed(Terminal(60, 6), ZSH_RPROMPT + "echo  hi\r\n" + C() + "hi\r\n" + D(0))
    t2 = feed(Terminal(60, 6), FISH_RPROMPT + "true\r\n" + D(0))  # dash-like: no C
    assert [r.command for r in t.commands] == ["echo  hi"]
    assert [r.command for r in t2.commands] == ["true"]


def test_input_reaching_the_edge_is_kept_whole() -> None:
    # Typed text that reaches the last columns with no two blanks in it: no right prompt.
    line = "echo " + "x" * 50
    t = feed(Terminal(60, 6), A + "$ " + B + line)
    assert t.pending_input == line
    feed(t, "\r\n" + C() + D(0))
    assert t.commands[-1].command == line


def test_continuation_prompt() -> None:
    t = feed(Terminal(40, 6), A + "$ " + B + "echo 'a\r\n" + AS + "> " + B)
    assert (t.shell_phase, t.pending_input) == ("continuation", "")
    feed(t, "b'")
    assert t.pending_input == "b'"
    feed(t, "\r\n" + C("echo%20%27a%0Ab%27") + "a\r\nb\r\n" + D(0) + A + "$ " + B)
    assert outputs(t) == [("echo 'a\nb'", "a\nb", 0, False)]
    assert t.shell_phase == "prompt"


def test_dash_without_c_is_a_command_when_typed() -> None:
    # dash prints D;$? at every prompt and no C: the typed text is the command.
    t = Terminal(40, 8, clock=Clock())
    feed(t, D(0) + A + "$ " + B)
    assert t.commands == []
    assert t.take_events() == [PromptStarted()]
    feed(t, "echo one\r\none\r\n" + D(0) + A + "$ " + B)
    feed(t, "\r\n" + D(0) + A + "$ " + B)  # Enter on an empty line: not a command
    feed(t, "false\r\n" + D(1) + A + "$ " + B)
    feed(t, "printf x\r\nx" + D(0) + A + "$ " + B)
    feed(t, "abandoned^C\r\n" + D(130) + A + "$ " + B)  # Ctrl-C at the prompt
    assert outputs(t) == [
        ("echo one", "one", 0, False),
        ("false", "", 1, False),
        ("printf x", "x", 0, False),
    ]
    # It started at the line feed that ended its input (the clock ticks 10 a call).
    assert [r.duration_ms for r in t.commands] == [10, 10, 10]
    finished = [e for e in t.take_events() if isinstance(e, CommandFinished)]
    assert [(e.command, e.exit_code) for e in finished] == [
        ("echo one", 0),
        ("false", 1),
        ("printf x", 0),
    ]


def test_dash_continuation_lines_joined() -> None:
    t = Terminal(40, 8)
    feed(t, A + "$ " + B + "for i in 1 2\r\n" + AS + "> " + B + "do echo $i; done\r\n")
    feed(t, "1\r\n2\r\n" + D(0) + A + "$ " + B)
    assert outputs(t) == [("for i in 1 2\ndo echo $i; done", "1\n2", 0, False)]


def test_dash_start_time_survives_a_checkpoint() -> None:
    """A checkpoint written while dash runs a command (its input ended, no D yet)
    carries when it started: the replay's command has its duration."""
    t = Terminal(40, 8, clock=Clock())
    feed(t, A + "$ " + B + "for i in 1 2\r\n" + AS + "> " + B + "do sleep 1; done\r\n")
    u = replayed(t, 100)
    u.clock = Clock()
    u.clock.now = 5_000
    feed(u, "x\r\n" + D(0) + A + "$ " + B)
    (rec,) = u.commands
    assert rec.command == "for i in 1 2\ndo sleep 1; done"
    assert (rec.started_ms, rec.finished_ms) == (1020, 5010)  # (the last line)
    assert u.command_output(rec) == ("x", False)


def test_dash_command_whose_input_left_the_history() -> None:
    """dash's command line is read when its input ends: a flood that pushes it out of
    the history before the D leaves the command listed, whole (continuation lines)."""
    t = Terminal(20, 4, history=5, clock=Clock())
    feed(t, A + "$ " + B + "for i in 1 2\r\n" + AS + "> " + B + "do seq 99; done\r\n")
    feed(t, "".join(f"{i}\r\n" for i in range(200)) + D(0) + A + "$ " + B)
    ((command, text, code, truncated),) = outputs(t)
    assert (command, code, truncated) == ("for i in 1 2\ndo seq 99; done", 0, True)
    assert text.endswith("198\n199")
    assert t.commands[0].duration_ms == 10
    # ... when the flood comes in the same feed as the typed line (the bulk path).
    t = Terminal(20, 4, history=5, clock=Clock())
    flood = "".join(f"{i}\r\n" for i in range(5000))
    feed(t, A + "$ " + B)
    feed(t, "seq 0 4999\r\n" + flood + D(0) + A + "$ " + B)
    assert [(r.command, r.exit_code) for r in t.commands] == [("seq 0 4999", 0)]


def test_c_without_cmdline_uses_typed_text() -> None:
    t = feed(Terminal(40, 5), A + "$ " + B + "make  all\r\n" + C() + "done\r\n" + D(0))
    assert outputs(t) == [("make  all", "done", 0, False)]


def test_unicode_cmdline() -> None:
    url = "echo%20%C3%A9t%C3%A9%20%E4%BD%A0%E5%A5%BD"
    t = feed(Terminal(40, 5), bash_cycle("echo été 你好", "été 你好\n", 0, url))
    assert outputs(t) == [("echo été 你好", "été 你好", 0, False)]
    # Typed text with wide characters (no cmdline_url) reads each character once.
    t = feed(Terminal(40, 5), A + "$ " + B + "echo 你好")
    assert t.pending_input == "echo 你好"


def test_unknown_params_ignored() -> None:
    t = feed(
        Terminal(40, 5),
        "\x1b]133;A;aid=7;cl=m\x07$ \x1b]133;B;x=y\x07ls\r\n"
        "\x1b]133;C;foo=bar;cmdline_url=ls;zz=1\x07out\r\n\x1b]133;D;3;aid=7\x07",
    )
    assert outputs(t) == [("ls", "out", 3, False)]


def test_output_longer_than_viewport() -> None:
    lines = [f"line {i}" for i in range(50)]
    t = Terminal(20, 5, history=1000)
    feed(t, bash_cycle("seq", "\n".join(lines) + "\n", 0) + A + "$ " + B)
    assert outputs(t) == [("seq", "\n".join(lines), 0, False)]


def test_history_trimmed_output_is_truncated() -> None:
    lines = [f"line {i}" for i in range(50)]
    t = Terminal(20, 5, history=10)
    feed(t, bash_cycle("seq", "\n".join(lines) + "\n", 0) + A + "$ " + B)
    ((_, text, _, truncated),) = outputs(t)
    assert truncated
    assert text.split("\n") == lines[-(10 + 4) :]  # the history, and the viewport above the prompt
    # Once every row of the command left the history, the command stays, its output gone.
    feed(t, "\r\n" * 30)
    assert outputs(t) == [("seq", "", 0, True)]


def test_commands_outlive_their_rows_through_checkpoints() -> None:
    """`history` after a flood: the earlier commands keep their line, status, cwd and
    times when their rows left the history, and a checkpoint (a client connecting
    later) carries them."""
    t = Terminal(20, 5, history=10, clock=Clock())
    feed(t, cwd("/tmp") + bash_cycle("true", "", 0) + bash_cycle("false", "", 1))
    flood = "".join(f"{i}\n" for i in range(1000))
    feed(t, bash_cycle("seq 1000", flood, 0) + A + "$ " + B)
    expected = [("true", "", 0, True), ("false", "", 1, True)]
    assert outputs(t)[:2] == expected
    assert outputs(t)[2][0::2] == ("seq 1000", 0)
    u = replayed(t, 10)
    assert shell_state(u) == shell_state(t)
    assert [(r.command, r.cwd, r.exit_code, r.duration_ms) for r in u.commands] == [
        ("true", "/tmp", 0, 10),
        ("false", "/tmp", 1, 10),
        ("seq 1000", "/tmp", 0, 10),
    ]
    assert outputs(u)[:2] == expected
    # ... and a checkpoint of that replay too (the rows are far above the history).
    assert shell_state(replayed(u, 10)) == shell_state(t)


def test_commands_are_bounded() -> None:
    from phux.engine._shell import MAX_COMMANDS

    t = Terminal(20, 5, history=10)
    feed(t, "".join(bash_cycle(f"c{i}", "", 0) for i in range(MAX_COMMANDS + 1)))
    kept = [r.command for r in t.commands]
    assert len(kept) == MAX_COMMANDS * 3 // 4
    assert kept[-1] == f"c{MAX_COMMANDS}"


def test_soft_wrapped_output_is_one_line() -> None:
    long = "x" * 25
    t = feed(Terminal(10, 6, history=100), bash_cycle("echo", long + "\n", 0))
    assert outputs(t) == [("echo", long, 0, False)]


def test_alternate_screen_inside_a_command() -> None:
    t = Terminal(20, 5, history=100)
    feed(t, A + "$ " + B + "vim\r\n" + C("vim") + "before\r\n")
    feed(t, "\x1b[?1049h\x1b[H\x1b[2J~\r\n~\r\n~ TUI\x1b[5;1H\r\n\r\n")
    assert t.command_output(t.commands[0]) == ("before", False)
    feed(t, "\x1b[?1049l" + "after\r\n" + D(0) + A + "$ " + B)
    assert outputs(t) == [("vim", "before\nafter", 0, False)]


def test_clear_cuts_the_ranges_it_erases() -> None:
    t = Terminal(20, 5, history=100)
    feed(t, bash_cycle("seq 3", "1\n2\n3\n", 0) + bash_cycle("echo a", "a\n", 0))
    feed(t, bash_cycle("clear", "\x1b[H\x1b[2J\x1b[3J", 0))
    # Later commands draw over the rows the erased ones had.
    for i in range(4):
        feed(t, bash_cycle(f"echo {i}", f"{i}\n", 0))
    feed(t, A + "$ " + B)
    assert outputs(t) == [
        ("seq 3", "", 0, True),  # erased by the clear
        ("echo a", "", 0, True),
        ("clear", "", 0, False),
        ("echo 0", "0", 0, False),
        ("echo 1", "1", 0, False),
        ("echo 2", "2", 0, False),
        ("echo 3", "3", 0, False),
    ]


def test_clear_inside_a_running_command() -> None:
    t = Terminal(20, 6, history=100)
    feed(t, bash_cycle("echo a", "a\n", 0))
    feed(t, A + "$ " + B + "clear; ls\r\n" + C("clear%3B%20ls"))
    feed(t, "\x1b[H\x1b[2Jf1\r\nf2\r\n" + D(0) + A + "$ " + B)
    assert outputs(t)[-1] == ("clear; ls", "f1\nf2", 0, False)
    assert outputs(t)[0] == ("echo a", "", 0, True)


def test_prompt_redraw_with_erase_below_keeps_outputs() -> None:
    # fish and zsh erase below the cursor when they redraw the prompt.
    t = Terminal(30, 6, history=100)
    feed(t, bash_cycle("echo a", "a\n", 0) + A + "$ " + B + "ec\x1b[J\rx\x1b[K")
    assert outputs(t) == [("echo a", "a", 0, False)]


def test_phux_t_wins_over_the_clock() -> None:
    t = Terminal(40, 5, clock=Clock())
    feed(t, A + "$ " + B + "ls\r\n\x1b]133;C;cmdline_url=ls;phux_t=5\x07\x1b]133;D;0;phux_t=9\x07")
    (rec,) = t.commands
    assert (rec.started_ms, rec.finished_ms) == (5, 9)


def test_prompt_while_running_finishes_the_command() -> None:
    t = feed(Terminal(40, 6), A + "$ " + B + "x\r\n" + C("x") + "o\r\n" + A + "$ " + B)
    (rec,) = t.commands
    assert rec.exit_code is None and not rec.running
    assert t.command_output(rec) == ("o", False)
    assert t.shell_phase == "prompt"


def test_record_is_a_value() -> None:
    rec = CommandRecord(
        command="ls", cwd=None, exit_code=0, started_ms=1, finished_ms=4, start_row=0, start_col=0
    )
    assert rec.running and rec.duration_ms == 3


# -- checkpoints ----------------------------------------------------------------------


def shell_state(t: Terminal) -> tuple[object, ...]:
    return (
        t.shell_phase,
        t.pending_input,
        [
            (
                r.command,
                r.cwd,
                r.exit_code,
                r.started_ms,
                r.finished_ms,
                r.running,
                *t.command_output(r),
            )
            for r in t.commands
        ],
    )


def replayed(t: Terminal, history: int) -> Terminal:
    u = Terminal(t.cols, t.rows, history=history)
    u.feed(write_checkpoint(t))
    return u


_WORDS = st.sampled_from(["ls", "echo", "é", "你好", "a b", "'q", "%", ";", "x" * 30, ""])
_OUTPUT = st.sampled_from(
    [
        "",
        "out\n",
        "no newline",
        "line\n" * 7,
        "y" * 45 + "\n",
        "\x1b[?1049h\x1b[2JTUI\r\nmore\x1b[?1049l",
        "\x1b[H\x1b[2J\x1b[3J",
        "\x1b[31mred\x1b[m\n",
    ]
)


@st.composite
def _shell_session(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            parts.append(cwd("/tmp/" + draw(_WORDS).replace(" ", "%20").replace("%", "%25")))
        cmd = " ".join(draw(st.lists(_WORDS, max_size=3)))
        style = draw(st.sampled_from(["bash", "dash", "cont", "bare"]))
        out = draw(_OUTPUT).replace("\n", "\r\n")
        code = draw(st.integers(0, 255))
        url = "".join(f"%{b:02X}" for b in cmd.encode())
        if style == "bash":
            parts.append(f"{A}$ {B}{cmd}\r\n{C(url)}{out}{D(code)}")
        elif style == "dash":
            parts.append(f"{D(code)}{A}$ {B}{cmd}\r\n{out}")
        elif style == "cont":
            parts.append(f"{A}$ {B}{cmd} '\r\n{AS}> {B}'\r\n{C(url)}{out}{D(code)}")
        else:
            parts.append(f"{A}$ {B}{cmd}\r\n{C()}{out}")
    tail = draw(st.sampled_from(["", A + "$ " + B, A + "$ " + B + "half typed", AS + "> " + B]))
    parts.append(tail)
    return "".join(parts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _shell_session(),
    st.integers(5, 30),
    st.integers(2, 8),
    st.sampled_from([0, 4, 1000]),
    st.integers(1, 400),
)
def test_checkpoint_replays_the_shell_state(
    text: str, cols: int, rows: int, history: int, chunk: int
) -> None:
    t = Terminal(cols, rows, history=history, clock=Clock())
    data = text.encode()
    for i in range(0, len(data), chunk):
        t.feed(data[i : i + chunk])
    u = replayed(t, history)
    assert shell_state(u) == shell_state(t)
    assert shell_state(replayed(u, history)) == shell_state(t)


def test_checkpoint_keeps_commands_times_and_truncation() -> None:
    lines = "".join(f"line {i}\n" for i in range(30))
    t = Terminal(20, 5, history=12, clock=Clock())
    feed(t, cwd("/home/u%20v") + bash_cycle("seq 30", lines, 0) + bash_cycle("false", "", 1))
    feed(t, A + "$ " + B + "vim x")
    u = replayed(t, 12)
    assert shell_state(u) == shell_state(t)
    first, second = u.commands
    assert first.command == "seq 30" and first.cwd == "/home/u v"
    assert u.command_output(first)[1] is True  # truncated
    assert (second.exit_code, second.started_ms, second.finished_ms) == (1, 1050, 1060)
    assert (u.shell_phase, u.pending_input) == ("prompt", "vim x")
    assert u.take_events()  # (the replay reports what it recreates; watchers drop it)


def test_checkpoint_pen_marks_make_no_commands() -> None:
    t = feed(Terminal(20, 4), A + "$ " + B + "ls")  # marks on cells, no command
    data = write_checkpoint(t)
    assert b"phux_pen=1" in data
    u = replayed(t, 100)
    assert u.commands == [] and u.shell_phase == "prompt" and u.pending_input == "ls"


_MARK_PARAMS = st.sampled_from(
    [
        "",
        ";k=s",
        ";0",
        ";-1",
        ";x",
        ";phux_at=99999999999,0",
        ";phux_at=-99999999999,5",
        ";phux_at=0,99999999999",
        ";phux_at=2",
        ";phux_at=a,b",
        ";phux_t=zz",
        ";phux_t=-5",
        ";cmdline_url=%E4%BD",
        ";cmdline_url=%zz%",
        ";phux_cwd=%2Ftmp",
        ";phux_pen=1",
        ";=;;==",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from("ABCDEZ"), _MARK_PARAMS, st.sampled_from(["", "x\r\n", "é"]))
    ),
    st.integers(1, 12),
    st.integers(1, 5),
)
def test_any_marks_are_safe(marks: list[tuple[str, str, str]], cols: int, rows: int) -> None:
    t = Terminal(cols, rows, history=5)
    for kind, params, text in marks:
        t.feed(f"\x1b]133;{kind}{params}\x07{text}".encode())
    assert t.shell_phase in ("none", "prompt", "continuation", "running")
    assert isinstance(t.pending_input, str)
    for rec in t.commands:
        text, truncated = t.command_output(rec)
        assert isinstance(text, str) and isinstance(truncated, bool)
    assert shell_state(replayed(t, 5)) == shell_state(t)


def _marks(t: Terminal, y: int) -> list[int]:
    line = t.screen.buffer.get(y) or {}
    return [line[x].semantic for x in sorted(line) if line[x].data]


def test_a_line_feed_ends_the_input() -> None:
    # dash prints no C mark: what the command prints after the echoed Enter is
    # output, not more input (spec/shell-integration.md, sh and dash).
    t = feed(Terminal(20, 5), D(0) + A + "$ " + B + "seq 2\r\n1\r\n2\r\n" + D(0) + A + "$ " + B)
    assert _marks(t, 0) == [1, 1, 2, 2, 2, 2, 2]
    assert _marks(t, 1) == _marks(t, 2) == [0]
    assert _marks(t, 3) == [1, 1]
    assert [(r.command, t.command_output(r)[0]) for r in t.commands] == [("seq 2", "1\n2")]


def test_checkpoints_keep_input_marks_across_rows() -> None:
    # Input on two rows joined by cursor motion (an editor's redraw), not a line feed.
    t = feed(Terminal(20, 5), A + "$ " + B + "ab\x1b[2;1Hcd\x1b[3;1Hef\r\ngh")
    assert [_marks(t, y) for y in range(4)] == [[1, 1, 2, 2], [2, 2], [2, 2], [0, 0]]
    u = replayed(t, 100)
    assert [_marks(u, y) for y in range(4)] == [_marks(t, y) for y in range(4)]


def _command_events(t: Terminal) -> list[tuple[str, str]]:
    return [
        (type(e).__name__, e.command)
        for e in t.take_events()
        if isinstance(e, CommandStarted | CommandFinished)
    ]


def test_dash_reports_each_command_started_at_its_d_at_the_latest() -> None:
    """No C mark and no foreground told (a builtin, or an engine used on its own):
    the start is reported with the D, just before the end, once per command."""
    t = Terminal(40, 8, clock=Clock())
    feed(t, D(0) + A + "$ " + B + "read x\r\nhello\r\n" + D(0) + A + "$ " + B)
    feed(t, "\r\n" + D(0) + A + "$ " + B + "abandoned^C\r\n" + D(130) + A + "$ " + B)
    feed(t, 'echo "a\r\n' + AS + "> " + B + 'b"\r\na\r\nb\r\n' + D(0) + A + "$ " + B)
    assert _command_events(t) == [
        ("CommandStarted", "read x"),
        ("CommandFinished", "read x"),
        ("CommandStarted", 'echo "a\nb"'),
        ("CommandFinished", 'echo "a\nb"'),
    ]


def test_dash_command_started_when_its_job_takes_the_terminal() -> None:
    t = Terminal(40, 8, clock=Clock())
    feed(t, D(0) + A + "$ " + B + "sleep 5\r\n")
    t.take_events()
    t.foreground_changed(True)  # (the shell still reads the line)
    assert _command_events(t) == []
    t.foreground_changed(False)
    assert _command_events(t) == [("CommandStarted", "sleep 5")]
    t.foreground_changed(True)
    t.foreground_changed(False)  # (a second job of the same command line)
    feed(t, D(0) + A + "$ " + B)
    assert _command_events(t) == [("CommandFinished", "sleep 5")]
    (rec,) = t.commands
    assert (rec.command, rec.exit_code, rec.duration_ms) == ("sleep 5", 0, 10)


def test_dash_job_reported_before_the_echo_of_enter() -> None:
    """The server may read the echo of Enter after it saw the job: the report counts
    at the line feed that follows it."""
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "sleep 5")
    t.take_events()
    t.foreground_changed(False)
    assert _command_events(t) == []
    feed(t, "\r\n")
    assert _command_events(t) == [("CommandStarted", "sleep 5")]


def test_dash_continuation_is_not_a_start() -> None:
    """A line that leads to a continuation prompt starts nothing; the job of the
    whole command starts it, with every line."""
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "for i in 1 2\r\n")
    t.take_events()
    feed(t, AS + "> " + B)
    t.foreground_changed(False)  # (reported before the echo of the second Enter)
    assert _command_events(t) == []
    feed(t, "do sleep 1; done\r\n")
    assert _command_events(t) == [("CommandStarted", "for i in 1 2\ndo sleep 1; done")]


def test_dash_job_report_ends_at_the_next_prompt() -> None:
    """A job reported as holding the terminal is over once the shell prints a mark
    (its report of the shell taking the terminal back may come later): the next
    line, which only leads to a continuation prompt, is not started by it."""
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "sleep 1\r\n")
    t.foreground_changed(False)
    feed(t, D(0) + A + "$ " + B + 'echo "a\r\n')
    t.take_events()
    feed(t, AS + "> " + B)
    assert _command_events(t) == []
    feed(t, 'b"\r\na\r\nb\r\n' + D(0) + A + "$ " + B)
    assert _command_events(t) == [
        ("CommandStarted", 'echo "a\nb"'),
        ("CommandFinished", 'echo "a\nb"'),
    ]


def test_dash_baseline_starts_only_a_command_already_entered() -> None:
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "sleep 9\r\n")
    t.take_events()
    t.foreground_changed(False, baseline=True)
    assert _command_events(t) == [("CommandStarted", "sleep 9")]
    feed(t, D(0) + A + "$ " + B)
    assert _command_events(t) == [("CommandFinished", "sleep 9")]
    # A listing older than the bytes (the job has ended since): not kept for the next line.
    t.foreground_changed(False, baseline=True)
    feed(t, 'echo "a\r\n' + AS + "> " + B)
    assert _command_events(t) == []


def test_dash_start_survives_a_checkpoint_as_a_pending_start() -> None:
    """A checkpoint written while dash runs a command whose job was not reported yet:
    the replay knows the input ended, so the report starts it."""
    t = Terminal(40, 8, clock=Clock())
    feed(t, A + "$ " + B + "sleep 9\r\n")
    u = replayed(t, 100)
    u.take_events()
    u.foreground_changed(False)
    assert _command_events(u) == [("CommandStarted", "sleep 9")]


def test_bash_ignores_the_foreground() -> None:
    """A shell with C marks reports its start with its C, once."""
    t = Terminal(40, 8)
    feed(t, A + "$ " + B + "sleep 1\r\n")
    t.foreground_changed(False)  # (not told by clients: its C comes first anyway)
    feed(t, C("sleep%201") + D(0))
    events = _command_events(t)
    assert events[-1] == ("CommandFinished", "sleep 1")
    assert [e for e in events if e[0] == "CommandStarted"] == [("CommandStarted", "sleep 1")]


TYPED_AHEAD = "for i in 1 2\r\ndo echo $i\r\ndone\r\n" + AS + "> " + B + AS + "> " + B


def test_dash_lines_typed_ahead() -> None:
    """All lines of a command typed at once: the tty echoes them before the shell
    reads the first, so its continuation prompts come after them, and it reads
    each line from the tty's queue at once (no line feed after their B)."""
    t = Terminal(40, 8, clock=Clock())
    feed(t, D(0) + A + "$ " + B + TYPED_AHEAD)
    t.take_events()
    assert t.pending_input == ""  # (what follows the last B is output)
    t.foreground_changed(False)
    command = "for i in 1 2\ndo echo $i\ndone"
    assert _command_events(t) == [("CommandStarted", command)]
    feed(t, "1\r\n2\r\n" + D(0) + A + "$ " + B)
    assert outputs(t) == [(command, "1\n2", 0, False)]
    assert _command_events(t) == [("CommandFinished", command)]
    # A checkpoint in between keeps the lines read and where the output starts.
    t = Terminal(40, 8, clock=Clock())
    feed(t, D(0) + A + "$ " + B + TYPED_AHEAD + "1\r\n")
    u = replayed(t, 100)
    feed(u, "2\r\n" + D(0) + A + "$ " + B)
    assert outputs(u) == [(command, "1\n2", 0, False)]


def test_dash_lines_typed_ahead_past_the_command() -> None:
    """A line typed ahead beyond the command's end is not part of it."""
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "if true\r\nthen echo x\r\nfi\r\necho next\r\n")
    feed(t, AS + "> " + B + AS + "> " + B + "x\r\n" + D(0) + A + "$ " + B)
    assert outputs(t) == [("if true\nthen echo x\nfi", "x", 0, False)]


def test_lines_typed_ahead_in_a_shell_with_c() -> None:
    """bash, zsh and fish send their command line: nothing is inferred there."""
    t = Terminal(40, 8)
    feed(t, A + "$ " + B + TYPED_AHEAD + C("for%20i") + "1\r\n" + D(0))
    assert [r.command for r in t.commands] == ["for i"]
    assert t.screen.shell.taken == {}


def test_a_checkpoint_says_the_shell_prints_no_c() -> None:
    """A client that bootstraps from a checkpoint knows it without a D of its own."""
    t = feed(Terminal(40, 8), D(0) + A + "$ " + B)
    u = replayed(t, 100)
    feed(u, TYPED_AHEAD + "1\r\n2\r\n" + D(0) + A + "$ " + B)
    assert [r.command for r in u.commands] == ["for i in 1 2\ndo echo $i\ndone"]


def test_a_checkpoint_between_lines_typed_ahead() -> None:
    """Written after the first continuation prompt read a line typed ahead: the
    lines read and those still ahead go with it."""
    t = Terminal(40, 8)
    feed(t, D(0) + A + "$ " + B + "for i in 1 2\r\ndo echo $i\r\ndone\r\n" + AS + "> " + B)
    u = replayed(t, 100)
    feed(u, AS + "> " + B + "1\r\n2\r\n" + D(0) + A + "$ " + B)
    assert outputs(u) == [("for i in 1 2\ndo echo $i\ndone", "1\n2", 0, False)]


def test_a_second_c_while_a_command_runs_is_the_same_command() -> None:
    """bash's hook fires once per command of a list (`echo a; echo b`): the C marks
    after the first, before the D, start no other command (issue 24 item 10)."""
    t = Terminal(40, 10)
    feed(t, f"{A}$ {B}echo a; echo b\r\n{C('echo%20a%3B%20echo%20b')}a\r\n{C()}b\r\n{D(0)}")
    assert outputs(t) == [("echo a; echo b", "a\nb", 0, False)]
    started = [e for e in t.take_events() if isinstance(e, CommandStarted)]
    assert started == [CommandStarted(command="echo a; echo b")]

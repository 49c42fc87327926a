"""phux.engine: pyte screens made fast and correct, projected to ScreenState.

Every client replays PTY bytes into a :class:`Terminal` and projects what it
needs; the server's replicas use the same class. Use this package only
through the names exported here::

    t = Terminal(cols=120, rows=40, history=10_000)
    t.feed(pty_bytes)                 # any chunking; never raises
    t.take_replies()                  # answers to DA1/DA2/DSR/..., for the caller to route
    t.take_events()                   # TitleChanged, Bell, CwdChanged, PromptStarted,
                                      # CommandStarted, CommandFinished, in order
    t.shell_phase, t.pending_input    # from OSC 133 marks: "none"/"prompt"/"continuation"/"running"
    Terminal(..., mark_key=key)       # act only on marks signed with the pane's key
    t.integration                     # "none"/"starting"/"ready"/"off" (the integration said)
    t.foreground_changed(shell_holds) # sh/dash (no C mark): what holds the terminal, so
                                      # CommandStarted comes when a command's job takes it
    t.commands                        # [CommandRecord]; t.command_output(rec) -> (text, truncated)
    t.project(pane=3, scrollback=None | 0 | n, cells=False)   # ScreenState v4
    t.project_data(...)               # the same as plain data, without msgspec
    t.logical_lines(scrollback=0)     # soft wraps joined, history included
    t.drain_history()                 # (rows, wrapped flags), and forget them
    t.generation                      # changes whenever bytes arrive or the size changes
    t.scrolled_off                    # rows above the viewport, ever (absolute row numbers)
    t.modes.app_cursor, t.modes.bracketed_paste, t.alternate, t.title, t.cwd, ...

Inside: ``_stream.EngineStream`` (a regex tokenizer over pyte's ``Stream``)
drives ``_screen.EngineScreen`` (a pyte ``Screen`` subclass that leaves stock
pyte's exact state wherever stock pyte is right, and fixes it elsewhere).
``_bulk`` skips drawing the rows of a long feed that would scroll out of the
history, leaving the state drawing them would.

The ScreenState Structs (and msgspec with them) are imported on first use,
so ``phux snapshot --json`` can print a projection without them.
"""

from phux.engine._projection import SCHEMA_VERSION
from phux.engine._shell import CommandRecord
from phux.engine.events import (
    Bell,
    CommandFinished,
    CommandStarted,
    CwdChanged,
    EngineEvent,
    PromptStarted,
    TitleChanged,
)
from phux.engine.terminal import Modes, Terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phux.engine.screen_state import (
        CellColor,
        CellInfo,
        CellStyle,
        Cursor,
        DefaultColor,
        PaletteColor,
        RgbColor,
        ScreenState,
    )

_STRUCTS = frozenset(
    {
        "CellColor",
        "CellInfo",
        "CellStyle",
        "Cursor",
        "DefaultColor",
        "PaletteColor",
        "RgbColor",
        "ScreenState",
    }
)


def __getattr__(name: str) -> object:
    if name in _STRUCTS:
        from phux.engine import screen_state

        value = getattr(screen_state, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'phux.engine' has no attribute {name!r}")


__all__ = [
    "SCHEMA_VERSION",
    "Bell",
    "CellColor",
    "CellInfo",
    "CellStyle",
    "CommandFinished",
    "CommandRecord",
    "CommandStarted",
    "Cursor",
    "CwdChanged",
    "DefaultColor",
    "EngineEvent",
    "Modes",
    "PaletteColor",
    "PromptStarted",
    "RgbColor",
    "ScreenState",
    "Terminal",
    "TitleChanged",
]

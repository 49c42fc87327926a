"""phux.engine: pyte screens made fast and correct, projected to ScreenState.

Every client replays PTY bytes into a :class:`Terminal` and projects what it
needs; the server's replicas use the same class. Use this package only
through the names exported here.
"""

from phux.engine.events import (
    Bell,
    CommandFinished,
    CommandStarted,
    CwdChanged,
    EngineEvent,
    PromptStarted,
    TitleChanged,
)
from phux.engine.screen_state import (
    SCHEMA_VERSION,
    CellColor,
    CellInfo,
    CellStyle,
    Cursor,
    DefaultColor,
    PaletteColor,
    RgbColor,
    ScreenState,
)
from phux.engine.terminal import Modes, Terminal

__all__ = [
    "SCHEMA_VERSION",
    "Bell",
    "CellColor",
    "CellInfo",
    "CellStyle",
    "CommandFinished",
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

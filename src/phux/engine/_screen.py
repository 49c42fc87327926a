"""EngineScreen: a pyte ``Screen`` subclass that is fast and fixes pyte's bugs.

Where stock pyte is right, this screen leaves exactly the state pyte leaves
(buffer, cursor, modes; ``scrollback`` equals ``HistoryScreen.history.top``),
compared on the first nine fields of every cell (the fields of ``pyte.Char``).
Where stock pyte is wrong it follows xterm/tmux; every such departure is a
method below with a comment saying what stock pyte does.

State lives in well-named attributes so that a later checkpoint serialiser can
read it: ``buffer`` (the active grid), ``main_buffer`` (the saved main grid
while the alternate screen is active), ``alternate``, ``scrollback``,
``cursor``, ``mode``, ``margins``, ``tabstops``, ``saved_cursors``,
``g0_charset``/``g1_charset``/``charset``, ``title``, ``icon_name``, ``cwd``,
``semantic``, ``app_keypad``, ``hyperlink``.
"""

from __future__ import annotations

from phux.engine._draw import DrawingScreen
from phux.engine._edit import EditingScreen
from phux.engine._modes import ModesScreen
from phux.engine._osc import OscScreen
from phux.engine._resize import ResizingScreen


class EngineScreen(ModesScreen, OscScreen, ResizingScreen, EditingScreen, DrawingScreen):
    """A pyte Screen with scrollback, an alternate screen, OSC and the fixes listed in the issue.

    Its parts live in one module each, all on ``GridScreen`` (``_grid``: the state
    and the row and scrolling primitives): ``_draw``, ``_edit``, ``_modes``, ``_osc``
    and ``_resize``. None of them overrides a method of another.
    """


__all__ = ["EngineScreen"]

"""pyte, imported without importing wcwidth: every engine module gets pyte from here.

``pyte.screens`` runs ``from wcwidth import wcwidth`` when it is imported, and
importing wcwidth 0.9 costs ~20 ms (its package loads text wrapping, clipping
and escape-sequence parsing), which a one-shot verb such as ``phux snapshot``
cannot afford. The engine takes its widths from its own table (``_widths``),
so pyte is imported with a stand-in ``wcwidth`` module whose ``wcwidth`` is
the engine's ``char_width``: the pyte methods that ask for widths
(``Screen.draw`` and ``Screen.display``, both overridden by ``EngineScreen``)
then agree with the engine too.

The stand-in is in ``sys.modules`` only while pyte is imported, so a later
``import wcwidth`` anywhere gets the real package (a thread importing wcwidth
during those few milliseconds would get the stand-in; nothing in phux does).
When wcwidth or pyte is imported already, pyte is imported as usual: it uses
the real wcwidth, which the test extra pins to the version of the table.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator

from phux.engine._widths import char_width


@contextlib.contextmanager
def _wcwidth_stand_in() -> Iterator[None]:
    if "pyte" in sys.modules or "wcwidth" in sys.modules:
        yield
        return
    stand_in = types.ModuleType("wcwidth", "phux.engine's stand-in while pyte is imported")
    stand_in.wcwidth = char_width  # type: ignore[attr-defined]
    sys.modules["wcwidth"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("wcwidth") is stand_in:
            del sys.modules["wcwidth"]


with _wcwidth_stand_in():
    import pyte
    from pyte import charsets, graphics, modes
    from pyte.screens import Cursor, Margins, Savepoint, StaticDefaultDict

__all__ = [
    "Cursor",
    "Margins",
    "Savepoint",
    "StaticDefaultDict",
    "charsets",
    "graphics",
    "modes",
    "pyte",
]

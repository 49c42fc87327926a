"""ScreenState: the agent-facing projection of one terminal (schema_version 4).

These msgspec Structs are the one home of the shape: ``msgspec.json.encode``
produces exactly the seed's field names (001, section 4.2), and the JSON
Schemas in ``spec/schemas/`` are generated from them. The engine projects into
plain data first (:mod:`phux.engine._projection`, which matches these Structs
key for key, tested) and :func:`screen_state` converts it, so that a reader
which only prints JSON need not import msgspec.

Keys added to the seed's shape:

* ``title`` (str): the terminal title (OSC 0/2), ``""`` when never set.
* ``wrapped`` (list[int]): viewport row indexes that are soft-wrapped
  continuations, i.e. row ``r`` is listed when the text on row ``r`` continues
  row ``r - 1`` because the cursor auto-wrapped (row 0 is listed when it
  continues the newest scrollback row).

* ``alternate`` (bool, since 4): the program is on the alternate screen (a
  TUI such as vim or less). ``scrollback`` is then empty: history belongs to
  the main screen and is not mixed with the alternate screen's rows.
* ``styles`` (since 4, with ``--cells``): the viewport's styled text as runs,
  ``{row, col, width, text, semantic?, style}`` per stretch of adjacent cells of
  one style, ``style`` holding only what differs from the default. It replaces
  version 3's per-cell ``cells``, which is still produced for one version on
  request (``schema_version`` 3; every other key is the same).

* ``program`` and ``state`` (added without a bump, as new keys are): what the
  pane is doing, when the reader knows (``phux snapshot`` and ``wait`` do; a
  bare engine does not). ``program`` is the foreground program's name
  (``bash``, ``vim``), absent when unknown or once the pane exited; ``state``
  is ``prompt``, ``continuation``, ``running``, ``hidden_input``, ``tui`` or ``exited``
  (``phux.client.pane_state`` says how each is decided).

``styles`` and ``cells`` are absent (not ``null``) when not requested,
``program`` and ``state`` when unknown; every other key is always present.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from phux.engine._projection import SCHEMA_VERSION as SCHEMA_VERSION
from phux.engine._projection import Data


class DefaultColor(msgspec.Struct, frozen=True, tag_field="kind", tag="default"):
    """The terminal's default foreground or background."""


class PaletteColor(msgspec.Struct, frozen=True, tag_field="kind", tag="palette"):
    """An indexed colour: 0-7 (SGR 30-37/40-47), 8-15 (90-97/100-107), 0-255 (38;5;n)."""

    index: int


class RgbColor(msgspec.Struct, frozen=True, tag_field="kind", tag="rgb"):
    """A direct (truecolor) colour, SGR 38;2;r;g;b."""

    r: int
    g: int
    b: int


CellColor = DefaultColor | PaletteColor | RgbColor

DEFAULT_COLOR = DefaultColor()


class CellStyle(msgspec.Struct, frozen=True, kw_only=True):
    """The nine SGR flags and the two colours of one cell."""

    bold: bool = False
    faint: bool = False
    italic: bool = False
    underline: bool = False
    blink: bool = False
    inverse: bool = False
    invisible: bool = False
    strikethrough: bool = False
    overline: bool = False
    fg: CellColor = DEFAULT_COLOR
    bg: CellColor = DEFAULT_COLOR


class CellInfo(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One non-default cell: position, optional OSC 133 mark, style."""

    col: int
    row: int
    semantic: Literal["prompt", "input"] | None = None
    style: CellStyle


class SpanStyle(CellStyle, frozen=True, kw_only=True, omit_defaults=True):
    """A run's style: CellStyle's fields, written only where they differ from the default;
    with ``underline``, its style unless single (SGR 4:2-4:5, 21) and its colour unless the
    text's (SGR 58)."""

    underline_style: Literal["double", "curly", "dotted", "dashed"] | None = None
    underline_color: CellColor | None = None
    link: str | None = None
    """The URI of the OSC 8 hyperlink the run's text is under."""


class StyleRun(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Adjacent cells of one row with one style and OSC 133 mark; ``width`` in cells."""

    row: int
    col: int
    width: int
    text: str
    semantic: Literal["prompt", "input"] | None = None
    style: SpanStyle


class Link(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Adjacent cells of one row under one OSC 8 hyperlink; ``width`` in cells, ``id``
    the program's ``id=`` parameter (cells of one id belong to one link across rows)."""

    row: int
    col: int
    width: int
    uri: str
    id: str | None = None


class Cursor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Viewport-relative, zero-based cursor position; ``shape`` and ``blink`` once a
    program chose them (DECSCUSR, ``CSI Ps SP q``: a bar is how vi modes show insert)."""

    x: int
    y: int
    visible: bool
    shape: Literal["block", "underline", "bar"] | None = None
    blink: bool | None = None


class ScreenState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The seed's ScreenState, schema_version 4, plus ``title``, ``wrapped``,
    ``alternate``, ``styles`` (version 3: ``cells`` instead of ``styles``),
    ``program`` and ``state``.

    Every field but ``cells``, ``styles``, ``program`` and ``state`` is required
    so that ``omit_defaults`` only ever drops those (when they are ``None``).
    """

    schema_version: int
    pane: int
    cols: int
    rows: int
    cursor: Cursor | None
    lines: list[str]
    scrollback: list[str]
    cells: list[CellInfo] | None = None
    styles: list[StyleRun] | None = None
    title: str
    wrapped: list[int]
    alternate: bool
    links: list[Link] | None = None
    """The viewport's OSC 8 hyperlinks (``ls --hyperlink``, gcc, cargo); omitted when none."""
    frame_pending: bool = False
    """A synchronized-output frame (DEC mode 2026) was open: the screen is the one from
    before it (or, once the frame is 150 ms old, the live one); omitted when none was."""
    program: str | None = None
    state: Literal["prompt", "continuation", "running", "hidden_input", "tui", "exited"] | None = (
        None
    )


def screen_state(data: Data) -> ScreenState:
    """The Struct for :func:`phux.engine._projection.screen_data`'s plain data."""
    return msgspec.convert(data, ScreenState)

"""Modes and the pen: SM/RM (the alternate screen among them), margins, soft reset,
saved cursors, SGR and the OSC 133 mark the pen carries."""

from __future__ import annotations

import copy
from typing import Any

from phux.engine._cells import (
    ALT_SCREEN_MODES,
    DECCKM,
    SYNCHRONIZED,
    Cell,
    _attrs,
    _new_tuple,
    _set_attrs,
)
from phux.engine._frame import Frame
from phux.engine._grid import GridScreen
from phux.engine._pyte import Savepoint
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import modes as mo
from phux.engine._sgr import _sgr_plan

_SGR_CACHE_LIMIT = 8192
KITTY_STACK = 16
"""Entries a screen's kitty keyboard stack keeps (the oldest is evicted)."""
_KITTY_FLAGS = 0b11111  # the five progressive enhancements


class ModesScreen(GridScreen):
    """Sets modes, switches screens, saves cursors and applies SGR."""

    # -- modes ---------------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for m in modes:
                if m in ALT_SCREEN_MODES:
                    self._enter_alternate(m)
            if SYNCHRONIZED in modes and self.frame is None:
                self.frame = Frame(self, self.frame_clock())
            if 3 in modes:
                # DECCOLM: stock pyte resizes to 132 columns; we keep the PTY's
                # size (like tmux) and only clear and home.
                modes = tuple(m for m in modes if m != 3)
                self.erase_in_display(2)
                self.cursor_position()
        super().set_mode(*modes, **kwargs)
        self._forget_resets(modes, kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for m in modes:
                if m in ALT_SCREEN_MODES:
                    self._leave_alternate(m)
            if SYNCHRONIZED in modes:
                self.frame = None
            if 3 in modes:
                modes = tuple(m for m in modes if m != 3)
                self.erase_in_display(2)
                self.cursor_position()
        super().reset_mode(*modes, **kwargs)
        self._forget_resets(modes, kwargs)

    def _forget_resets(self, modes: tuple[int, ...], kwargs: dict[str, Any]) -> None:
        """A reset SGR's attributes depend on DECSCNM (reverse video): the remembered
        results of SGR strings no longer hold once it changes."""
        if kwargs.get("private") and (mo.DECSCNM >> 5) in modes:
            self._sgr_cache.clear()

    # -- the kitty keyboard protocol's flags ------------------------------------------

    @property
    def kitty_flags(self) -> int:
        """The active screen's kitty keyboard flags (the top of its stack; 0 if empty)."""
        stack = self.kitty_stacks[self.alternate]
        return stack[-1] if stack else 0

    def kitty_keys(self, prefix: str, params: str) -> None:
        """``CSI > flags u`` (push), ``CSI < n u`` (pop n), ``CSI = flags ; mode u`` (set:
        mode 1 all, 2 set bits, 3 reset bits), ``CSI ? u`` (query): kitty's keyboard
        protocol, a stack of flags per screen, the oldest entry evicted past
        ``KITTY_STACK`` (as its specification says)."""
        stack = self.kitty_stacks[self.alternate]
        fields = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
        value = fields[0] & _KITTY_FLAGS
        if prefix == ">":
            stack.append(value)
            del stack[:-KITTY_STACK]
        elif prefix == "<":
            del stack[max(0, len(stack) - max(fields[0], 1)) :]
        elif prefix == "=":
            mode = fields[1] if len(fields) > 1 and fields[1] else 1
            current = stack[-1] if stack else 0
            new = value if mode == 1 else current | value if mode == 2 else current & ~value
            if mode in (1, 2, 3):
                if stack:
                    stack[-1] = new
                else:
                    stack.append(new)
        elif prefix == "?":
            self.write_process_input(f"\x1b[?{self.kitty_flags}u")

    def _enter_alternate(self, mode: int) -> None:
        """?1049 (save the cursor, then a fresh alternate screen), ?1047, ?47.

        The saved cursor is DECSC's slot, as in xterm. Entering while already
        on the alternate screen does nothing (as tmux does).
        """
        if self.alternate:
            return
        if mode == 1049:
            self.save_cursor()
        self.main_buffer = self.buffer
        self.buffer = self._new_buffer()
        self.alternate = True
        self.kitty_stacks[True] = []  # (a fresh alternate screen: its own keyboard flags)

    def _leave_alternate(self, mode: int) -> None:
        if not self.alternate or self.main_buffer is None:
            return
        self.buffer = self.main_buffer
        self.main_buffer = None
        self.alternate = False
        self.kitty_stacks[True] = []  # (its flags go with it)
        if mode == 1049 and self.saved_cursors.get(False) is not None:
            self.restore_cursor()

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        """DECSTBM. Resetting the region homes the cursor too (stock pyte does not)."""
        if (top is None or top == 0) and bottom is None:
            self.margins = None
            self.cursor_position()
            return
        super().set_margins(top, bottom)

    def soft_reset(self) -> None:
        """DECSTR (CSI ! p), as xterm does it; the screen is not cleared."""
        self.mode.discard(mo.IRM)
        self.mode.discard(mo.DECOM)
        self.mode.discard(DECCKM)
        self.mode.add(mo.DECAWM)
        self.mode.add(mo.DECTCEM)
        self.cursor.hidden = False
        self.app_keypad = False
        self.margins = None
        self.charset = 0
        self.g0_charset = cs.LAT1_MAP
        self.g1_charset = cs.VT100_MAP
        _set_attrs(self.cursor, self._default_attrs())
        self.saved_cursors.pop(self.alternate, None)

    # -- cursor save/restore ---------------------------------------------------------

    def save_cursor(self) -> None:
        """DECSC / SCOSC: one slot per screen (stock pyte keeps an unbounded stack)."""
        self.saved_cursors[self.alternate] = Savepoint(
            copy.copy(self.cursor),
            self.g0_charset,
            self.g1_charset,
            self.charset,
            mo.DECOM in self.mode,
            mo.DECAWM in self.mode,
        )

    def restore_cursor(self) -> None:
        """DECRC / SCORC: restore without popping, so it can be repeated."""
        savepoint = self.saved_cursors.get(self.alternate)
        if savepoint is None:
            self.mode.discard(mo.DECOM)
            self.cursor_position()
            return
        self.g0_charset = savepoint.g0_charset
        self.g1_charset = savepoint.g1_charset
        self.charset = savepoint.charset
        if savepoint.origin:
            self.mode.add(mo.DECOM)
        else:
            self.mode.discard(mo.DECOM)
        if savepoint.wrap:
            self.mode.add(mo.DECAWM)
        else:
            self.mode.discard(mo.DECAWM)
        cursor = copy.copy(savepoint.cursor)
        cursor.hidden = mo.DECTCEM not in self.mode
        attrs = _attrs(cursor)
        if attrs.semantic != self.semantic or attrs.link != self.link:
            # (the OSC 133 mark and the OSC 8 link are not part of a saved cursor)
            _set_attrs(cursor, attrs._replace(semantic=self.semantic, link=self.link))
        self.cursor = cursor
        # Stock pyte clamps the restored row into the scroll region; xterm and
        # tmux restore it as saved (the region only binds in origin mode).
        self.ensure_hbounds()
        self.ensure_vbounds()

    # -- attributes --------------------------------------------------------------------

    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        self.sgr(";".join(map(str, attrs)))

    def sgr(self, params: str) -> None:
        """SGR from its raw parameter string (``;`` and ``:`` separated), memoised twice:
        the parsed plan per string, and the resulting attributes per (attributes, string)."""
        cursor = self.cursor
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        key = (attrs, params)
        cache = self._sgr_cache
        result = cache.get(key)
        if result is None:
            plans = self._sgr_plans
            plan = plans.get(params)
            seen = plan is not None
            if plan is None:
                plan = _sgr_plan(params)
                # A string is remembered (a set of strings, nothing for the garbage
                # collector to scan) the first time and its plan kept the second.
                once = self._sgr_once
                seen = params in once
                if seen:
                    if len(plans) >= _SGR_CACHE_LIMIT:
                        plans.clear()
                    plans[params] = plan
                else:
                    if len(once) >= _SGR_CACHE_LIMIT:
                        once.clear()
                    once.add(params)
            reset, assigns = plan
            if reset and not assigns:
                result = self._default_attrs()
            else:
                v: list[Any] = list(self._default_attrs() if reset else attrs)
                for index, value in assigns:
                    v[index] = value
                result = _new_tuple(Cell, v)
            if seen:  # a string seen once (say a random colour) is not worth a result
                if len(cache) >= _SGR_CACHE_LIMIT:
                    cache.clear()
                cache[key] = result
            elif not reset or assigns:  # built here (not the shared default attributes)
                self._one_off = result
        cursor.attrs = result  # type: ignore[assignment]

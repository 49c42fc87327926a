"""The multiplexer's keys: typing into the active pane, and the commands under
the prefix (windows, splits, zoom, kill, rename, copy mode, the tree and the
key list) (``phux.tui.mux``)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from phux.client.errors import ServerError
from phux.client.keys import is_interrupt
from phux.client.mirror import Mirror
from phux.client.pane_state import project_mirror
from phux.tui import layout as lay
from phux.tui.copy_mode import CopyMode
from phux.tui.keys import Command
from phux.tui.mux_panes import Panes
from phux.tui.mux_state import CALL_TIMEOUT, ECHO_WAIT, View, _meta_set, _subscribe, _unsubscribe
from phux.tui.overlay import help_overlay, key_tokens, tree_overlay
from phux.tui.term import now_ms
from phux.wire.frames import Input, Kill, ListTerminals, MetaSet, TerminalList

if TYPE_CHECKING:
    from phux.client.selectors import Pane


class Commands(Panes):
    """The person's keys and mouse, and the commands they run."""

    def on_keys(self, data: bytes) -> None:
        for item in self.reader.feed(data):
            if isinstance(item, bytes):
                self._typed(item)
            else:
                self.command(item)

    def _typed(self, data: bytes) -> None:
        if self.confirm is not None:
            _question, action = self.confirm
            self.confirm = None
            if data[:1] in (b"y", b"Y"):
                action()
            self.dirty = True
            return
        if self.prompt is not None:
            self._prompt_keys(data)
            return
        if self.overlay is not None:
            self._overlay_keys(data)
            return
        if self.copy is not None:
            self._copy_result(self.copy.feed(data))
            return
        view = self.active_view()
        if view is None or not view.mirror.alive:
            return
        now = time.monotonic()
        # Another person's size: typing takes it back (tmux's window-size latest).
        theirs = view.size is not None and (view.mirror.cols, view.mirror.rows) != view.size
        if theirs and now - self.last_takeover > 0.5:
            self.last_takeover = now
            self.resize_panes(force=True)
        tid = view.pane.terminal
        urgent = is_interrupt(data)
        if self.input_events:
            view.ours += data
            if len(view.ours) > 65536:
                del view.ours[:-65536]
        self.acks.append(
            self._send(lambda r: Input(request_id=r, terminal=tid, data=data, urgent=urgent))
        )
        self.echo_due = now + ECHO_WAIT  # the others' next frame waits for its echo

    def select_pane(self, tid: int | None) -> None:
        if tid is None or tid == self.active.get(self.window):
            return
        self.active[self.window] = tid
        self._focus(tid)
        self.dirty = True

    def _focus(self, tid: int) -> None:
        pane = next((p for p in self.panes if p.terminal == tid), None)
        if pane is None or not pane.alive:
            return
        value = str(now_ms()).encode()
        self.acks.append(
            self._send(
                lambda r: MetaSet(request_id=r, key="phux.focus_ms", value=value, terminal=tid)
            )
        )

    def select_window(self, window: int) -> None:
        if window == self.window or window not in self.windows():
            return
        self.leave_copy()
        self.window = window
        self.alerted.discard(window)
        self.zoomed = False
        self._subscribe_window()
        tid = self.active.get(window)
        if tid is not None:
            self._focus(tid)
        self.damage.invalidate()
        self.dirty = True

    def command(self, cmd: Command) -> None:
        self.dirty = True
        if cmd.name == "mouse":
            self._mouse(cmd)
            return
        self.confirm = None
        self.prompt = None
        self.overlay = None
        self._preview()
        name = cmd.name
        if name == "copy-mode":
            self.enter_copy()
            return
        self.leave_copy()
        if name == "detach":
            self.finish(
                "detached",
                f"[detached from {self.session}; reattach with: phux attach {self.session}]",
                0,
            )
        elif name in ("split-h", "split-v"):
            self._split("h" if name == "split-h" else "v")
        elif name == "new-window":
            self._new_window()
        elif name in ("next-window", "previous-window"):
            wins = self.windows()
            if self.window in wins:
                step = 1 if name == "next-window" else -1
                self.select_window(wins[(wins.index(self.window) + step) % len(wins)])
        elif name.startswith("select-window-"):
            self.select_window(int(name.rsplit("-", 1)[1]))
        elif name == "next-pane":
            node = self.layouts.get(self.window)
            if node is not None:
                by_index = {p.pane or 0: p.terminal for p in self.window_panes(self.window)}
                order = [by_index[i] for i in lay.panes(node) if i in by_index]
                self.zoomed = False
                self.select_pane(lay.next_pane(order, self.active.get(self.window, -1)))
                self.resize_panes()
        elif name.startswith("pane-"):
            was = self.zoomed
            self.zoomed = False
            tid = self.active.get(self.window)
            if tid is not None:
                self.select_pane(lay.neighbour(self.geometry(), tid, name[5:]))
            if was:
                self.resize_panes()
        elif name.startswith("resize-"):
            _, way, cells = name.split("-")
            self._resize_pane(way, int(cells))
        elif name.startswith("layout-"):
            self._preset(lay.PRESETS[int(name.rsplit("-", 1)[1]) - 1])
        elif name == "zoom":
            if len(self.window_panes(self.window)) > 1 or self.zoomed:
                self.zoomed = not self.zoomed
                self.resize_panes()
        elif name == "kill-pane":
            view = self.active_view()
            if view is not None:
                tid = view.pane.terminal
                self.confirm = (f"kill-pane {view.pane.id}? (y/n)", lambda: self._kill(tid))
        elif name == "rename-window":
            current = next(
                (p.window_name for p in self.window_panes(self.window) if p.window_name), ""
            )
            self.prompt = ("(rename-window) ", current or "", self._rename)
        elif name == "help":
            self._help()
        elif name == "tree":
            self._tree()

    def _resize_pane(self, way: str, cells: int) -> None:
        """Move the active pane's border (tmux's ``resize-pane``); the layout keeps it."""
        node = self.layouts.get(self.window)
        view = self.active_view()
        if node is None or view is None:
            return
        moved = lay.resize(node, self.area(), view.pane.pane or 0, way, cells)
        self._relayout(moved)

    def _preset(self, name: str) -> None:
        """tmux's preset layout ``name`` over the window's panes (the first is the main)."""
        node = self.layouts.get(self.window)
        if node is None:
            return
        made = lay.preset(name, sorted(lay.panes(node)), self.area())
        if made is not None:
            self._relayout(made)

    def _relayout(self, node: lay.Node) -> None:
        if node == self.layouts.get(self.window) and not self.zoomed:
            return
        self.layouts[self.window] = node
        self.zoomed = False
        self._store_layout(self.window, node)
        self.resize_panes()

    def _mouse(self, cmd: Command) -> None:
        assert cmd.mouse is not None
        button, x, y, pressed = cmd.mouse
        if not pressed:
            return
        tid = lay.pane_at(self.geometry(), x, y)
        if button & 64:  # the wheel: up enters copy mode in the pane under it
            up = button & 3 == 0
            if self.copy is None and up and tid is not None:
                self.select_pane(tid)
                self.enter_copy(wheel=True)
            if self.copy is not None:
                self._copy_result(self.copy.wheel(up=up))
            return
        if button & 3 == 0 and tid is not None:
            if tid != self.copy_tid:
                self.leave_copy()
            self.select_pane(tid)

    def enter_copy(self, *, wheel: bool = False) -> None:
        """Copy mode over the active pane; ``wheel``: scrolling back to the bottom
        leaves it (tmux's ``copy-mode -e``)."""
        view = self.active_view()
        rect = self.geometry().get(self.active.get(self.window, -1))
        if self.copy is not None or view is None or rect is None:
            return
        engine = view.mirror.engine
        if engine is None:
            return
        self.copy = CopyMode(
            engine, rect.w, rect.h, clipboard=self.allow_clipboard, exit_at_bottom=wheel
        )
        self.copy_tid = view.pane.terminal
        self.dirty = True

    def _copy_result(self, result: Any) -> None:
        self.out += result.clipboard
        if result.done:
            self.leave_copy()
        self.dirty = True

    def _split(self, kind: str) -> None:
        from phux.client.deadline import Deadline

        view = self.active_view()
        if view is None or not view.pane.alive:
            return
        try:
            made = self.client.split(
                view.pane.id,
                cwd=self._cwd_of(view),
                select=True,
                deadline=Deadline.after(CALL_TIMEOUT),
            )
        except ServerError as exc:
            self._say(f"split failed: {exc.message}")
            return
        node = self.layouts.get(self.window, view.pane.pane or 0)
        node = lay.split(node, view.pane.pane or 0, made.pane, kind)
        self.layouts[self.window] = node
        self.zoomed = False
        self._store_layout(self.window, node)
        self.active[self.window] = made.terminal_id
        self.relist()

    def _new_window(self) -> None:
        from phux.client.deadline import Deadline

        view = self.active_view()
        try:
            made = self.client.new_window(
                self.session,
                cwd=self._cwd_of(view) if view is not None else None,
                select=True,
                deadline=Deadline.after(CALL_TIMEOUT),
            )
        except ServerError as exc:
            self._say(f"new-window failed: {exc.message}")
            return
        self.active[made.window] = made.terminal_id
        self.relist()
        self.select_window(made.window)

    def _cwd_of(self, view: View) -> str | None:
        """Where a pane made from ``view``'s starts, as in tmux: the directory the
        pane's shell last reported (OSC 7, as the mirror has it), else (a local server)
        the directory of its foreground process or shell; None: attach's own."""
        engine = view.mirror.engine if view.mirror.ready else None
        if engine is not None and engine.cwd and engine.cwd.startswith("/"):
            return engine.cwd
        if self.client.host is not None:
            return None
        fg = view.mirror.foreground_of(view.pane)
        for pid in (fg.pgrp if fg is not None else None, view.pane.pid):
            if pid:
                try:
                    return os.readlink(f"/proc/{pid}/cwd")
                except OSError:
                    continue
        return None

    def _kill(self, tid: int) -> None:
        self.dismissed.add(tid)
        self.acks.append(self._send(lambda r: Kill(request_id=r, terminals=[tid])))
        node = self.layouts.get(self.window)
        pane = next((p for p in self.panes if p.terminal == tid), None)
        if node is not None and pane is not None:
            rest = lay.remove(node, pane.pane or 0)
            if rest is not None:
                self.layouts[self.window] = rest
                self._store_layout(self.window, rest)
        self.active.pop(self.window, None)
        self.zoomed = False
        self.relist()
        now_active = self.active.get(self.window)
        if now_active is not None:
            self._focus(now_active)  # the session's active pane moves on, as in tmux

    def _rename(self, name: str) -> None:
        if (
            not name
            or name.isdigit()
            or any(c in name for c in ":.,")
            or any(c.isspace() for c in name)
        ):
            self._say(f"invalid window name {name!r}: non-numeric, no `:` `.` `,` or spaces")
            return
        value = name.encode()
        for p in self.window_panes(self.window):
            if p.alive:
                self.acks.append(self._send(_meta_set("phux.window_name", value, p.terminal)))

    def _prompt_keys(self, data: bytes) -> None:
        assert self.prompt is not None
        label, text, done = self.prompt
        self.dirty = True
        for ch in data.decode("utf-8", "replace"):
            if ch in "\r\n":
                self.prompt = None
                done(text)
                return
            if ch == "\x1b" or ch == "\x03":
                self.prompt = None
                return
            if ch in "\x7f\x08":
                text = text[:-1]
            elif ch == "\x15":
                text = ""
            elif ch.isprintable():
                text += ch
        self.prompt = (label, text, done)

    def _help(self) -> None:
        prefix = self.key.label.split()[0] if self.key.prefix is not None else "(no prefix)"
        self.overlay = help_overlay(prefix)

    def _tree(self) -> None:
        from phux.client.selectors import Pane

        reply = self._call(lambda r: ListTerminals(request_id=r))
        assert isinstance(reply, TerminalList)
        self.overlay = tree_overlay(
            (Pane.from_wire(i) for i in reply.terminals),
            self._pane_state,
            current=(self.session, self.window, self.active.get(self.window)),
        )
        self._preview()

    def _pane_state(self, pane: Pane) -> str:
        """``program state`` of a pane for the tree: from its mirror when this client
        follows it, else the program the listing names."""
        view = self.views.get(pane.terminal)
        if view is not None and view.mirror.ready:
            try:
                program, state = project_mirror(pane, view.mirror)
            except Exception:  # a mirror still bootstrapping
                program, state = None, ""
            return " ".join(x for x in (program or "", state) if x)
        return pane.foreground.name if pane.foreground is not None else ""

    def _preview(self) -> None:
        """Follow the tree's selected pane (a viewer, unless this client already does)."""
        tid = self._preview_target()
        old = self.preview
        if old is not None and old.pane.terminal == tid:
            return
        if old is not None:
            self.preview = None
            self.acks.append(self._send(_unsubscribe(old.pane.terminal)))
        if tid is None or tid in self.views:
            return
        from phux.client.selectors import Pane

        mirror = Mirror(tid, history=0)
        self.preview = View(Pane(terminal=tid, alive=True, cols=1, rows=1, pid=0), mirror)
        mirror.request_id = self._send(_subscribe(tid, None, False))

    def _overlay_keys(self, data: bytes) -> None:
        overlay = self.overlay
        assert overlay is not None
        self.dirty = True
        if overlay.kind == "help":
            self.overlay = None
            return
        for key in key_tokens(data):
            if key in (b"\x1b[A", b"\x1bOA", b"k"):
                overlay.move(-1)
            elif key in (b"\x1b[B", b"\x1bOB", b"j"):
                overlay.move(1)
            elif key in (b"\r", b"\n"):
                self.overlay = None
                self._preview()
                self._switch(*overlay.targets[overlay.selected])
                return
            elif key in (b"q", b"\x1b", b"\x03"):
                self.overlay = None
                self._preview()
                return
        self._preview()

    def _switch(self, session: str, window: int | None, terminal: int | None) -> None:
        if session != self.session:
            for tid in list(self.views):
                self._unsubscribe(tid)
            self.session = session
            self.layouts.clear()
            self.active.clear()
            self.dismissed.clear()
            self.zoomed = False
            if window is None:
                self.window = -1  # the session's active window (relist picks it)
            else:
                self.window = window
            if terminal is not None and window is not None:
                self.active[window] = terminal
            self.damage.invalidate()
            self.relist()
            return
        if window is not None:
            self.select_window(window)
        if terminal is not None:
            self.select_pane(terminal)

    def on_resize(self, size: tuple[int, int]) -> None:
        if size == self.win:
            return
        self.win = size
        self.damage.invalidate()
        for v in self.views.values():
            v.drawn = None
        self.resize_panes()
        self.dirty = True

"""The multiplexer's drawing: a frame composed from the panes' mirrors, the
borders, overlays and status line; only changed cells written (``phux.tui.mux``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from phux.client.pane_state import project_mirror
from phux.tui import layout as lay
from phux.tui.compose import Canvas, copy_rows, pane_rows
from phux.tui.mux_state import (
    ACTIVE_BORDER,
    BORDER,
    ENGINE_BUDGET,
    FRAME_INTERVAL,
    FRAMES_IN_HAND,
    MOUSE_OFF,
    MOUSE_ON,
    OTHERS_INTERVAL,
    OTHERS_STARVED,
    MuxState,
    _exit_code,
)
from phux.tui.overlay import draw
from phux.tui.paint import PUSH_TITLE, cursor_shape
from phux.tui.status import PaneFacts, StatusLine, WindowTab, segments, state_text
from phux.tui.term import write_all

if TYPE_CHECKING:
    pass


class Drawing(MuxState):
    """Compose frames from the mirrors and write only what changed."""

    def begin(self) -> None:
        # The alternate screen: leaving puts back what the person's terminal showed.
        self.out += ("\x1b[?1049h" + PUSH_TITLE + self._mouse_on()).encode()

    def _mouse_on(self) -> str:
        return MOUSE_ON if self.mouse else ""

    def leave_bytes(self) -> bytes:
        return (MOUSE_OFF + self.painter.leave(user_alt=True)).encode()

    def render(self) -> bool:
        """Compose a frame and write only what changed; False when it was cut short
        for the person's news before it wrote anything (it does not count as a frame:
        the news is drawn as soon as it is read)."""
        self.dirty = False
        self.echo_news = False
        cols, rows = self.win
        canvas = self.canvas
        if (canvas.cols, canvas.rows) != (cols, rows):
            canvas = self.canvas = Canvas(cols, rows)
            for v in self.views.values():
                v.drawn = None
        geo = self.geometry()
        self.frame_due = None
        node = self.layouts.get(self.window)
        area = self.area()
        active = self.active.get(self.window)
        if self.zoomed or node is None:
            lines: list[tuple[str, lay.Rect]] = []
        else:
            lines = lay.borders(node, area)
        redraw_borders = self._borders != (lines, active, geo)
        if redraw_borders:
            self._borders = (lines, active, geo)
            canvas.fill(area)
            for v in self.views.values():
                v.drawn = None
            near = geo.get(active) if active is not None else None
            for kind, r in lines:
                for y in range(r.y, r.y + r.h):
                    for x in range(r.x, r.x + r.w):
                        lit = near is not None and (
                            near.x - 1 <= x <= near.x + near.w
                            and near.y - 1 <= y <= near.y + near.h
                        )
                        ch = "│" if kind == "|" else "─"
                        canvas.cells[y][x] = (ch, ACTIVE_BORDER if lit else BORDER)
        active_first = sorted(geo.items(), key=lambda item: item[0] != active)
        # An echo goes out alone: when the pane the person types into has news, this
        # frame draws only it (the others' parsing and drawing wait for a later frame),
        # unless the others have been owed a frame for OTHERS_STARVED already (a pane
        # the person floods, or types into without pause, must not starve the others).
        now = time.monotonic()
        others_due = now >= self.others_at
        starved = others_due and now - self.others_at >= OTHERS_STARVED
        echo_only = (
            not redraw_borders
            and self.overlay is None
            and not starved
            and self._active_has_news(active)
        )
        due_at = self.others_at
        yielded = False
        stop: float | None = None
        for tid, rect in active_first:
            view = self.views.get(tid)
            if view is None:
                continue
            if tid != active:
                if stop is None:
                    # The engine budget of the other panes starts after the active one.
                    stop = time.monotonic() + ENGINE_BUDGET
                    if others_due and not echo_only:
                        self.others_at = time.monotonic() + OTHERS_INTERVAL
                if others_due and not (echo_only or yielded or starved) and self.news_waiting():
                    # A key, or the active pane's output (an echo), came while the others
                    # are drawn: this frame ends here, and they wait for a later one.
                    yielded = True
                    self.others_at = due_at
                late = view.mirror.held_bytes and time.monotonic() > stop
                if echo_only or yielded or late or not others_due:
                    self.dirty = True  # a later frame draws it
                    continue
            engine = view.mirror.engine
            if engine is None:
                continue
            copy = self.copy
            if copy is not None and tid == self.copy_tid:
                if copy.term is not engine:  # a fresh bootstrap replaced the engine
                    self.leave_copy()
                else:
                    if (copy.width, copy.height) != (rect.w, rect.h):
                        copy.resize(rect.w, rect.h)
                    copy_rows(copy, self.painter, rect, canvas)
                    view.drawn = None
                    continue
            gen = engine.generation
            held = engine.frame_deadline  # (a 2026 frame that holds: redrawn at its end)
            if held is not None:
                due: float | None = self.frame_due
                self.frame_due = held if due is None else min(due, held)
            key = (gen, rect, view.mirror.alive, held is None)
            if view.drawn == key:
                continue
            view.drawn = key
            pane_rows(engine, self.painter, rect, canvas)
            if not view.mirror.alive:
                facts = PaneFacts(state="exited", exit_code=_exit_code(view.mirror))
                label = f" {state_text(facts)} "
                canvas.text(
                    rect.x + max(0, rect.w - len(label)), rect.y, label, "\x1b[0;30;43m", rect.w
                )
        if self.overlay is not None:
            draw(self.overlay, canvas, area, self._preview_engine(), self.painter)
            for v in self.views.values():
                v.drawn = None
            self._borders = None
        self._draw_status(canvas)
        tail = self._cursor_and_modes(geo)
        data = self.damage.frame(canvas, tail, tail_changed=tail != self._tail)
        self._tail = tail
        if data:
            self.out += data.encode()
        elif yielded:
            return False
        self.frames += 1
        return True

    def frame_at(self, now: float) -> float:
        """When the next frame may be drawn (while something changed): FRAME_INTERVAL
        after the last one; not before a key's echo while the others wait for it. The
        frame with that echo goes out as soon as it is read if the cap has a frame in
        hand (``spare_frames``): a person's keys are drawn at once, and frames stay
        at most one per FRAME_INTERVAL over time however fast keys come."""
        if self.echo_news:
            spare = self.spare_frames(now)
            return now if spare >= 1 else now + (1 - spare) * FRAME_INTERVAL
        hold = self.echo_hold(now)
        return self.next_frame if hold is None else max(hold, self.next_frame)

    def spare_frames(self, now: float) -> float:
        """Frames the cap has in hand: one more every FRAME_INTERVAL, up to FRAMES_IN_HAND."""
        return min(FRAMES_IN_HAND, self.spare + (now - self.spare_at) / FRAME_INTERVAL)

    def drew(self, now: float) -> None:
        """A frame went out: the next one FRAME_INTERVAL later (a key's echo sooner if
        the cap has one in hand)."""
        self.spare = self.spare_frames(now) - 1  # (below 0: owed, by a frame on time)
        self.spare_at = now
        self.next_frame = now + FRAME_INTERVAL

    def echo_hold(self, now: float) -> float | None:
        """Until when the next frame waits for the echo of the person's key (None: it
        does not): only while that frame would draw the other panes' news in its
        place, and they have not been owed a frame for OTHERS_STARVED."""
        if now >= self.echo_due or now < self.others_at:
            return None
        if now - self.others_at >= OTHERS_STARVED:
            return None
        if self._active_has_news(self.active.get(self.window)):
            return None
        return self.echo_due

    def _active_has_news(self, active: int | None) -> bool:
        """Whether the active pane has output not drawn yet (an echo, say)."""
        view = self.views.get(active) if active is not None else None
        if view is None or self.copy is not None:
            return False
        if view.mirror.held_bytes:
            return True
        engine = view.mirror.engine
        return engine is not None and (view.drawn is None or view.drawn[0] != engine.generation)

    def _draw_status(self, canvas: Canvas) -> None:
        cols, rows = self.win
        y = rows - 1
        if y <= 0:
            return
        now = time.monotonic()
        if self.message is not None and now >= self.message_until:
            self.message = None
        message = None
        if self.confirm is not None:
            message = self.confirm[0]
        elif self.prompt is not None:
            message = self.prompt[0] + self.prompt[1]
        elif self.message is not None:
            message = self.message
        elif self.copy is not None and self.copy.view().message:
            message = self.copy.view().message
        line = StatusLine(self.session, self._tabs(), self._facts(), message)
        canvas.fill(lay.Rect(0, y, cols, 1))
        x = 0
        for text, style in segments(line, cols):
            x = canvas.text(x, y, text, style, cols - x)

    def _tabs(self) -> list[WindowTab]:
        tabs = []
        for w in self.windows():
            name = next((p.window_name for p in self.window_panes(w) if p.window_name), None)
            if name is None:
                first = self.window_panes(w)[0]
                fg = first.foreground
                name = fg.name if fg is not None and fg.name else "-"
            alert = w in self.alerted and w != self.window
            tabs.append(WindowTab(w, name, active=w == self.window, alert=alert))
        return tabs

    def _facts(self) -> PaneFacts:
        view = self.active_view()
        if view is None:
            return PaneFacts(zoomed=self.zoomed)
        mirror = view.mirror
        try:
            program, state = project_mirror(view.pane, mirror)
        except Exception:  # a mirror still bootstrapping
            program, state = None, ""
        running_s = None
        last_exit = None
        engine = mirror.engine if mirror.ready else None
        if engine is not None:
            commands = engine.commands
            if commands:
                last = commands[-1]
                if last.end_row is None and last.started_ms is not None:
                    running_s = max(0, int(time.time() - last.started_ms / 1000))
                done = [c for c in commands if c.end_row is not None]
                if done:
                    last_exit = done[-1].exit_code
        return PaneFacts(
            program=program,
            state=state,
            running_s=running_s,
            exit_code=_exit_code(mirror),
            last_exit=last_exit,
            typed_by=view.typed_by,
            zoomed=self.zoomed,
        )

    def _cursor_and_modes(self, geo: dict[int, lay.Rect]) -> str:
        """The cursor in the active pane, and the key modes of its program."""
        view = self.active_view()
        rect = geo.get(self.active.get(self.window, -1))
        out = []
        if self.prompt is not None:
            cols, rows = self.win
            x = min(len(self.prompt[0]) + len(self.prompt[1]), cols - 1)
            return f"\x1b[{rows};{x + 1}H\x1b[?25h"
        if view is None or rect is None or self.overlay is not None or self.confirm is not None:
            return "\x1b[?25l"
        if self.copy is not None:
            cx, cy = self.copy.view().cursor
            return f"\x1b[{rect.y + cy + 1};{rect.x + cx + 1}H\x1b[?25h"
        engine = view.mirror.engine
        if engine is None:
            return "\x1b[?25l"
        screen: Any = engine.screen
        shown: Any = engine.shown  # (the cursor as drawn: before an open 2026 frame)
        from phux.engine._pyte import modes as mo

        top = max(0, min(shown.cursor.y - rect.h + 1, engine.rows - rect.h))
        cx = min(shown.cursor.x, engine.cols - 1)
        cy = shown.cursor.y - top
        visible = mo.DECTCEM in shown.mode and 0 <= cx < rect.w and 0 <= cy < rect.h
        out.append(f"\x1b[{rect.y + cy + 1};{rect.x + cx + 1}H")
        out.append(cursor_shape(shown))
        out.append("\x1b[?1h" if (1 << 5) in screen.mode else "\x1b[?1l")
        out.append("\x1b[?2004h" if (2004 << 5) in screen.mode else "\x1b[?2004l")
        out.append("\x1b=" if screen.app_keypad else "\x1b>")
        out.append("\x1b[?25h" if visible else "\x1b[?25l")
        return "".join(out)

    def flush(self) -> None:
        if self.out:
            data = bytes(self.out)
            self.out.clear()
            write_all(self.out_fd, data)

    def _preview_engine(self) -> Any:
        tid = self._preview_target()
        if tid is None:
            return None
        view = self.views.get(tid)
        if view is None and self.preview is not None and self.preview.pane.terminal == tid:
            view = self.preview
        return view.mirror.engine if view is not None and view.mirror.ready else None

"""``phux attach``: put a person's terminal in a live phux terminal.

Attach is a client like any other (no wire privileges). It resolves the
target (default: the most recently used session), marks the pane focused
(``phux.focus_ms``), and SUBSCRIBEs as PRIMARY with the window's size, so
the person's window size (and every SIGWINCH, sent as RESIZE) becomes the
terminal's size. Agents' reads are viewers and never change it.

Screen: the bootstrap is replayed into a local ``phux.engine.Terminal`` and
*painted* (``phux.tui.paint``): never written raw, because the journal may
start mid-state, hold terminal queries and be megabytes long. The first paint
also puts the engine's scrollback into the person's own terminal scrollback.
Live OUTPUT is then passed through as bytes (cheap and exact) filtered as
tmux filters a pane by default (``phux.tui.queries``): terminal queries
removed (the server answers them; the person's terminal must not answer them
a second time), clipboard writes (unless allowed), passthrough and
DCS/APC/PM/SOS strings dropped, titles cleaned. It is also fed to the
engine, so that a later repaint (a RESIZED, a TOMBSTONE and fresh bootstrap,
SIGCONT) is possible.

The engine is much slower than passthrough, so it never gates what the person
sees: its work (bytes and size changes, in stream order) waits in a backlog
that is fed in time slices after each write, and a repaint waits until it has
caught up. A bootstrap the engine cannot replay within FIRST_PAINT_WAIT is
shown at once as a *preview* painted from the journal's tail, then repainted
exactly once the engine is done; a backlog beyond MAX_BACKLOG is dropped for
a fresh subscription.

When the terminal's size is not the window's (another person attached later
with another size: the most recent primary wins), passing bytes through would
garble the window, so attach paints the engine's screen clipped to the window
after each batch instead; typing takes the size back (the most recently
active person wins, as tmux's ``window-size latest``).

Input: keystrokes go to the terminal as typed (INPUT frames); the detach key
(``phux.tui.keys``, default ``C-b d``) leaves the terminal running.

Copy mode (``phux.tui.copy_mode``): the prefix and ``[``, or the mouse wheel
when the program has not asked for mouse reports, shows the engine's history
and screen instead of the live output, frozen where the person scrolls while
output keeps being fed to the engine; keys go to copy mode, not the program.
For the wheel, attach asks the person's terminal for mouse reports (SGR)
whenever the program in the main screen has not asked for them itself; the
reports are never passed to such a program. Leaving repaints the live screen.

Exits: detach, the program exiting (its status is printed), the server going
away, SIGTERM/SIGHUP, or any exception: on every path the tty modes are
restored and the screen is put back (alternate screen left, cursor shown,
SGR and mouse/paste modes reset).
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    PhuxError,
    ProtocolError,
)
from phux.tui.keys import parse_detach_key
from phux.tui.mux import Mux
from phux.tui.single import Session
from phux.tui.term import Outcome, RawTerminal, describe_exit, window_size
from phux.tui.term import write_all as _write_all
from phux.wire.frames import (
    Unsubscribe,
)

if TYPE_CHECKING:
    from phux.client import Client
    from phux.client.selectors import Pane

SETUP_TIMEOUT = 10.0
"""Seconds allowed for connecting, resolving and subscribing."""


class NotATerminal(PhuxError):
    code = "not_a_tty"
    remedy = (
        "run phux attach from an interactive terminal; agents read with "
        "`phux snapshot` and type with `phux send-keys`"
    )


class SelfAttach(PhuxError):
    code = "self_attach"
    remedy = "attach from outside the terminal, or to another pane"


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def resolve_target(client: Client, target: str | None, deadline: object) -> Pane:
    """TARGET -> one pane; no TARGET means the most recently used session."""
    from phux.client.deadline import Deadline
    from phux.client.errors import TargetNotFound
    from phux.client.selectors import pick_pane

    assert isinstance(deadline, Deadline)
    if target is not None:
        return client.resolve(target, deadline)
    snap = client.list_terminals(deadline)
    name = snap.last_session()
    if name is None:
        raise TargetNotFound("there are no sessions to attach to")
    return pick_pane(snap.session(name))


def require_tty(in_fd: int = 0, out_fd: int = 1) -> None:
    """Raise NotATerminal unless stdin and stdout are terminals (check before
    creating anything that attach would then fail to show)."""
    if not os.isatty(in_fd) or not os.isatty(out_fd):
        raise NotATerminal("phux attach needs a terminal: stdin/stdout is not a tty")


def run_attach(
    target: str | None = None,
    *,
    socket: str | os.PathLike[str] | None = None,
    detach_key: str | None = None,
    allow_clipboard: bool | None = None,
    mouse: bool | None = None,
    in_fd: int = 0,
    out_fd: int = 1,
) -> int:
    """Attach the controlling terminal (``in_fd``/``out_fd``) to TARGET until the
    person detaches, the program exits or the server goes away; returns the
    exit code (0 detached or exited, 1 server gone, 128+N on signal N).

    ``allow_clipboard`` (default: ``$PHUX_ALLOW_CLIPBOARD`` is 1/yes/true/on)
    lets the program's OSC 52 clipboard writes through to the person's terminal.
    ``mouse``: take the person's mouse (a click selects a pane, the wheel enters copy
    mode); None: in the multiplexer only, so a single pane's attach leaves the
    terminal's own wheel and selection alone.

    Errors before the terminal is taken over (not a tty, no server, no such
    target, a bad detach key) raise PhuxError, for the caller to report.
    """
    from phux.client import Client
    from phux.client.deadline import Deadline
    from phux.client.errors import InvalidArgument
    from phux.tui.keys import DetachKeyError

    require_tty(in_fd, out_fd)
    try:
        key = parse_detach_key(
            detach_key if detach_key is not None else os.environ.get("PHUX_DETACH_KEY")
        )
    except DetachKeyError as exc:
        raise InvalidArgument(str(exc)) from None
    if allow_clipboard is None:
        allow = os.environ.get("PHUX_ALLOW_CLIPBOARD", "").strip().lower()
        allow_clipboard = allow in ("1", "yes", "true", "on")
    deadline = Deadline.after(SETUP_TIMEOUT)
    client = Client(socket, client_name="phux-attach")
    try:
        pane = resolve_target(client, target, deadline)
        _refuse_self(client, pane)
        if not pane.alive:
            from phux.client.errors import TerminalGone

            raise TerminalGone(f"{pane.id} has exited ({describe_exit(pane.exit)})")
        client.focus(pane, deadline)
        conn = client.connection(deadline)
        size = window_size(out_fd)
        if _session_has_panes(client, pane, deadline):
            mux = Mux(client, conn, key, pane, out_fd=out_fd, size=size)
            mux.allow_clipboard = allow_clipboard
            mux.mouse = mouse is not False
            outcome = _attached(mux, in_fd)
        else:
            session = Session(conn, pane, key, in_fd=in_fd, out_fd=out_fd, size=size)
            session.filter.allow_clipboard = allow_clipboard
            session.mouse = mouse is True
            outcome = _attached(session, in_fd)
            if outcome.reason == "multiplex":
                # The person split, made a window...: on as the multiplexer.
                tid = pane.terminal
                conn.call(lambda r: Unsubscribe(request_id=r, terminal=tid), Deadline.after(5))
                mux = Mux(client, conn, key, pane, out_fd=out_fd, size=window_size(out_fd))
                mux.allow_clipboard = allow_clipboard
                mux.mouse = mouse is not False
                mux.first = session.switch_to
                outcome = _attached(mux, in_fd)
    finally:
        client.close()
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        _write_all(out_fd, (outcome.message + "\n").encode())
    return outcome.exit_code


def _session_has_panes(client: Client, pane: Pane, deadline: object) -> bool:
    """Whether ``pane``'s session holds more panes than it (then attach multiplexes)."""
    from phux.client.deadline import Deadline

    assert isinstance(deadline, Deadline)
    if pane.session is None:
        return False
    return len(client.list_terminals(deadline).session(pane.session)) > 1


def _refuse_self(client: Client, pane: Pane) -> None:
    inside = os.environ.get("PHUX_TERMINAL")
    sock = os.environ.get("PHUX_SOCKET")
    if not inside or not sock or inside != str(pane.terminal):
        return
    with contextlib.suppress(OSError):
        if Path(sock).resolve() != Path(client.socket_path).resolve():
            return
    raise SelfAttach(f"refusing to attach {pane.id} to itself (you are inside it)")


def _attached(session: Session | Mux, in_fd: int) -> Outcome:
    """The raw-mode loop; the terminal is restored before this returns or raises."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    pending: dict[str, bool] = {"winch": False, "cont": False}

    def on_winch(signum: int, frame: FrameType | None) -> None:
        pending["winch"] = True

    def on_cont(signum: int, frame: FrameType | None) -> None:
        pending["cont"] = True

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(signum)

    handlers = {
        signal.SIGWINCH: on_winch,
        signal.SIGCONT: on_cont,
        signal.SIGTERM: on_term,
        signal.SIGHUP: on_term,
        signal.SIGQUIT: on_term,
    }
    previous = {sig: signal.getsignal(sig) for sig in handlers}
    old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    raw = RawTerminal(in_fd)
    try:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        raw.enter()
        try:
            session.begin()
            session.run(in_fd, wake_r, pending, raw)
        finally:
            # No signal may interrupt the restore.
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                signal.signal(sig, signal.SIG_IGN)
            with contextlib.suppress(OSError):
                session.flush()
            with contextlib.suppress(OSError):
                _write_all(session.out_fd, session.leave_bytes())
    except _Terminated as exc:
        name = signal.Signals(exc.signum).name
        session.finish("signal", f"[{name}: detached from {session.name}]", 128 + exc.signum)
    except (ConnectionLost, ProtocolError):
        session.finish("server_gone", "[server went away]", 1)
    except DeadlineExceeded:
        session.finish("server_gone", "[the server stopped reading: detached]", 1)
    finally:
        raw.restore()
        signal.set_wakeup_fd(old_wakeup)
        for sig, old in previous.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(sig, old)
        os.close(wake_r)
        os.close(wake_w)
    assert session.outcome is not None
    return session.outcome

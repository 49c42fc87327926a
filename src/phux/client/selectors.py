"""TARGET selectors: the grammar and its client-side resolution.

Grammar (one TARGET string):

    .            the current pane: ``$PHUX_TERMINAL`` when it names a live terminal of
                 this server, else the active pane of the most recently active session
    =            the last pane: the live pane made active before the most recent one
                 (the second greatest ``phux.focus_ms``), like tmux's last-pane
    NAME         a session (all its panes; one pane is its active pane); when no live
                 session has that name, the closed panes of one the server still retains
    NAME:N       window index N of a session
    NAME:TAG     the window(s) of a session whose ``phux.window_name`` is TAG
    NAME:W.M     pane index M of window W (an index or a window name)
    @N           the terminal with wire id N
    #TAG         every live terminal whose ``phux.tags`` contains TAG

Resolution runs over one LIST_TERMINALS snapshot using the L3 metadata
conventions (``phux.session``, ``phux.window``, ``phux.window_name``,
``phux.pane``, ``phux.tags``, ``phux.focus_ms``). A selector that names
several panes narrows to one: the candidate with the greatest ``phux.focus_ms``
when any has one, else the first in order (window, pane, id). ``phux.focus_ms``
marks the *active* pane, as tmux's: it moves when a client writes to a pane
(send-keys, paste, run), selects it (attach, ``--select``) or creates a session,
never on a read (snapshot, wait, watch, history), so a session name keeps
naming the same pane until someone acts on another.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence

from phux.client.errors import LastNotAvailable, SelectorSyntax, TargetNotFound
from phux.record import Record, field
from phux.wire.frames import ExitStatus, Foreground, MetaEntry, TerminalFilter, TerminalInfo

KEY_SESSION = "phux.session"
KEY_WINDOW = "phux.window"
KEY_WINDOW_NAME = "phux.window_name"
KEY_PANE = "phux.pane"
KEY_TAGS = "phux.tags"
KEY_FOCUS = "phux.focus_ms"
KEY_SLOT = "phux.slot"


def slot_value(session: str, window: int, pane: int) -> bytes:
    """``phux.slot``: a pane's place, unique among live terminals (spec/L3.md §2), so
    that the server refuses a second pane at the same index of a session's window."""
    return f"{window}.{pane}:{session}".encode()


_DIGITS = re.compile(r"[0-9]+")
_NAME_FORBIDDEN = re.compile(r"[:.\s\x00-\x1f\x7f]")


# ---------------------------------------------------------------- parsed selectors


class Current(Record):
    """``.``"""


class Last(Record):
    """``=``"""


class ById(Record):
    terminal: int


class ByTag(Record):
    tag: str


class SessionSel(Record):
    """``name``, ``name:W`` or ``name:W.M``; ``window`` is an int index or a window name."""

    session: str
    window: int | str | None = None
    pane: int | None = None


Selector = Current | Last | ById | ByTag | SessionSel


def _bad(text: str, why: str) -> SelectorSyntax:
    return SelectorSyntax(f"bad target {text!r}: {why}")


def split_host(target: str | None) -> tuple[str | None, str | None]:
    """``HOST/selector`` -> (HOST, selector): a pane on another machine, reached over
    ssh (phux.client.remote); a target without ``/`` has no host. The selector after
    the ``/`` may be empty (None: the default pane there)."""
    if target is None or "/" not in target:
        return None, target
    host, _, rest = target.partition("/")
    return host, rest or None


def parse_selector(text: str) -> Selector:
    """Parse one TARGET string; raises SelectorSyntax with the reason."""
    if text == "":
        raise _bad(text, "empty target")
    if text != text.strip() or any(c in text for c in "\n\r\t"):
        raise _bad(text, "whitespace is not allowed in a target")
    if text == ".":
        return Current()
    if text == "=":
        return Last()
    if text[0] == "@":
        digits = text[1:]
        if not _DIGITS.fullmatch(digits):
            raise _bad(text, "`@` must be followed by a terminal id number, like @3")
        value = int(digits)
        if value <= 0 or value > 0xFFFFFFFF:
            raise _bad(text, "terminal ids are 1..4294967295")
        return ById(terminal=value)
    if text[0] == "#":
        tag = text[1:]
        if not tag or "," in tag:
            raise _bad(text, "`#` must be followed by a tag name (no commas), like #build")
        return ByTag(tag=tag)
    session, colon, rest = text.partition(":")
    if not session:
        raise _bad(text, "missing session name before `:`")
    if "." in session:
        raise _bad(text, "session names cannot contain `.`; use NAME:W.M for a pane")
    if session[0] in "=@#":
        raise _bad(text, f"a session name cannot start with {session[0]!r}")
    if not colon:
        return SessionSel(session=session)
    if not rest:
        raise _bad(text, "missing window after `:` (a number or a window name)")
    window_text, dot, pane_text = rest.partition(".")
    if not window_text:
        raise _bad(text, "missing window before `.`")
    window: int | str = int(window_text) if _DIGITS.fullmatch(window_text) else window_text
    if ":" in window_text:
        raise _bad(text, "more than one `:`")
    if not dot:
        return SessionSel(session=session, window=window)
    if not _DIGITS.fullmatch(pane_text):
        raise _bad(text, "the pane after `.` must be a number, like work:0.1")
    return SessionSel(session=session, window=window, pane=int(pane_text))


def validate_session_name(name: str) -> str | None:
    """None if ``name`` can be a session name, else why not."""
    if not name:
        return "a session name cannot be empty"
    if len(name.encode()) > 256:
        return "a session name is at most 256 bytes"
    if _NAME_FORBIDDEN.search(name):
        return "a session name cannot contain `:`, `.`, whitespace or control characters"
    if name[0] in "=@#":
        return f"a session name cannot start with {name[0]!r}"
    return None


# ---------------------------------------------------------------- the snapshot


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


class Pane(Record):
    """One terminal as the L3 conventions see it (the client's TerminalInfo)."""

    terminal: int
    alive: bool
    cols: int
    rows: int
    pid: int
    session: str | None = None
    window: int | None = None
    window_name: str | None = None
    pane: int | None = None
    tags: tuple[str, ...] = ()
    focus_ms: int | None = None
    primaries: int = 0
    viewers: int = 0
    next_seq: int = 0
    created_ms: int = 0
    exit: ExitStatus | None = None
    metadata: Mapping[str, bytes] = field(default_factory=dict)
    foreground: Foreground | None = None
    """What holds the PTY as the server read it for this listing (None: exited,
    unreadable, or a server older than protocol 1.1)."""
    unread_input: int = 0
    """Input its program has not read yet (a filtered listing's, protocol 1.4)."""
    unread_line_open: bool = False
    """That input ends inside a line (no CR or LF last)."""

    @property
    def id(self) -> str:
        """The pane rendered as a selector, ``@N``."""
        return f"@{self.terminal}"

    @classmethod
    def from_wire(cls, info: TerminalInfo) -> Pane:
        meta = {entry.key: entry.value for entry in info.metadata}

        def text(key: str) -> str | None:
            raw = meta.get(key)
            return None if raw is None else raw.decode("utf-8", "replace")

        tags_text = text(KEY_TAGS) or ""
        return cls(
            terminal=info.terminal,
            alive=info.alive,
            cols=info.cols,
            rows=info.rows,
            pid=info.pid,
            session=text(KEY_SESSION),
            window=_int_or_none(text(KEY_WINDOW)),
            window_name=text(KEY_WINDOW_NAME),
            pane=_int_or_none(text(KEY_PANE)),
            tags=tuple(t.strip() for t in tags_text.split(",") if t.strip()),
            focus_ms=_int_or_none(text(KEY_FOCUS)),
            primaries=info.primaries,
            viewers=info.viewers,
            next_seq=info.next_seq,
            created_ms=info.created_ms,
            exit=info.exit,
            metadata=meta,
            foreground=info.foreground,
            unread_input=info.unread_input,
            unread_line_open=info.unread_line_open,
        )

    def order_key(self) -> tuple[int, int, int]:
        big = 1 << 62
        return (
            big if self.window is None else self.window,
            big if self.pane is None else self.pane,
            self.terminal,
        )


class Session(Record):
    """One session as ``Client.ls`` reports it (``SessionInfo`` is its JSON shape)."""

    name: str
    window_count: int
    attached_client_count: int
    terminals: list[int]
    exited: bool = False
    """Every pane of the session exited; the server still keeps them (their final
    screens and exit statuses) until retention ends."""


class Snapshot:
    """A LIST_TERMINALS answer, indexed for selector resolution."""

    def __init__(self, panes: Iterable[Pane]) -> None:
        self.panes: list[Pane] = sorted(panes, key=lambda p: p.terminal)
        self.by_id: dict[int, Pane] = {p.terminal: p for p in self.panes}

    @classmethod
    def from_wire(cls, infos: Iterable[TerminalInfo]) -> Snapshot:
        return cls(Pane.from_wire(info) for info in infos)

    def live(self) -> list[Pane]:
        return [p for p in self.panes if p.alive]

    def sessions(self) -> dict[str, list[Pane]]:
        """Session name -> its live panes in order (window, pane, id); names sorted."""
        out: dict[str, list[Pane]] = {}
        for pane in self.live():
            if pane.session is not None:
                out.setdefault(pane.session, []).append(pane)
        return {name: sorted(out[name], key=Pane.order_key) for name in sorted(out)}

    def session(self, name: str) -> list[Pane]:
        return self.sessions().get(name, [])

    def retained_session(self, name: str) -> list[Pane]:
        """The closed, still retained panes that were session ``name`` (the server keeps
        a closed terminal's metadata readable until it forgets it, spec/L3.md §1)."""
        panes = [p for p in self.panes if not p.alive and p.session == name]
        return sorted(panes, key=Pane.order_key)

    def retained_sessions(self) -> dict[str, list[Pane]]:
        """Session name -> its closed, still retained panes, for the names no live
        terminal has (what a name selector falls back to); names sorted."""
        live = self.sessions()
        out: dict[str, list[Pane]] = {}
        for pane in self.panes:
            if not pane.alive and pane.session is not None and pane.session not in live:
                out.setdefault(pane.session, []).append(pane)
        return {name: sorted(out[name], key=Pane.order_key) for name in sorted(out)}

    def last_session(self) -> str | None:
        """The session of the most recently active pane (else the newest session)."""
        best: tuple[int, int] | None = None
        name: str | None = None
        for pane in self.live():
            if pane.session is None:
                continue
            key = (pane.focus_ms if pane.focus_ms is not None else -1, pane.terminal)
            if best is None or key > best:
                best, name = key, pane.session
        return name


def pick_pane(candidates: Sequence[Pane]) -> Pane:
    """Narrow a non-empty set to one pane: the active one (greatest ``phux.focus_ms``),
    else the first in order."""
    ordered = sorted(candidates, key=Pane.order_key)
    focused = [p for p in ordered if p.focus_ms is not None]
    if focused:
        return max(focused, key=lambda p: p.focus_ms or 0)
    return ordered[0]


def _current_terminal(env: Mapping[str, str]) -> int | None:
    raw = env.get("PHUX_TERMINAL")
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def session_filter(session: str) -> TerminalFilter:
    """A listing of one session's terminals (live and retained): its ``phux.session``."""
    return TerminalFilter(metadata=[MetaEntry(key=KEY_SESSION, value=session.encode())])


def narrowing_filter(selector: Selector, env: Mapping[str, str]) -> TerminalFilter | None:
    """A filtered listing (protocol 1.4) that may resolve ``selector``, or None when
    only the whole listing can (``=``, ``#TAG``, ``.`` without ``$PHUX_TERMINAL``)."""
    if isinstance(selector, ById):
        return TerminalFilter(terminals=[selector.terminal])
    if isinstance(selector, SessionSel):
        return session_filter(selector.session)
    if isinstance(selector, Current):
        current = _current_terminal(env)
        return None if current is None else TerminalFilter(terminals=[current])
    return None


def resolves_alone(selector: Selector, snap: Snapshot, env: Mapping[str, str]) -> bool:
    """Whether ``snap``, listed with :func:`narrowing_filter`, names what the whole listing
    would: always, but for ``.`` whose ``$PHUX_TERMINAL`` is not a live terminal (then
    the most recently active session is the current pane, which needs every one)."""
    if isinstance(selector, Current):
        current = _current_terminal(env)
        pane = None if current is None else snap.by_id.get(current)
        return pane is not None and pane.alive
    return True


def expand(
    selector: Selector, snap: Snapshot, text: str, env: Mapping[str, str] | None = None
) -> list[Pane]:
    """Every pane the selector names (in order); raises TargetNotFound on a miss."""
    env = os.environ if env is None else env
    if isinstance(selector, Last):
        used = sorted(
            (p for p in snap.live() if p.focus_ms is not None),
            key=lambda p: (p.focus_ms or 0, p.terminal),
        )
        if len(used) < 2:
            raise LastNotAvailable("`=` (the pane active before the current one): no such pane yet")
        return [used[-2]]
    if isinstance(selector, ById):
        pane = snap.by_id.get(selector.terminal)
        if pane is None:
            raise TargetNotFound(f"no terminal {text} on the server")
        return [pane]
    if isinstance(selector, ByTag):
        tagged = [p for p in snap.live() if selector.tag in p.tags]
        if not tagged:
            raise TargetNotFound(f"no live terminal is tagged {selector.tag!r}")
        return sorted(tagged, key=lambda p: (p.session or "", *p.order_key()))
    if isinstance(selector, Current):
        current = _current_terminal(env)
        if current is not None:
            pane = snap.by_id.get(current)
            if pane is not None and pane.alive:
                return [pane]
        name = snap.last_session()
        if name is None:
            raise TargetNotFound("no current pane: there are no sessions")
        return snap.session(name)
    # A live session wins; else the name still reaches the panes of a session whose
    # programs exited, while the server retains them (final screen, exit status).
    panes = snap.session(selector.session) or snap.retained_session(selector.session)
    if not panes:
        raise TargetNotFound(f"no session named {selector.session!r}")
    if selector.window is None:
        return panes
    if isinstance(selector.window, int):
        panes = [p for p in panes if p.window == selector.window]
        what = f"window {selector.window}"
    else:
        panes = [p for p in panes if p.window_name == selector.window]
        what = f"window named {selector.window!r}"
    if not panes:
        raise TargetNotFound(f"session {selector.session!r} has no {what}")
    if selector.pane is None:
        return panes
    panes = [p for p in panes if p.pane == selector.pane]
    if not panes:
        raise TargetNotFound(f"{what} of session {selector.session!r} has no pane {selector.pane}")
    return panes


def resolve(text: str | None, snap: Snapshot, env: Mapping[str, str] | None = None) -> Pane:
    """Resolve a TARGET (None = the current pane) to exactly one pane."""
    selector = Current() if text is None else parse_selector(text)
    return pick_pane(expand(selector, snap, "." if text is None else text, env))

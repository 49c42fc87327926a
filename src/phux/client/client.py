"""The Client: the agent's verbs over one server connection (:mod:`phux.client.core`).

Every method takes one ``deadline`` covering connect, handshake and the work.
The verbs that only send requests live here; the operations that follow a
pane's output (run, wait, watch, history) and the notes are modules of their
own that use the core, and :class:`Client` calls them.

Not thread-safe: use one Client per thread. The one exception is
:meth:`Client.interrupt`, which another thread may call to make a blocked call
raise ConnectionLost promptly.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping, Sequence

from phux.client.core import ClientCore, _now_ms
from phux.client.deadline import Deadline
from phux.client.errors import (
    InvalidArgument,
    InvalidName,
    ServerError,
    ServerRefused,
    SessionExists,
    TargetNotFound,
    TerminalGone,
)
from phux.client.mirror import DEFAULT_HISTORY
from phux.client.selectors import (
    KEY_FOCUS,
    KEY_PANE,
    KEY_SESSION,
    KEY_SLOT,
    KEY_TAGS,
    KEY_WINDOW,
    KEY_WINDOW_NAME,
    Pane,
    Session,
    pick_pane,
    slot_value,
    validate_session_name,
)
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
    EnvVar,
    Frame,
    Kill,
    MetaEntry,
    MetaSet,
    Resize,
    SendSignal,
    Signal,
    Spawn,
    TerminalSpawned,
)

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from phux.client.models import (
        HistoryResult,
        NewPaneResult,
        NewResult,
        ScreenState,
        WaitResult,
    )
    from phux.client.run_base import RunOutcome
    from phux.client.watch import WatchStream

AUTO_NAME_ATTEMPTS = 64
# Tags and window names appear in selectors (``#tag``, ``name:tag``, comma-joined).
_TAG_FORBIDDEN = re.compile(r"[,:.\s\x00-\x1f\x7f]")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_env(assignments: Sequence[str]) -> dict[str, str]:
    """tmux's ``-e VAR=VALUE`` words -> {VAR: VALUE} (a later VAR wins); VALUE may be
    empty or hold ``=``. InvalidArgument names the first bad word."""
    out: dict[str, str] = {}
    for word in assignments:
        name, eq, value = word.partition("=")
        if not eq:
            raise InvalidArgument(f"bad -e {word!r}: write VAR=VALUE")
        out[name] = value
    check_env(out)
    return out


def check_env(env: Mapping[str, str]) -> None:
    """Refuse variable names a shell cannot use and NUL bytes, which a PTY's
    environment cannot carry."""
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise InvalidArgument(
                f"bad environment variable name {name!r}: letters, digits and _, "
                "not starting with a digit"
            )
        if name == "PHUX_TERMINAL":
            # The pane's own id, which `.` inside it resolves by: the server's to set.
            raise InvalidArgument("PHUX_TERMINAL is set by the server (the pane's id)")
        if "\x00" in value:
            raise InvalidArgument(f"the value of {name} contains a NUL byte")


def env_vars(env: Mapping[str, str] | None) -> list[EnvVar]:
    """SPAWN's ``env``: set in the pane over the server's own environment."""
    if not env:
        return []
    check_env(env)
    return [EnvVar(name=k, value=v) for k, v in env.items()]


def parse_signal(name: str) -> Signal:
    """``INT``, ``SIGINT``, ``int`` or ``2`` -> Signal; InvalidArgument otherwise."""
    text = name.strip().upper()
    if text.startswith("SIG"):
        text = text[3:]
    if text.isdigit():
        try:
            return Signal(int(text))
        except ValueError:
            pass
    elif text in Signal.__members__:
        return Signal[text]
    names = ", ".join(Signal.__members__)
    raise InvalidArgument(f"unknown signal {name!r} (known: {names})")


class Client(ClientCore):
    # ------------------------------------------------------------ verbs

    def ls(self, deadline: Deadline) -> list[Session]:
        """Every session, sorted by name: the live ones, then (``exited``) those whose
        panes all exited and that the server still keeps."""
        return self.ls_panes(deadline)[0]

    def ls_panes(self, deadline: Deadline) -> tuple[list[Session], dict[str, list[Pane]]]:
        """:meth:`ls` and each session's panes (window, pane, id order), from one
        listing: a live session's live panes, an exited session's retained ones."""
        snap = self.list_terminals(deadline)
        live = snap.sessions()
        gone = snap.retained_sessions()
        sessions = [*self._sessions_of(live), *self._sessions_of(gone, exited=True)]
        return sorted(sessions, key=lambda s: s.name), {**live, **gone}

    @staticmethod
    def _sessions_of(sessions: dict[str, list[Pane]], *, exited: bool = False) -> list[Session]:
        return [
            Session(
                name=name,
                window_count=len({p.window for p in panes}),
                attached_client_count=max(p.primaries for p in panes),
                terminals=[p.terminal for p in panes],
                exited=exited,
            )
            for name, panes in sessions.items()
        ]

    def snapshot(
        self,
        target: str | None = None,
        *,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
        deadline: Deadline,
    ) -> ScreenState:
        """The ScreenState of the pane ``target`` names (see :meth:`snapshot_data`)."""
        from phux.engine.screen_state import screen_state

        return screen_state(
            self.snapshot_data(
                target, scrollback=scrollback, cells=cells, version=version, deadline=deadline
            )
        )

    def snapshot_data(
        self,
        target: str | None = None,
        *,
        scrollback: int | None = None,
        cells: bool = False,
        version: int | None = None,
        deadline: Deadline,
    ) -> dict[str, Any]:
        """:meth:`snapshot` as plain data (``msgspec.to_builtins`` of the Struct, key
        order included), without importing msgspec: ``phux snapshot`` prints it.
        ``version``: None the current shape; 3 the previous one (per-cell ``cells``),
        kept for one version."""
        if scrollback is not None and scrollback < 0:
            raise InvalidArgument("scrollback must be absent, 0 (all history) or a row count")
        pane = self.resolve(target, deadline)
        # A read: it does not make the pane its session's active pane (spec/L3.md §2).
        # A one-shot client asked for the viewport only never looks at history:
        # an engine without it skips building the rows a checkpoint's scrollback
        # (and any flood since) scrolls through, most of the replay's cost.
        history = 0 if self._one_shot(pane) and scrollback is None else DEFAULT_HISTORY
        mirror = self.mirror(pane, deadline, history=history)
        try:
            from phux.client.pane_state import project_mirror

            assert mirror.engine is not None
            try:
                data = mirror.engine.project_data(
                    pane=pane.terminal, scrollback=scrollback, cells=cells, version=version
                )
            except ValueError as exc:  # an unknown schema version
                raise InvalidArgument(str(exc)) from None
            program, state = project_mirror(pane, mirror)
            if program is not None:
                data["program"] = program
            data["state"] = state
            return data
        finally:
            self.release(mirror)

    def send_keys(
        self, target: str, keys: Sequence[str], deadline: Deadline, *, literal: bool = False
    ) -> Pane:
        """Type KEYS into the pane ``target`` names, as one write; returns that pane once
        it was acknowledged (``SendKeysResult.of`` turns it into the JSON shape).
        ``literal``: every word is text, even one that names a key (tmux's ``-l``)."""
        from phux.client.keys import (
            KeyModes,
            encode_keys,
            for_foreground,
            is_interrupt,
            needs_modes,
            validate_keys,
        )

        if isinstance(keys, str):
            keys = [keys]
        if not keys:
            raise InvalidArgument("send-keys needs at least one key")
        if not literal:
            validate_keys(keys)
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        self.used(pane, deadline)
        # The modes cost a bootstrap: looked at only when the keys depend on them, for
        # this foreground (at a shell's prompt, only for keys such as Up or C-a).
        fg = pane.foreground
        looked = needs_modes(keys, fg, literal=literal)
        modes = for_foreground(self.modes(pane, deadline), fg) if looked else KeyModes()
        data = encode_keys(keys, modes, literal=literal)
        # One call, one unit (however many frames it takes); interrupt keys alone jump the queue.
        self.write(pane, data, deadline, urgent=not literal and is_interrupt(data))
        return pane

    def paste(self, target: str, text: str | bytes, deadline: Deadline) -> Pane:
        """Send text as one paste (bracketed when the program enabled bracketed paste);
        returns the pane it went to."""
        from phux.client.keys import paste_bytes

        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        self.used(pane, deadline)
        modes = self.modes(pane, deadline)
        self.write(pane, paste_bytes(text, modes), deadline)
        return pane

    def run(
        self,
        target: str,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        force: bool = False,
        deadline: Deadline,
    ) -> RunOutcome:
        """Run a command in the pane's shell (:mod:`phux.client.run`); ``RunResult.of``
        turns the outcome into the JSON shape.

        ``command``: a string is a shell command line; a sequence of several words
        is quoted word by word. Refuses (PaneBusy) unless the pane is at an idle
        shell prompt, or ``force``.
        """
        from phux.client.run import run_command

        return run_command(self, target, command, timeout=timeout, deadline=deadline, force=force)

    def wait(
        self,
        target: str | None = None,
        *,
        until: str | None = None,
        regex: str | None = None,
        idle_ms: int | None = None,
        timeout: float | None = None,
        prompt: bool = False,
        exit: bool = False,
        deadline: Deadline,
    ) -> WaitResult:
        """Block until a condition holds (:mod:`phux.client.wait`): text, a regex,
        idle output, the shell at an idle prompt (``prompt``) or the pane's program
        exited (``exit``, with its status in ``exit_code``)."""
        from phux.client.wait import wait_for

        return wait_for(
            self,
            target,
            until=until,
            regex=regex,
            idle_ms=idle_ms,
            timeout=timeout,
            deadline=deadline,
            prompt=prompt,
            exit=exit,
        )

    def watch(
        self,
        target: str | None = None,
        *,
        until_event: str | None = None,
        idle_ms: int | None = None,
        timeout: float | None = None,
        deadline: Deadline,
    ) -> WatchStream:
        from phux.client.watch import WatchStream

        return WatchStream(
            self,
            target,
            until_event=until_event,
            idle_ms=idle_ms,
            timeout=timeout,
            deadline=deadline,
        )

    def new(
        self,
        name: str | None = None,
        *,
        cwd: str | None = None,
        command: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cols: int = 80,
        rows: int = 24,
        shell_integration: bool = True,
        deadline: Deadline,
    ) -> NewResult:
        """Create a session (a seed terminal with L3 metadata). A taken name raises
        SessionExists; ``name=None`` takes the smallest free numeric name.
        ``shell_integration=False`` opts the pane out (spec/shell-integration.md)."""
        from phux.client.models import NewResult

        if name is not None:
            why = validate_session_name(name)
            if why is not None:
                raise InvalidName(f"invalid session name {name!r}: {why}")
        if isinstance(command, str):
            command = [command]
        workdir = cwd if cwd is not None else os.getcwd()
        env = dict(env or {})
        if not shell_integration:
            env["PHUX_SHELL_INTEGRATION"] = "0"
        env_list = env_vars(env)
        attempts = 1 if name is not None else AUTO_NAME_ATTEMPTS
        taken: set[str] = set()
        for _ in range(attempts):
            chosen = name
            if chosen is None:
                taken |= set(self.list_terminals(deadline).sessions())
                n = 0
                while str(n) in taken:
                    n += 1
                chosen = str(n)
            metadata = [
                MetaEntry(key=KEY_SESSION, value=chosen.encode()),
                MetaEntry(key=KEY_WINDOW, value=b"0"),
                MetaEntry(key=KEY_PANE, value=b"0"),
                MetaEntry(key=KEY_FOCUS, value=str(_now_ms()).encode()),
                MetaEntry(key=KEY_SLOT, value=slot_value(chosen, 0, 0)),
            ]
            try:
                with self._guard():
                    reply = self.connection(deadline).call_expect(
                        _spawn_request(command, workdir, env_list, cols, rows, metadata),
                        TerminalSpawned,
                        deadline,
                    )
            except ServerError as exc:
                if exc.wire_code == ErrorCode.UNIQUE_CONFLICT:
                    if name is not None:
                        raise SessionExists(f"session {name!r} already exists") from None
                    taken.add(chosen)
                    continue
                if exc.wire_code == ErrorCode.SPAWN_FAILED:
                    raise InvalidArgument(
                        f"cannot start the session: {exc.message}",
                        remedy="check that COMMAND is an installed program and -c an "
                        "existing directory",
                    ) from None
                raise
            return NewResult(session=chosen, terminal_id=reply.terminal)
        raise SessionExists("could not find a free numeric session name")

    def kill(self, target: str, deadline: Deadline) -> list[int]:
        """Kill what the selector names: a whole session or window atomically, or one pane."""
        for attempt in range(2):
            panes = self.resolve_all(target, deadline)
            if target == ".":
                panes = [pick_pane(panes)]  # the current pane, never a whole session
            if not any(p.alive for p in panes):
                # Already killed or exited (retained): one answer by name and by id.
                raise TerminalGone(f"{target} has already exited")
            ids = [p.terminal for p in panes if p.alive]
            try:
                with self._guard():
                    self.connection(deadline).call(_kill_request(ids), deadline)
            except ServerError as exc:
                racy = exc.wire_code in (ErrorCode.TERMINAL_EXITED, ErrorCode.TERMINAL_NOT_FOUND)
                if racy and attempt == 0:
                    continue  # a pane ended between the listing and the kill: list again
                raise ServerRefused(f"the server refused to kill {target}: {exc.message}") from None
            return ids
        raise AssertionError("unreachable")

    def rename(self, session: str, new_name: str, deadline: Deadline) -> None:
        why = validate_session_name(new_name)
        if why is not None:
            raise InvalidName(f"invalid session name {new_name!r}: {why}")
        sessions = self.list_terminals(deadline).sessions()
        panes = sessions.get(session)
        if not panes:
            raise TargetNotFound(f"no session named {session!r}")
        if new_name == session:
            return
        if new_name in sessions:
            raise SessionExists(
                f"session {new_name!r} already exists",
                remedy="choose another NEW name (`phux ls` lists the taken ones)",
            )
        with self._guard():
            conn = self.connection(deadline)

            def make(terminal: int, key: str, value: bytes) -> Callable[[int], Frame]:
                return lambda rid: MetaSet(request_id=rid, key=key, value=value, terminal=terminal)

            name = new_name.encode()
            rids = [conn.submit(make(p.terminal, KEY_SESSION, name)) for p in panes]
            # The panes' places follow the name (the slot names the session).
            rids += [
                conn.submit(
                    make(p.terminal, KEY_SLOT, slot_value(new_name, p.window or 0, p.pane or 0))
                )
                for p in panes
            ]
            for rid in rids:
                with contextlib.suppress(ServerError):  # a pane that just exited
                    conn.wait_reply(rid, deadline)
        from phux.client.notes import move_session_notes

        move_session_notes(self, session, new_name, deadline)  # notes follow the name

    def resize(self, target: str, cols: int, rows: int, deadline: Deadline) -> None:
        if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
            raise InvalidArgument(f"size {cols}x{rows} is out of range (1..1000 each)")
        pane = self.resolve(target, deadline)
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: Resize(
                        request_id=rid, terminal=pane.terminal, cols=cols, rows=rows
                    ),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None

    def signal(self, target: str, name: str, deadline: Deadline) -> None:
        sig = parse_signal(name)
        pane = self.resolve(target, deadline)
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: SendSignal(request_id=rid, terminal=pane.terminal, signal=sig),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None

    def history(
        self, target: str | None, *, last: int | None = None, deadline: Deadline
    ) -> HistoryResult:
        """The commands the pane's shell ran (see :mod:`phux.client.history`)."""
        from phux.client.history import pane_history

        return pane_history(self, target, last=last, deadline=deadline)

    # ------------------------------------------------------------ windows, panes, tags

    def new_window(
        self,
        session: str,
        *,
        name: str | None = None,
        command: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        select: bool = False,
        deadline: Deadline,
    ) -> NewPaneResult:
        """Add a window to a live session: its pane 0 runs ``command`` (default: the
        shell), sized like the session's active pane (spec/L3.md §2). ``env``: variables
        set in the pane over the server's environment. ``select``: the new pane becomes
        the session's active pane (else the active pane stays where it was)."""
        if name is not None and (not name or _TAG_FORBIDDEN.search(name) or name.isdigit()):
            raise InvalidName(
                f"invalid window name {name!r}: non-numeric, no `:`, `.`, `,`, spaces"
            )
        while True:  # another client took the index meanwhile: list again
            panes = self.list_session(session, deadline).session(session)
            if not panes:
                raise TargetNotFound(f"no session named {session!r}")
            window = max((p.window or 0) for p in panes) + 1
            like = pick_pane(panes)
            made = self._spawn_pane(
                session, window, 0, name, like, command, cwd, env, select, deadline
            )
            if made is not None:
                return made

    def split(
        self,
        target: str,
        *,
        command: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        select: bool = False,
        deadline: Deadline,
    ) -> NewPaneResult:
        """Add a pane to the window of the pane ``target`` names (next pane index);
        ``env`` and ``select`` as for :meth:`new_window`."""
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        if pane.session is None:
            raise InvalidArgument(f"terminal {pane.id} belongs to no session")
        window = pane.window or 0
        while True:  # another client took the index meanwhile: list again
            siblings = [
                p
                for p in self.list_session(pane.session, deadline).session(pane.session)
                if (p.window or 0) == window
            ]
            index = max((p.pane or 0) for p in siblings or [pane]) + 1
            made = self._spawn_pane(
                pane.session,
                window,
                index,
                pane.window_name,
                pane,
                command,
                cwd,
                env,
                select,
                deadline,
            )
            if made is not None:
                return made

    def _spawn_pane(
        self,
        session: str,
        window: int,
        index: int,
        window_name: str | None,
        like: Pane,
        command: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        select: bool,
        deadline: Deadline,
    ) -> NewPaneResult | None:
        """SPAWN the pane at (``window``, ``index``); None when a live pane holds that
        place already (``phux.slot``, unique: the server decides at once). Unless
        ``select``, the pane gets no ``phux.focus_ms``: the session's active pane
        stays the one it was (tmux's ``split-window -d``)."""
        from phux.client.models import NewPaneResult

        if isinstance(command, str):
            command = [command]
        metadata = [
            MetaEntry(key=KEY_SESSION, value=session.encode()),
            MetaEntry(key=KEY_WINDOW, value=str(window).encode()),
            MetaEntry(key=KEY_PANE, value=str(index).encode()),
            MetaEntry(key=KEY_SLOT, value=slot_value(session, window, index)),
        ]
        if select:
            metadata.append(MetaEntry(key=KEY_FOCUS, value=str(_now_ms()).encode()))
        if window_name is not None:
            metadata.append(MetaEntry(key=KEY_WINDOW_NAME, value=window_name.encode()))
        workdir = cwd if cwd is not None else os.getcwd()
        try:
            with self._guard():
                reply = self.connection(deadline).call_expect(
                    lambda rid: Spawn(
                        request_id=rid,
                        argv=list(command),
                        cwd=workdir,
                        env=env_vars(env),
                        cols=like.cols,
                        rows=like.rows,
                        metadata=sorted(metadata, key=lambda e: e.key),
                        unique_keys=[KEY_SLOT],
                    ),
                    TerminalSpawned,
                    deadline,
                )
        except ServerError as exc:
            if exc.wire_code == ErrorCode.UNIQUE_CONFLICT:
                return None
            if exc.wire_code == ErrorCode.SPAWN_FAILED:
                raise InvalidArgument(
                    f"cannot start the pane: {exc.message}",
                    remedy="check that COMMAND is an installed program and -c an "
                    "existing directory",
                ) from None
            raise
        return NewPaneResult(session=session, window=window, pane=index, terminal_id=reply.terminal)

    def tag(
        self, target: str, tags: Sequence[str], deadline: Deadline, *, remove: bool = False
    ) -> list[str]:
        """Add (or with ``remove``, take away) tags on the pane ``target`` names, for
        ``#tag`` and ``name:tag`` selectors; returns the pane's tags after."""
        for tag in tags:
            if not tag or _TAG_FORBIDDEN.search(tag):
                raise InvalidName(
                    f"invalid tag {tag!r}: tags are non-empty, without `,`, `:`, `.` or spaces"
                )
        pane = self.resolve(target, deadline)
        if not pane.alive:
            raise TerminalGone(f"terminal {pane.id} has exited")
        if remove:
            after = [t for t in pane.tags if t not in tags]
        else:
            after = list(dict.fromkeys([*pane.tags, *tags]))
        value = ",".join(after).encode()
        with self._guard():
            try:
                self.connection(deadline).call(
                    lambda rid: MetaSet(
                        request_id=rid, key=KEY_TAGS, value=value, terminal=pane.terminal
                    ),
                    deadline,
                )
            except ServerError as exc:
                raise self._terminal_error(exc, pane) from None
        return after

    def focus(self, pane: Pane, deadline: Deadline) -> None:
        """Record that a client focused/used this pane (``phux.focus_ms``)."""
        with self._guard():
            self.connection(deadline).call(
                lambda rid: MetaSet(
                    request_id=rid,
                    key=KEY_FOCUS,
                    value=str(_now_ms()).encode(),
                    terminal=pane.terminal,
                ),
                deadline,
            )


def _spawn_request(
    argv: Sequence[str],
    cwd: str,
    env: list[EnvVar],
    cols: int,
    rows: int,
    metadata: list[MetaEntry],
) -> Callable[[int], Frame]:
    return lambda rid: Spawn(
        request_id=rid,
        argv=list(argv),
        cwd=cwd,
        env=env,
        cols=cols,
        rows=rows,
        metadata=metadata,
        unique_keys=[KEY_SESSION],
    )


def _kill_request(ids: list[int]) -> Callable[[int], Frame]:
    return lambda rid: Kill(request_id=rid, terminals=ids)


__all__ = ["Client", "parse_signal", "pick_pane"]

"""LIST_TERMINALS: whole listings from each terminal's encoded entry while nothing in
it changed, and filtered ones (since 1.4) read fresh.

Every CLI verb used to start with a whole listing to resolve its target. With a
thousand terminals, building and encoding a TerminalInfo for each took ~60 ms of
the loop per listing, and reading each foreground (two ioctls) ~5 ms more. An idle
terminal's entry is the same every time: it is kept encoded with what it was made
of, and reused while that is unchanged. The foreground is what is costly to read
fresh, so a whole listing reads it again only where it may have moved (see
Terminal.foreground) and, round-robin, for ``reread`` more terminals each time: a
server of that many terminals or fewer reads all of them at every listing
(spec/L1.md §8.1). A filtered listing (``TerminalFilter``: the way a client
resolves one target) names few terminals and reads each of them fresh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, cast

from phux.server.metadata import entries
from phux.wire.frames import ExitStatus, Foreground, TerminalInfo, TerminalList
from phux.wire.tlv import Encoded, encode_struct, leaf_for

if TYPE_CHECKING:
    from collections.abc import Iterable

    from phux.server.terminal import Terminal
    from phux.wire.frames import TerminalFilter


class ListingCache:
    """The encoded TerminalInfo of each listed terminal, with what it was made of."""

    def __init__(self, reread: int) -> None:
        self._entries: dict[int, tuple[_Parts, Encoded]] = {}
        """Per terminal: what its entry was made of (its stamp then included), encoded."""
        self._unsettled: set[int] = set()
        """Terminals whose last reading of the foreground may not be given again."""
        self._reread = reread
        self._cursor = 0
        """Where the next whole listing's round of fresh reads starts."""
        self._whole = Encoded(_TERMINALS.encode([]))
        """The last whole listing's ``terminals`` field, encoded: given again as it is
        when not one entry changed (an idle server's listing encodes nothing)."""

    def terminal_list(
        self,
        request_id: int,
        terminals: dict[int, Terminal],
        global_scope: dict[str, bytes],
        only: TerminalFilter | None = None,
    ) -> TerminalList:
        if only is not None:
            return _filtered(request_id, terminals, global_scope, only)
        count = len(terminals)
        reread = self._reread
        start = self._cursor % count if count else 0
        self._cursor = start + reread
        everyone = reread >= count
        entries_before = self._entries
        unsettled = self._unsettled
        fresh: dict[int, tuple[_Parts, Encoded]] = {}
        infos = []
        changed = count != len(entries_before)
        for index, term in enumerate(terminals.values()):
            tid = term.id
            cached = entries_before.get(tid)
            in_round = everyone or (index - start) % count < reread
            if cached is None or cached[0].stamp != term.stamp or in_round or tid in unsettled:
                made_of = _made_of(term, in_round)
                if cached is None or cached[0] != made_of:
                    cached = made_of, Encoded(encode_struct(_info(term, made_of)))
                    changed = True
                if term.foreground_settled() or not term.alive:
                    unsettled.discard(tid)
                else:
                    unsettled.add(tid)
            fresh[tid] = cached
            infos.append(cached[1])
        self._entries = fresh  # forgotten terminals go with the listing that misses them
        unsettled.intersection_update(fresh)
        if changed:  # (the same count and no new entry: the same terminals, in order)
            self._whole = Encoded(_TERMINALS.encode(infos))
        return TerminalList(
            request_id=request_id,
            # Encoded values are written as they are (phux.wire.tlv.Encoded).
            terminals=cast("list[TerminalInfo]", self._whole),
            global_metadata=entries(global_scope),
        )


def _filtered(
    request_id: int,
    terminals: dict[int, Terminal],
    global_scope: dict[str, bytes],
    only: TerminalFilter,
) -> TerminalList:
    named: Iterable[Terminal] = terminals.values()
    if only.terminals:  # ids grow with creation: sorted is the listing's order
        named = [terminals[tid] for tid in sorted(set(only.terminals)) if tid in terminals]
    required = [(e.key, e.value) for e in only.metadata]
    infos = [
        _info(term, _made_of(term, True), *term.unread_input())
        for term in named
        if all(term.metadata.get(key) == value for key, value in required)
    ]
    prefixes = tuple(only.global_prefixes)
    return TerminalList(
        request_id=request_id,
        terminals=infos,
        global_metadata=[e for e in entries(global_scope) if e.key.startswith(prefixes)]
        if prefixes
        else [],
    )


_TERMINALS = leaf_for(list[TerminalInfo])


class _Parts(NamedTuple):
    """What a terminal's entry is made of, read for every listing."""

    foreground: Foreground | None
    cols: int
    rows: int
    alive: bool
    exit: ExitStatus | None
    viewers: int
    primaries: int
    next_seq: int
    stamp: int
    """Terminal.stamp: it moves with the metadata, which is therefore not compared."""


def _made_of(term: Terminal, reread: bool) -> _Parts:
    journal = term.journal
    viewers, primaries = term.counts() if term.subscribers else (0, 0)
    return _Parts(
        term.foreground(reread=reread),
        journal.cols,
        journal.rows,
        term.alive,
        term.exit_status,
        viewers,
        primaries,
        journal.next_seq,
        term.stamp,
    )


def _info(
    term: Terminal, parts: _Parts, unread_input: int = 0, unread_line_open: bool = False
) -> TerminalInfo:
    return TerminalInfo(
        terminal=term.id,
        pid=term.pid,
        cols=parts.cols,
        rows=parts.rows,
        alive=parts.alive,
        exit=parts.exit,
        viewers=parts.viewers,
        primaries=parts.primaries,
        next_seq=parts.next_seq,
        created_ms=term.created_ms,
        metadata=entries(term.metadata),
        foreground=parts.foreground,
        unread_input=unread_input,
        unread_line_open=unread_line_open,
    )

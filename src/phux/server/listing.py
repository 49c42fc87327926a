"""LIST_TERMINALS answered from each terminal's encoded entry while nothing in it changed.

Every CLI verb starts with a listing to resolve its target. With a thousand
terminals, building and encoding a TerminalInfo for each took ~60 ms of the
loop per listing, and an idle terminal's entry is the same every time: it is
kept encoded with what it was made of, and reused while that is unchanged.
What it is made of is read fresh for every listing (the foreground too, see
Terminal.foreground), so a reused entry is exactly the one that would be
encoded now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, cast

from phux.server.metadata import entries
from phux.wire.frames import ExitStatus, Foreground, TerminalInfo, TerminalList
from phux.wire.tlv import Encoded, encode_struct

if TYPE_CHECKING:
    from collections.abc import Iterable

    from phux.server.terminal import Terminal


class ListingCache:
    """The encoded TerminalInfo of each listed terminal, with what it was made of."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[_Parts, Encoded]] = {}

    def terminal_list(
        self, request_id: int, terminals: Iterable[Terminal], global_scope: dict[str, bytes]
    ) -> TerminalList:
        fresh: dict[int, tuple[_Parts, Encoded]] = {}
        infos = []
        for term in terminals:
            made_of = _made_of(term)
            cached = self._entries.get(term.id)
            if cached is None or cached[0] != made_of:
                cached = made_of, Encoded(encode_struct(_info(term, made_of)))
            fresh[term.id] = cached
            infos.append(cached[1])
        self._entries = fresh  # forgotten terminals go with the listing that misses them
        return TerminalList(
            request_id=request_id,
            # Encoded elements are written as they are (phux.wire.tlv.Encoded).
            terminals=cast("list[TerminalInfo]", infos),
            global_metadata=entries(global_scope),
        )


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
    metadata: tuple[tuple[str, bytes], ...]


def _made_of(term: Terminal) -> _Parts:
    journal = term.journal
    viewers, primaries = term.counts() if term.subscribers else (0, 0)
    return _Parts(
        term.foreground(),
        journal.cols,
        journal.rows,
        term.alive,
        term.exit_status,
        viewers,
        primaries,
        journal.next_seq,
        tuple(term.metadata.items()),
    )


def _info(term: Terminal, parts: _Parts) -> TerminalInfo:
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
    )

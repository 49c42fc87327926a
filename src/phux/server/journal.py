"""A terminal's output journal: sequence-numbered bytes and size changes, byte-bounded.

The journal is what a new subscriber's bootstrap is made of: the newest
checkpoint (VT bytes from the terminal's replica that recreate the state
before ``start_seq``; ``None`` before the first one) and the output and size
changes after it.

Without a replica (``compacting`` false) the journal keeps the newest
``limit`` bytes and drops the oldest, so a bootstrap may start mid-stream.
With one, nothing is dropped except by :meth:`compact`, which replaces
everything before a checkpoint's sequence number by the checkpoint, so a
bootstrap is always exact. While the replica lags (a flood) the tail may
outgrow ``limit``; the terminal bounds it by pausing its reader once the
replica is ``replica_lag_bytes`` behind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Chunk:
    seq: int
    data: bytes

    @property
    def end(self) -> int:
        return self.seq + len(self.data)


@dataclass(frozen=True, slots=True)
class SizeChange:
    seq: int
    cols: int
    rows: int


JournalItem = Chunk | SizeChange


@dataclass(frozen=True)
class Bootstrap:
    """What a subscriber replays before live output.

    ``cols`` x ``rows`` is the size at ``start_seq``; ``checkpoint`` (when set)
    recreates the terminal state before ``start_seq``; ``items`` are the
    chunks (contiguous from ``start_seq``) and size changes in order, ending
    just before ``next_seq``.
    """

    start_seq: int
    cols: int
    rows: int
    next_seq: int
    items: list[JournalItem] = field(default_factory=list)
    checkpoint: bytes | None = None


class JournalBudget:
    """The output bytes all terminals' journals hold together, against one limit
    (``ServerConfig.max_journal_total``). Past it, ``relieve`` is asked to make the
    largest journals shrink; it is asked again only once another sixteenth of the
    limit has come in, so a budget that cannot be met at once (replicas still
    catching up) costs no scan per chunk of output."""

    def __init__(self, limit: int, relieve: Callable[[], None]) -> None:
        self.limit = limit
        self.used = 0
        self._relieve = relieve
        self._next_look = 0

    def add(self, delta: int) -> None:
        self.used += delta
        if self.used <= self.limit:
            self._next_look = 0

    def check(self) -> None:
        if self.used > self.limit and self.used >= self._next_look:
            self._next_look = self.used + max(1, self.limit // 16)
            self._relieve()


class Journal:
    def __init__(
        self, limit: int, cols: int, rows: int, budget: JournalBudget | None = None
    ) -> None:
        self.limit = max(0, limit)
        self.budget = budget
        self._items: deque[JournalItem] = deque()
        self._bytes = 0
        self.start_seq = 0
        self.next_seq = 0
        self.start_cols = cols
        self.start_rows = rows
        self.cols = cols
        self.rows = rows
        self.checkpoint: bytes | None = None
        self.compacting = False
        """A replica compacts this journal: never drop what no checkpoint covers."""

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def append(self, data: bytes) -> Chunk:
        chunk = Chunk(self.next_seq, data)
        before = self._bytes
        self.next_seq += len(data)
        if self.limit:
            self._items.append(chunk)
            self._bytes += len(data)
            if not self.compacting:
                self._trim()
        else:
            self._forget_to(self.next_seq)
        budget = self.budget
        if budget is not None:
            budget.add(self._bytes - before)
            budget.check()
        return chunk

    def shrink(self, by: int) -> None:
        """Drop the oldest ``by`` bytes (the server's journal budget; not while a replica
        compacts this journal: what no checkpoint covers is never dropped then)."""
        if self.compacting or by <= 0:
            return
        limit = self.limit
        self.limit = max(0, self._bytes - by)
        try:
            self._counted(self._trim)
        finally:
            self.limit = limit

    def release(self) -> None:
        """The terminal is forgotten: its bytes no longer count in the budget."""
        if self.budget is not None:
            self.budget.add(-self._bytes)
            self.budget = None

    def _counted(self, change: Callable[[], object]) -> None:
        before = self._bytes
        change()
        if self.budget is not None:
            self.budget.add(self._bytes - before)

    def resize(self, cols: int, rows: int) -> SizeChange:
        change = SizeChange(self.next_seq, cols, rows)
        self.cols, self.rows = cols, rows
        if self._items or self.next_seq > self.start_seq or self.checkpoint is not None:
            self._items.append(change)
        else:  # nothing recorded since start: the new size is the start size
            self.start_cols, self.start_rows = cols, rows
        return change

    def stop_compacting(self) -> None:
        """The replica is gone: trim to the bound again (a dropped prefix voids the checkpoint)."""
        self.compacting = False
        self._counted(self._trim)

    def compact(self, seq: int, cols: int, rows: int, checkpoint: bytes) -> bool:
        """Replace everything before ``seq`` by ``checkpoint`` (the state there, at
        ``cols`` x ``rows``). False if ``seq`` is not inside the journal."""
        if not self.start_seq <= seq <= self.next_seq:
            return False
        before = self._bytes
        items = self._items
        while items:
            first = items[0]
            if isinstance(first, SizeChange):
                if first.seq >= seq:
                    break
                items.popleft()
                continue
            if first.end <= seq:
                items.popleft()
                self._bytes -= len(first.data)
                continue
            if first.seq < seq:  # a replica checkpoints where a 2026 frame opens
                cut = seq - first.seq
                items[0] = Chunk(seq, first.data[cut:])
                self._bytes -= cut
            break
        self.start_seq = seq
        self.start_cols, self.start_rows = cols, rows
        self.checkpoint = checkpoint
        if self.budget is not None:
            self.budget.add(self._bytes - before)
        return True

    def _trim(self) -> None:
        items = self._items
        if self._bytes <= self.limit:
            return
        self.checkpoint = None  # it recreates the state before a prefix now dropped
        while self._bytes > self.limit and items:
            first = items[0]
            if isinstance(first, SizeChange):
                items.popleft()
                self.start_cols, self.start_rows = first.cols, first.rows
                continue
            excess = self._bytes - self.limit
            if len(first.data) <= excess:
                items.popleft()
                self._bytes -= len(first.data)
                self.start_seq = first.end
            else:
                items[0] = Chunk(first.seq + excess, first.data[excess:])
                self._bytes -= excess
                self.start_seq = first.seq + excess
        # Size changes now at the very start are folded into the start size.
        while items and isinstance(items[0], SizeChange) and items[0].seq <= self.start_seq:
            change = items.popleft()
            assert isinstance(change, SizeChange)
            self.start_cols, self.start_rows = change.cols, change.rows

    def _forget_to(self, seq: int) -> None:
        self.checkpoint = None
        self._items.clear()
        self._bytes = 0
        self.start_seq = seq
        self.start_cols, self.start_rows = self.cols, self.rows

    def bootstrap(self) -> Bootstrap:
        return Bootstrap(
            start_seq=self.start_seq,
            cols=self.start_cols,
            rows=self.start_rows,
            next_seq=self.next_seq,
            items=list(self._items),
            checkpoint=self.checkpoint,
        )

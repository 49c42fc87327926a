"""Echo first: a terminal just typed into is read before the terminals that flood.

The loop reads every readable PTY in each of its rounds (one trio batch), and a
flooding terminal's read pass (up to ``read_batch_bytes``, then the journal, the
replica's feed and the subscribers) takes milliseconds of it. A keystroke's echo
crosses several rounds: its INPUT is read and queued, written to the PTY, the echo
read and dispatched, then sent. With four panes flooding, each of those rounds was
four read passes long, and a person's echo took a median 40-70 ms, p99 160-270 ms
in the server alone (issue 25 item 5: within 50 ms p99 while three panes flood).

So from the moment a client's INPUT to a terminal is queued until that terminal's
next output is dispatched, the terminals whose last read pass was big (``FLOOD_PASS``
or more) wait before their next pass, and one round more after it, so that the
echo's sender goes out before them. A program that does not echo, or input that is
never written (a PTY the program does not read), holds them for ``hold_s`` after the
input was queued or last written, at most. And while someone types (``TYPING_S``),
every read pass is a quarter of ``read_batch_bytes`` and a flood's passes are
FLOOD_GAP apart, so that the rounds the next INPUT may arrive in are shorter and
fewer. Nothing is lost or reordered: a waiting flood's program
blocks on its full PTY for those milliseconds, as it would on a slow terminal, and
its subscribers get every byte as before.
"""

from __future__ import annotations

import math

import trio

FLOOD_PASS = 4096
"""A read pass of this many bytes or more makes a terminal wait for others' echoes
before its next one (an echo, or a prompt, is far smaller)."""
TYPING_S = 1.0
"""For this long after a client's input, read passes are a quarter of
``read_batch_bytes``: a round of the loop, which the next keystroke's INPUT waits
out before it is read, is that much shorter while floods are read."""
FLOOD_GAP = 0.01
"""While someone types, a terminal whose last read pass was big waits this long before
its next: fewer flood passes a second, each of which the next keystroke's INPUT may
have to wait out (a read of a flooding PTY can also wait for the kernel's worker)."""


class EchoFirst:
    """The terminals awaiting their echo, and the turn the floods wait for."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self._awaited: dict[int, float] = {}
        """Terminal id -> until when (trio time) its echo holds the floods back."""
        self._clear: trio.Event | None = None
        """Set when no terminal's echo is awaited any more (floods wait on it)."""
        self._typed_at = -math.inf
        """When a client's input was last queued or written (trio time)."""

    def expect(self, tid: int) -> None:
        """A client's input to ``tid`` was queued, or written: its echo comes first."""
        if self.hold_s > 0:
            self._typed_at = now = trio.current_time()
            self._awaited[tid] = now + self.hold_s

    def flood_gap(self) -> float:
        """Seconds a terminal whose last pass was big waits before its next one: while
        someone types, FLOOD_GAP (fewer flood passes a second, each of which the next
        keystroke may have to wait out), else 0."""
        if trio.current_time() - self._typed_at < TYPING_S:
            return FLOOD_GAP
        return 0.0

    def pass_limit(self, limit: int) -> int:
        """The bytes a read pass may take: ``limit``, a quarter of it while someone types."""
        if trio.current_time() - self._typed_at < TYPING_S:
            return max(FLOOD_PASS, limit // 4)
        return limit

    def answered(self, tid: int) -> None:
        """``tid`` dispatched output (its echo, or what it printed instead)."""
        if self._awaited.pop(tid, None) is not None and not self._awaited:
            self._release()

    def forget(self, tid: int) -> None:
        """``tid`` is gone: nothing waits for it."""
        self.answered(tid)

    def _release(self) -> None:
        clear = self._clear
        if clear is not None:
            self._clear = None
            clear.set()

    def holding(self, tid: int) -> bool:
        """Whether another terminal's echo is awaited (``tid``'s own never holds it)."""
        return bool(self._awaited) and (len(self._awaited) > 1 or tid not in self._awaited)

    async def turn(self, tid: int) -> None:
        """Wait until no other terminal's echo is awaited, ``hold_s`` at most all told
        (input that keeps coming to a terminal that does not echo must not stop the
        floods for good: they get a pass per ``hold_s`` at least), then one round
        more: the echo's sender, woken by its dispatch, goes first."""
        give_up = trio.current_time() + self.hold_s
        waited = False
        while True:
            now = trio.current_time()
            for other, until in list(self._awaited.items()):
                if until <= now:
                    del self._awaited[other]
            others = [until for other, until in self._awaited.items() if other != tid]
            if not others or now >= give_up:
                break
            waited = True
            if self._clear is None:
                self._clear = trio.Event()
            with trio.move_on_at(min(*others, give_up)):
                await self._clear.wait()
        if not self._awaited:
            self._release()
        if waited:
            await trio.lowlevel.checkpoint()

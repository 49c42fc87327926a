"""Tab completion of the words click cannot know: TARGETs, session names and key
names (``phux completion SHELL`` installs the script that asks for them).

Targets come from the running server's listing (never started for this, and not
asked over ssh); key names from :mod:`phux.client.keys`. A completion that cannot
reach a server offers nothing rather than fail: Tab must never print an error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click
    from click.shell_completion import CompletionItem

    from phux.client.selectors import Snapshot

LIST_DEADLINE_S = 1.0
"""At most this long for the listing: a wedged server must not hang the shell."""


def _listing(ctx: click.Context) -> Snapshot | None:
    if os.environ.get("PHUX_HOST"):
        return None  # a remote listing needs ssh: too slow for a Tab
    from phux.client import Client
    from phux.client.deadline import Deadline

    socket = ctx.params.get("socket")
    try:
        with Client(socket if isinstance(socket, str) else None) as client:
            return client.list_terminals(Deadline.after(LIST_DEADLINE_S))
    except Exception:
        return None


def target_words(snap: Snapshot) -> list[str]:
    """Every selector that names a live pane or session: sessions, their windows (by
    index and name) and panes, ``@N`` ids and ``#tags``, then ``.`` and ``=``."""
    words: list[str] = []
    for name, panes in snap.sessions().items():
        words.append(name)
        for pane in panes:
            window = pane.window or 0
            words.append(f"{name}:{window}")
            if pane.window_name:
                words.append(f"{name}:{pane.window_name}")
            words.append(f"{name}:{window}.{pane.pane or 0}")
    for name in snap.retained_sessions():
        words.append(name)
    live = snap.live()
    words += [p.id for p in live]
    words += [f"#{tag}" for p in live for tag in p.tags]
    words += [".", "="]
    return list(dict.fromkeys(words))


def _items(words: list[str], incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(w) for w in words if w.startswith(incomplete)]


def complete_target(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    snap = _listing(ctx)
    return [] if snap is None else _items(target_words(snap), incomplete)


def complete_session(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    snap = _listing(ctx)
    return [] if snap is None else _items(list(snap.sessions()), incomplete)


def key_words() -> list[str]:
    """The named keys, and C-/M- with a letter (C-c, M-x): what send-keys types as keys."""
    from phux.client.keys import KEY_NAMES

    letters = "abcdefghijklmnopqrstuvwxyz"
    return [*KEY_NAMES, *(f"C-{c}" for c in letters), *(f"M-{c}" for c in letters)]


def complete_keys(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    return _items(key_words(), incomplete)

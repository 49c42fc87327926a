"""phux.client: all agent logic (selectors, keys, the operations, their JSON models).

Blocking and trio-free so one-shot CLI verbs start fast; the engine is imported
only by the operations that replay output.
"""

from phux.client.autostart import ensure_server, kill_server, server_running
from phux.client.client import Client, parse_signal
from phux.client.deadline import Deadline
from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    InvalidArgument,
    InvalidName,
    LastNotAvailable,
    NoServer,
    PhuxError,
    ProtocolError,
    RunTimedOut,
    SelectorSyntax,
    ServerError,
    ServerRefused,
    ServerStartFailed,
    SessionExists,
    TargetNotFound,
    TerminalGone,
    UnknownKey,
)
from phux.client.keys import KeyModes, encode_keys, key_bytes
from phux.client.models import (
    ErrorReport,
    NewResult,
    RunResult,
    SendKeysResult,
    SessionInfo,
    SessionList,
    SessionSummary,
    WaitResult,
    WatchEvent,
    event_name,
    to_json,
)
from phux.client.selectors import Pane, parse_selector

TerminalInfo = Pane
"""The client-side view of one terminal that ``Client.resolve`` returns."""


def __getattr__(name: str) -> object:
    if name == "ScreenState":  # lazily: it imports the engine
        from phux.client import models

        return models.ScreenState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Client",
    "ConnectionLost",
    "Deadline",
    "DeadlineExceeded",
    "ErrorReport",
    "InvalidArgument",
    "InvalidName",
    "KeyModes",
    "LastNotAvailable",
    "NewResult",
    "NoServer",
    "Pane",
    "PhuxError",
    "ProtocolError",
    "RunResult",
    "RunTimedOut",
    "SelectorSyntax",
    "SendKeysResult",
    "ServerError",
    "ServerRefused",
    "ServerStartFailed",
    "SessionExists",
    "SessionInfo",
    "SessionList",
    "SessionSummary",
    "TargetNotFound",
    "TerminalGone",
    "TerminalInfo",
    "UnknownKey",
    "WaitResult",
    "WatchEvent",
    "encode_keys",
    "ensure_server",
    "event_name",
    "key_bytes",
    "kill_server",
    "parse_selector",
    "parse_signal",
    "server_running",
    "to_json",
]

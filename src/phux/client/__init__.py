"""phux.client: all agent logic (selectors, keys, the operations, their JSON models).

Blocking and trio-free so one-shot CLI verbs start fast. The names below are
loaded on first use (PEP 562), so importing one submodule, or this package for
one name, does not import the others; the engine is imported only by the
operations that replay output.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.client.autostart import ensure_server, kill_server, server_running
    from phux.client.client import Client, parse_signal
    from phux.client.deadline import Deadline
    from phux.client.errors import (
        ConnectionLost,
        DeadlineExceeded,
        InputNotRead,
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
    from phux.client.models import (
        ScreenState as ScreenState,
    )
    from phux.client.run_base import RunOutcome
    from phux.client.selectors import Pane, Session, parse_selector

    TerminalInfo = Pane

_ERRORS = (
    "ConnectionLost",
    "DeadlineExceeded",
    "InputNotRead",
    "InvalidArgument",
    "InvalidName",
    "LastNotAvailable",
    "NoServer",
    "PhuxError",
    "ProtocolError",
    "RunTimedOut",
    "SelectorSyntax",
    "ServerError",
    "ServerRefused",
    "ServerStartFailed",
    "SessionExists",
    "TargetNotFound",
    "TerminalGone",
    "UnknownKey",
)
_MODELS = (
    "ErrorReport",
    "NewResult",
    "RunResult",
    "ScreenState",  # it imports the engine
    "SendKeysResult",
    "SessionInfo",
    "SessionList",
    "SessionSummary",
    "WaitResult",
    "WatchEvent",
    "event_name",
    "to_json",
)
_WHERE: dict[str, str] = {
    "ensure_server": "autostart",
    "kill_server": "autostart",
    "server_running": "autostart",
    "Client": "client",
    "parse_signal": "client",
    "Deadline": "deadline",
    "KeyModes": "keys",
    "encode_keys": "keys",
    "key_bytes": "keys",
    "Pane": "selectors",
    "Session": "selectors",
    "RunOutcome": "run_base",
    "parse_selector": "selectors",
    **dict.fromkeys(_ERRORS, "errors"),
    **dict.fromkeys(_MODELS, "models"),
}


def __getattr__(name: str) -> object:
    # TerminalInfo: the client-side view of one terminal that Client.resolve returns.
    attr = "Pane" if name == "TerminalInfo" else name
    module = _WHERE.get(attr)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"phux.client.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Client",
    "ConnectionLost",
    "Deadline",
    "DeadlineExceeded",
    "ErrorReport",
    "InputNotRead",
    "InvalidArgument",
    "InvalidName",
    "KeyModes",
    "LastNotAvailable",
    "NewResult",
    "NoServer",
    "Pane",
    "PhuxError",
    "ProtocolError",
    "RunOutcome",
    "RunResult",
    "RunTimedOut",
    "SelectorSyntax",
    "SendKeysResult",
    "ServerError",
    "ServerRefused",
    "ServerStartFailed",
    "Session",
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

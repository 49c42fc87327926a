"""Errors of the client layer. Each carries a stable ``code`` string and the
CLI exit code it maps to; front ends render them, they never decide them."""

from __future__ import annotations

from phux.wire.errors import ErrorCode


class PhuxError(Exception):
    """Base of every error a client operation raises on purpose."""

    code: str = "error"
    exit_code: int = 1
    remedy: str = ""

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if remedy is not None:
            self.remedy = remedy


class NoServer(PhuxError):
    code = "no_server"
    remedy = "start one with `phux server --daemon` or `phux new`"


class DeadlineExceeded(PhuxError):
    code = "timeout"


class ConnectionLost(PhuxError):
    code = "connection_lost"


class ProtocolError(PhuxError):
    code = "protocol_error"


class ServerError(PhuxError):
    """The server answered a request with ERROR."""

    code = "server_error"

    def __init__(self, wire_code: int, message: str) -> None:
        try:
            name = ErrorCode(wire_code).name.lower()
        except ValueError:
            name = f"error_{wire_code}"
        super().__init__(message)
        self.wire_code = wire_code
        self.code = name

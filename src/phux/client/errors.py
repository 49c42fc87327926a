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


class UnsafeSocket(PhuxError):
    """The socket (or its directory) belongs to, or is writable by, another user,
    or the process listening on it runs as another user: nothing was sent."""

    code = "unsafe_socket"
    remedy = (
        "check who created it; use a private directory of your own "
        "(set $XDG_RUNTIME_DIR, or --socket / $PHUX_SOCKET in a 0700 directory you own)"
    )


class DeadlineExceeded(PhuxError):
    code = "timeout"
    remedy = "raise --timeout (timeout_secs in MCP); if the server is wedged, see its log"


class InputNotRead(DeadlineExceeded):
    """A write (send-keys, paste) was not all taken by the pane's program before the
    deadline: the program is not reading its input (or other input queued ahead of
    this was not read). What was not written is dropped, never typed later."""

    code = "input_not_read"
    remedy = (
        "see what the pane runs (phux snapshot): interrupt it with send-keys C-c, "
        "or raise --timeout for a program that reads slowly"
    )


class ConnectionLost(PhuxError):
    code = "connection_lost"
    remedy = "the server stopped or dropped us: check `phux ls`, then retry"


class ProtocolError(PhuxError):
    code = "protocol_error"
    remedy = "client and server disagree on the wire: run the same phux version for both"


class ServerError(PhuxError):
    """The server answered a request with ERROR."""

    code = "server_error"

    def __init__(self, wire_code: int, message: str) -> None:
        try:
            name = ErrorCode(wire_code).name.lower()
        except ValueError:
            name = f"error_{wire_code}"
        super().__init__(message, remedy="the server refused the request; the message says why")
        self.wire_code = wire_code
        self.code = name


# ---------------------------------------------------------------- agent-verb errors


class SelectorSyntax(PhuxError):
    """A TARGET that does not parse."""

    code = "bad_selector"
    remedy = "targets are `.`, `name`, `name:N`, `name:tag`, `name:N.M`, `@N` or `#tag`"


class TargetNotFound(PhuxError):
    """A selector that names nothing on the server."""

    code = "target_not_found"
    remedy = "list what exists with `phux ls`"


class LastNotAvailable(TargetNotFound):
    """`=` (the pane active before the current one) names nothing: fewer than two
    panes were ever made active."""

    code = "no_last_pane"
    remedy = "use `.`, a session name or `@N`; `=` needs two panes written to or selected"


class TerminalGone(PhuxError):
    """The resolved terminal has exited (or exits during the operation)."""

    code = "terminal_exited"
    remedy = (
        "read its final screen with `phux snapshot TARGET` while the server retains it; "
        "start a new one with `phux new`"
    )


def describe_exit(status: object) -> str:
    """``exited with status 3`` / ``was killed by signal 9`` / ``exited`` for an ExitStatus."""
    code = getattr(status, "code", None)
    if code is not None:
        return f"exited with status {code}"
    sig = getattr(status, "signal", None)
    if sig is not None:
        return f"was killed by signal {sig}"
    return "exited"


class SessionExists(PhuxError):
    code = "session_exists"
    remedy = "choose another name with -s, or omit -s for a numeric name"


class InvalidName(PhuxError):
    code = "invalid_name"
    remedy = "session names are non-empty and contain no `:`, `.`, whitespace or control characters"


class UnknownKey(PhuxError):
    code = "unknown_key"
    remedy = (
        "key names: Enter Tab BTab Escape Space BSpace Up Down Left Right Home End "
        "PageUp PageDown IC DC F1-F12, with C- M- S- prefixes; anything else is sent literally"
    )


class InvalidArgument(PhuxError):
    code = "invalid_argument"
    remedy = "see the verb's --help (the MCP tool's description) for the accepted values"


class CannotWrite(PhuxError):
    """A file the verb writes (a recording) cannot be created or written."""

    code = "cannot_write"
    remedy = "choose another FILE (or free space on its disk)"


class ServerTooOld(PhuxError):
    """The running server speaks an older protocol minor that lacks what was asked for."""

    code = "server_too_old"
    remedy = (
        "restart the server with this phux (`phux kill --server`; the next command starts "
        "a new one, which ends the panes of the old one)"
    )


class ServerRefused(PhuxError):
    """The server refused a control request (kill exits 2 on this)."""

    code = "refused"
    exit_code = 2


class ServerStartFailed(PhuxError):
    code = "server_start_failed"
    remedy = "run `phux server` in the foreground to see why, or read its log"


class RunTimedOut(PhuxError):
    """`run` gave up waiting for the command to finish (CLI exit 125, no JSON)."""

    code = "run_timed_out"
    exit_code = 125
    remedy = "raise --timeout, or drive long programs with send-keys and wait"

    def __init__(
        self,
        command: str,
        duration_ms: int,
        screen: object | None = None,
        reason: str | None = None,
    ) -> None:
        why = reason or "waiting for the command to finish"
        super().__init__(
            f"gave up after {duration_ms} ms: {why}"
            if reason
            else f"gave up after {duration_ms} ms {why}"
        )
        self.command = command
        self.duration_ms = duration_ms
        self.screen = screen


class ShellNotReady(RunTimedOut):
    """`run` gave up before typing anything: the pane's shell had not drawn its prompt
    (its startup files still ran, or a prompt hook did). CLI exit 125 like any run
    that gave up; MCP reports it as an error, since no command runs."""

    remedy = (
        "look at what the shell's startup files do (`phux snapshot` shows where they "
        "stopped), or raise --timeout"
    )

    def __init__(self, command: str, duration_ms: int, why: str) -> None:
        PhuxError.__init__(
            self, f"gave up after {duration_ms} ms before typing: {why}; nothing was typed"
        )
        self.command = command
        self.duration_ms = duration_ms
        self.screen = None


class PaneBusy(PhuxError):
    """`run` refused before typing anything: the pane is not at an idle shell prompt
    (another program holds it, the shell waits at a continuation prompt, input is
    pending, or a hidden-input prompt is up). CLI exit 3."""

    code = "pane_busy"
    exit_code = 3
    remedy = (
        "drive the program with send-keys and wait, or finish/clear what holds the pane "
        "(check it with `phux snapshot`); --force types anyway"
    )

    def __init__(self, message: str, *, holder: str, state: str) -> None:
        super().__init__(message)
        self.holder = holder
        self.state = state


class IncompleteCommand(PhuxError):
    """`run` typed the command, the shell asked for more (a continuation prompt:
    an unbalanced quote or bracket), and `run` interrupted it with C-c. CLI exit 4."""

    code = "incomplete_command"
    exit_code = 4
    remedy = "balance the quotes and brackets of the command (nothing was run)"


class PaneDied(PhuxError):
    """The pane's program (its shell) exited while `run` waited for the command, so
    there is no exit code of the command to report. CLI exit 5."""

    code = "pane_exited"
    exit_code = 5
    remedy = "the pane is gone; create a new one with `phux new`"

    def __init__(self, message: str, *, status: int | None) -> None:
        super().__init__(message)
        self.status = status

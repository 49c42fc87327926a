"""JSON-RPC 2.0 framing for MCP's stdio transport, with no I/O of its own.

One message per line. :class:`LineSplitter` turns a byte stream into bounded
lines; :func:`parse_line` turns one line into the messages it carries (or the
error to answer); the ``*_response`` helpers build the reply bytes. Request
ids are kept as the raw JSON text they arrived in and echoed byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# A line longer than this is answered with a parse error and skipped up to the
# next newline; nothing longer is ever buffered.
MAX_LINE_BYTES = 16 * 1024 * 1024

NULL_ID = msgspec.Raw(b"null")


class _Envelope(msgspec.Struct):
    """The fields of one JSON-RPC message; anything else in it is ignored."""

    jsonrpc: Any = msgspec.UNSET
    id: msgspec.Raw = msgspec.Raw(b"")
    method: Any = msgspec.UNSET
    params: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    error: Any = msgspec.UNSET


_decoder = msgspec.json.Decoder(_Envelope)
_batch_decoder = msgspec.json.Decoder(list[msgspec.Raw])
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class Request:
    """A request (it has an id) or a notification (``id`` is None)."""

    method: str
    params: Any
    id: msgspec.Raw | None

    @property
    def is_notification(self) -> bool:
        return self.id is None


@dataclass(frozen=True)
class Reply:
    """A response the peer sent us; we never send requests, so it is dropped."""


@dataclass(frozen=True)
class Invalid:
    """A line or batch entry that must be answered with an error."""

    code: int
    message: str
    id: msgspec.Raw | None = None  # None answers with a null id


Message = Request | Reply | Invalid


@dataclass(frozen=True)
class Parsed:
    """What one line carried: a single message, or a batch (a JSON array)."""

    messages: list[Message]
    batch: bool = False


def _check_id(raw: msgspec.Raw) -> msgspec.Raw | None:
    """The id echoed back, or None if it is not a string, number or null."""
    text = bytes(raw)
    first = text[:1]
    if first == b'"' or first == b"-" or first.isdigit() or text == b"null":
        return raw
    return None


def _message(env: _Envelope) -> Message:
    has_id = len(env.id) > 0
    rid = _check_id(env.id) if has_id else None
    if has_id and rid is None:
        return Invalid(INVALID_REQUEST, "Invalid Request: id must be a string, number or null")
    if env.method is msgspec.UNSET and (
        env.result is not msgspec.UNSET or env.error is not msgspec.UNSET
    ):
        return Reply()
    if env.jsonrpc != "2.0":
        return Invalid(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', rid)
    if not isinstance(env.method, str):
        return Invalid(INVALID_REQUEST, 'Invalid Request: "method" must be a string', rid)
    params = None if env.params is msgspec.UNSET else env.params
    return Request(env.method, params, rid)


def _entry(raw: msgspec.Raw) -> Message:
    try:
        return _message(_decoder.decode(raw))
    except msgspec.ValidationError:
        return Invalid(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    except RecursionError:
        return Invalid(PARSE_ERROR, "Parse error: JSON nested too deeply")


def parse_line(line: bytes) -> Parsed:
    """Decode one line (without its newline) into the messages it carries.

    Never raises: whatever the line holds, it is answered. msgspec decodes
    (and even skips) nested arrays and objects by recursion and raises
    RecursionError past the interpreter's depth limit (about 1,000 levels, a
    2 KB line), so that is a parse error like any other malformed JSON.
    """
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Parsed([Invalid(PARSE_ERROR, f"Parse error: invalid UTF-8 at byte {exc.start}")])
    try:
        return Parsed([_message(_decoder.decode(line))])
    except msgspec.ValidationError:
        pass  # valid JSON but not an object: a batch, or an invalid request
    except msgspec.DecodeError as exc:
        return Parsed([Invalid(PARSE_ERROR, f"Parse error: {exc}")])
    except RecursionError:
        return _TOO_DEEP
    try:
        entries = _batch_decoder.decode(line)
    except msgspec.ValidationError:
        return Parsed(
            [Invalid(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")]
        )
    except msgspec.DecodeError as exc:  # "[[": not an object, and then not JSON either
        return Parsed([Invalid(PARSE_ERROR, f"Parse error: {exc}")])
    except RecursionError:
        return _TOO_DEEP
    if not entries:
        return Parsed([Invalid(INVALID_REQUEST, "Invalid Request: empty batch")])
    return Parsed([_entry(raw) for raw in entries], batch=True)


_TOO_DEEP = Parsed([Invalid(PARSE_ERROR, "Parse error: JSON nested too deeply")])


def result_response(rid: msgspec.Raw, result: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "id": rid, "result": result})


def error_response(rid: msgspec.Raw, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _encoder.encode({"jsonrpc": "2.0", "id": rid, "error": error})


def batch_response(parts: list[bytes]) -> bytes:
    return b"[" + b",".join(parts) + b"]"


def encode(value: Any) -> bytes:
    return _encoder.encode(value)


@dataclass
class LineSplitter:
    """Split a byte stream into lines of at most ``limit`` bytes.

    :meth:`feed` yields each complete line, or :data:`None` once for a line
    that outgrew the limit (its bytes are dropped up to the next newline).
    """

    limit: int = MAX_LINE_BYTES
    _buf: bytearray = field(default_factory=bytearray)
    _skipping: bool = False

    def feed(self, data: bytes) -> Iterator[bytes | None]:
        start = 0
        while True:
            nl = data.find(b"\n", start)
            chunk = data[start:] if nl < 0 else data[start:nl]
            if self._skipping:
                if nl >= 0:
                    self._skipping = False
            elif len(self._buf) + len(chunk) > self.limit:
                self._buf.clear()
                self._skipping = nl < 0
                yield None
            elif nl >= 0:
                self._buf += chunk
                line = bytes(self._buf)
                self._buf.clear()
                yield line
            else:
                self._buf += chunk
            if nl < 0:
                return
            start = nl + 1

    def finish(self) -> Iterator[bytes]:
        """At end of input: an unterminated last line, if any."""
        if self._buf and not self._skipping:
            yield bytes(self._buf)
        self._buf.clear()

"""The frame catalog: one record class (:mod:`phux.record`) per frame type.

Field order is the field id (the first field is id 1). Types use the widths in
:mod:`phux.wire.tlv`; ``X | None = None`` is an optional field (absent on the
wire when None); any other default is what a decoder uses when the field is
absent. A union of records (``ExitStatus``) tells its members apart on the
wire by each member's ``TAG``. Client-originated frames are 0x00-0x7F, server-originated 0x80-0xFF.
Numbers follow the original phux wire where the concept is the same.

Request/response: every client request carries a ``request_id`` chosen by the
client (unique among its outstanding requests); the server answers it with
exactly one reply frame carrying the same id: the frame named in the
request's docstring, or ERROR.
"""

from __future__ import annotations

import enum

from phux.record import Record, field
from phux.wire.errors import enum_of
from phux.wire.tlv import I32, U8, U16, U32, U64

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from enum import IntEnum as _IntEnumBody
    from typing import ClassVar
else:
    _IntEnumBody = object  # enum_of makes the class an IntEnum (see phux.wire.errors)


class Frame(Record):
    TYPE: ClassVar[int]


@enum_of(enum.IntEnum)
class Role(_IntEnumBody):
    """A subscriber's role: viewers never change the size, primaries do."""

    VIEWER = 0
    PRIMARY = 1


@enum_of(enum.IntEnum)
class Signal(_IntEnumBody):
    """Signals a client may send to a terminal's foreground process group."""

    HUP = 1
    INT = 2
    QUIT = 3
    KILL = 9
    USR1 = 10
    USR2 = 12
    TERM = 15
    CONT = 18
    STOP = 19
    TSTP = 20
    WINCH = 28


@enum_of(enum.IntEnum)
class TombstoneReason(_IntEnumBody):
    LAG = 1
    """The subscriber's queue overflowed; output was dropped for it."""
    GAP = 2
    """The bytes it needs are no longer in the journal."""


# ---------------------------------------------------------------- shared records


class MetaEntry(Record):
    """One L3 metadata key and its opaque value."""

    key: str
    value: bytes


class EnvVar(Record):
    name: str
    value: str


class Exited(Record):
    """The process exited with ``code``."""

    TAG: ClassVar[int] = 1

    code: I32


class Signaled(Record):
    """The process was killed by signal number ``signal`` (the host's number)."""

    TAG: ClassVar[int] = 2

    signal: U16


ExitStatus = Exited | Signaled


class Foreground(Record):
    """What holds a terminal's PTY: its foreground process group and the tty's modes.

    Read from the PTY and /proc when the server sends it, never parsed from
    output. ``name`` is the command name (``comm``) of the group's leader, or
    of another live member once the leader has exited ("" when none is found),
    ``argv`` that process's arguments (capped; may be empty), ``echo``,
    ``canonical`` and ``isig`` the tty's ECHO, ICANON and ISIG modes
    (spec/L1.md §8.1; ``isig`` since 1.3, true from a server that omits it).
    """

    pgrp: U32
    name: str
    argv: list[str] = field(default_factory=list)
    echo: bool
    canonical: bool
    isig: bool = True


class AuditRecord(Record):
    """One audited INPUT: who wrote ``size`` bytes to which terminal, and when.

    ``client`` is the name from the writer's HELLO, ``pid`` and ``uid`` its
    process's from the socket; ``target`` the pane's ``session:window.pane``
    then; ``data`` the bytes, only when the server keeps them (spec/L1.md §10).
    """

    time_ms: U64
    server_id: str
    terminal: U32
    client: str
    pid: U32
    uid: U32
    size: U64
    sha256: str
    target: str | None = None
    data: bytes | None = None


class TerminalInfo(Record):
    """Everything a client needs to resolve a selector, in one record.

    ``foreground`` (since 1.1) is read when the list is answered; absent once
    the terminal has exited or when the server cannot read it. ``unread_input``
    (since 1.4; filtered listings only, 0 in a whole one): bytes of input given
    to the terminal that its program has not read yet, queued in the server or
    held by its PTY (spec/L1.md §8.1); ``unread_line_open``: that input ends
    inside a line (its last byte is no CR or LF).
    """

    terminal: U32
    pid: U32
    cols: U16
    rows: U16
    alive: bool
    exit: ExitStatus | None = None
    viewers: U16 = 0
    primaries: U16 = 0
    next_seq: U64 = 0
    created_ms: U64 = 0
    metadata: list[MetaEntry] = field(default_factory=list)
    foreground: Foreground | None = None
    unread_input: U32 = 0
    unread_line_open: bool = False


# ---------------------------------------------------------------- client -> server


class Hello(Frame):
    """First frame of every connection. Answered by HELLO_OK, or ERROR and close."""

    TYPE: ClassVar[int] = 0x01
    client_name: str
    major: U16
    minor: U16
    patch: U16
    capabilities: list[str] = field(default_factory=list)


class Detach(Frame):
    """The client is leaving. Answered by DETACHED (REQUESTED), then the server closes."""

    TYPE: ClassVar[int] = 0x03


class Input(Frame):
    """Bytes for a terminal's PTY. Answered by OK once all of them are written.

    ``more``: not the last piece of an input unit; the server writes the
    pieces of a unit with nothing else in between (spec/L1.md §7).
    ``urgent``: an interrupt; written ahead of all queued input, which is
    discarded (its INPUTs fail with INPUT_CANCELLED).
    """

    TYPE: ClassVar[int] = 0x13
    request_id: U32
    terminal: U32
    data: bytes
    more: bool = False
    urgent: bool = False


class Spawn(Frame):
    """Start a terminal. Answered by TERMINAL_SPAWNED (with this request id) or ERROR.

    ``argv`` empty means the user's shell. ``unique_keys`` names metadata keys
    whose values in ``metadata`` must not already be held by the same key on
    any live terminal; the check and the spawn are one atomic step.
    """

    TYPE: ClassVar[int] = 0x22
    request_id: U32
    argv: list[str] = field(default_factory=list)
    cwd: str | None = None
    env: list[EnvVar] = field(default_factory=list)
    cols: U16 = 80
    rows: U16 = 24
    metadata: list[MetaEntry] = field(default_factory=list)
    unique_keys: list[str] = field(default_factory=list)


class Resize(Frame):
    """Set a terminal's size. Answered by OK."""

    TYPE: ClassVar[int] = 0x23
    request_id: U32
    terminal: U32
    cols: U16
    rows: U16


class SendSignal(Frame):
    """Signal a terminal's foreground process group. Answered by OK."""

    TYPE: ClassVar[int] = 0x24
    request_id: U32
    terminal: U32
    signal: U8


class Kill(Frame):
    """Close terminals, all or none, in one atomic step. Answered by OK.

    Killing one terminal is a list of one. If any id is unknown or already
    closed, nothing is killed and the reply is ERROR.
    """

    TYPE: ClassVar[int] = 0x25
    request_id: U32
    terminals: list[U32]


class TerminalFilter(Record):
    """Which terminals a LIST_TERMINALS wants (since 1.4; spec/L1.md §8).

    ``terminals``: only these ids (empty: any). ``metadata``: only terminals whose
    metadata holds each entry, key and value exactly (empty: any). The global
    metadata is limited too: only entries whose key starts with one of
    ``global_prefixes`` (empty: none).
    """

    terminals: list[U32] = field(default_factory=list)
    metadata: list[MetaEntry] = field(default_factory=list)
    global_prefixes: list[str] = field(default_factory=list)


class ListTerminals(Frame):
    """Answered by TERMINAL_LIST: every terminal, or (since 1.4) those ``filter`` names."""

    TYPE: ClassVar[int] = 0x30
    request_id: U32
    filter: TerminalFilter | None = None


class ListAudit(Frame):
    """Read the server's input audit (since 1.3). Answered by AUDIT_LIST.

    ``terminal`` set: that terminal's entries from this server's life; absent:
    every entry the audit holds, of every terminal and every server run.
    Only entries at or after ``since_ms`` (Unix ms); the newest ``limit`` of
    them (0: as many as the server gives at most) (spec/L1.md §10).
    """

    TYPE: ClassVar[int] = 0x31
    request_id: U32
    terminal: U32 | None = None
    limit: U32 = 0
    since_ms: U64 = 0


class Subscribe(Frame):
    """Follow a terminal's output. Answered by a bootstrap (BOOTSTRAP_BEGIN ... READY).

    A primary's ``cols``/``rows`` become the terminal's size. ``input`` (since
    1.3): also receive INPUT_WRITTEN, the bytes written to the PTY, in order
    with the output (spec/L1.md §7.1).
    """

    TYPE: ClassVar[int] = 0x40
    request_id: U32
    terminal: U32
    role: U8 = Role.VIEWER
    cols: U16 | None = None
    rows: U16 | None = None
    input: bool = False


class SubscribeEvents(Frame):
    """Receive TERMINAL_SPAWNED, TERMINAL_CLOSED and TERMINAL_STATE for every terminal.

    Answered by OK.
    """

    TYPE: ClassVar[int] = 0x41
    request_id: U32


class Unsubscribe(Frame):
    """Stop following a terminal. Answered by OK; no output for it follows the OK."""

    TYPE: ClassVar[int] = 0x42
    request_id: U32
    terminal: U32


class MetaGet(Frame):
    """Read one key (global scope when ``terminal`` is absent). Answered by METADATA_VALUE."""

    TYPE: ClassVar[int] = 0x50
    request_id: U32
    key: str
    terminal: U32 | None = None


class MetaSet(Frame):
    """Write one key. Answered by OK."""

    TYPE: ClassVar[int] = 0x51
    request_id: U32
    key: str
    value: bytes
    terminal: U32 | None = None


class MetaDelete(Frame):
    """Delete one key (absent is not an error). Answered by OK."""

    TYPE: ClassVar[int] = 0x52
    request_id: U32
    key: str
    terminal: U32 | None = None


class MetaList(Frame):
    """List the keys of one scope that start with ``prefix``. Answered by METADATA_KEYS."""

    TYPE: ClassVar[int] = 0x53
    request_id: U32
    prefix: str = ""
    terminal: U32 | None = None


class MetaSubscribe(Frame):
    """Receive METADATA_CHANGED for keys starting with ``prefix``, in every scope.

    Answered by OK; the request id becomes the subscription id.
    """

    TYPE: ClassVar[int] = 0x54
    request_id: U32
    prefix: str = ""


class MetaUnsubscribe(Frame):
    """End a metadata subscription. Answered by OK."""

    TYPE: ClassVar[int] = 0x55
    request_id: U32
    subscription: U32


class Shutdown(Frame):
    """Stop the server: every terminal gets SIGHUP, every client DETACHED. Answered by OK."""

    TYPE: ClassVar[int] = 0x60
    request_id: U32


class Ping(Frame):
    """Allowed before HELLO. Answered by PONG with the same token."""

    TYPE: ClassVar[int] = 0x7F
    token: U64 = 0


# ---------------------------------------------------------------- server -> client


class HelloOk(Frame):
    TYPE: ClassVar[int] = 0x80
    server_name: str
    major: U16
    minor: U16
    patch: U16
    server_id: str
    pid: U32
    capabilities: list[str] = field(default_factory=list)
    max_frame: U32 = 16 * 1024 * 1024
    max_metadata_value: U32 = 64 * 1024
    max_subscriptions: U32 = 256
    journal_bytes: U64 = 0


class Detached(Frame):
    """The server is closing this connection (a DetachReason), then it closes."""

    TYPE: ClassVar[int] = 0x82
    reason: U8
    message: str = ""


class Output(Frame):
    """Live output: ``data`` are the bytes numbered ``seq`` .. ``seq + len(data) - 1``."""

    TYPE: ClassVar[int] = 0x90
    terminal: U32
    seq: U64
    data: bytes


class InputWritten(Frame):
    """Bytes written to the terminal's PTY (since 1.3, to subscribers that asked).

    Written after the output bytes before ``seq`` were read, and in order with
    OUTPUT; ``reply``: the server's own answer to a terminal query, not a
    client's INPUT (spec/L1.md §7.1).
    """

    TYPE: ClassVar[int] = 0x91
    terminal: U32
    seq: U64
    data: bytes
    reply: bool = False


class Resized(Frame):
    """The terminal's size became cols x rows before the output byte numbered ``seq``."""

    TYPE: ClassVar[int] = 0x92
    terminal: U32
    seq: U64
    cols: U16
    rows: U16


class BootstrapBegin(Frame):
    """Start of a bootstrap. ``request_id`` is the SUBSCRIBE's, or 0 after a tombstone.

    The size is the terminal's at ``start_seq``; the chunks and RESIZED frames
    that follow, up to BOOTSTRAP_READY, replay the state from there.
    """

    TYPE: ClassVar[int] = 0x93
    request_id: U32
    terminal: U32
    start_seq: U64
    cols: U16
    rows: U16


class BootstrapChunk(Frame):
    """Bootstrap bytes. A checkpoint chunk recreates the state before byte ``seq``;
    a journal chunk carries output bytes numbered from ``seq``."""

    TYPE: ClassVar[int] = 0x94
    terminal: U32
    seq: U64
    data: bytes
    checkpoint: bool = False


class BootstrapReady(Frame):
    """End of a bootstrap: live OUTPUT continues at exactly ``next_seq``."""

    TYPE: ClassVar[int] = 0x95
    terminal: U32
    next_seq: U64
    cols: U16
    rows: U16
    alive: bool = True
    exit: ExitStatus | None = None


class Tombstone(Frame):
    """Output from ``lost_seq`` on was not delivered; a fresh bootstrap follows."""

    TYPE: ClassVar[int] = 0x97
    terminal: U32
    reason: U8
    lost_seq: U64


class TerminalClosed(Frame):
    """The terminal's process ended; no output follows ``final_seq`` (exclusive)."""

    TYPE: ClassVar[int] = 0xA1
    terminal: U32
    status: ExitStatus
    final_seq: U64


class TerminalSpawned(Frame):
    """Reply to SPAWN (with its request id), or an event (request id absent)."""

    TYPE: ClassVar[int] = 0xA2
    terminal: U32
    pid: U32
    cols: U16
    rows: U16
    request_id: U32 | None = None
    metadata: list[MetaEntry] = field(default_factory=list)


class TerminalState(Frame):
    """The terminal's foreground changed (since 1.1): sent to events subscribers and the
    terminal's subscribers; ``foreground`` absent once it has exited or is unreadable."""

    TYPE: ClassVar[int] = 0xA3
    terminal: U32
    foreground: Foreground | None = None


class Error(Frame):
    """A request failed (``request_id`` set) or the connection did (absent)."""

    TYPE: ClassVar[int] = 0xC1
    code: U16
    message: str
    request_id: U32 | None = None


class Ok(Frame):
    """Generic success reply."""

    TYPE: ClassVar[int] = 0xC2
    request_id: U32


class TerminalList(Frame):
    """Reply to LIST_TERMINALS: terminals in creation order, and the global metadata."""

    TYPE: ClassVar[int] = 0xC4
    request_id: U32
    terminals: list[TerminalInfo] = field(default_factory=list)
    global_metadata: list[MetaEntry] = field(default_factory=list)


class AuditList(Frame):
    """Reply to LIST_AUDIT: entries oldest first.

    ``audit_file`` is the audit's path on the server's machine ("" when the
    server keeps no audit); ``truncated``: older matching entries were left
    out (the limit, or the reply's size bound).
    """

    TYPE: ClassVar[int] = 0xC5
    request_id: U32
    entries: list[AuditRecord] = field(default_factory=list)
    audit_file: str = ""
    truncated: bool = False


class MetadataChanged(Frame):
    """A key changed in the scope of ``terminal`` (global when absent); no value = deleted."""

    TYPE: ClassVar[int] = 0xD0
    subscription: U32
    key: str
    terminal: U32 | None = None
    value: bytes | None = None


class MetadataValue(Frame):
    """Reply to META_GET; ``value`` absent when the key is not set."""

    TYPE: ClassVar[int] = 0xD1
    request_id: U32
    key: str
    value: bytes | None = None


class MetadataKeys(Frame):
    """Reply to META_LIST, sorted by key."""

    TYPE: ClassVar[int] = 0xD2
    request_id: U32
    entries: list[MetaEntry] = field(default_factory=list)


class Pong(Frame):
    TYPE: ClassVar[int] = 0xFF
    token: U64 = 0


CLIENT_FRAMES: tuple[type[Frame], ...] = (
    Hello,
    Detach,
    Input,
    Spawn,
    Resize,
    SendSignal,
    Kill,
    ListTerminals,
    ListAudit,
    Subscribe,
    SubscribeEvents,
    Unsubscribe,
    MetaGet,
    MetaSet,
    MetaDelete,
    MetaList,
    MetaSubscribe,
    MetaUnsubscribe,
    Shutdown,
    Ping,
)
SERVER_FRAMES: tuple[type[Frame], ...] = (
    HelloOk,
    Detached,
    Output,
    InputWritten,
    Resized,
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Tombstone,
    TerminalClosed,
    TerminalSpawned,
    TerminalState,
    Error,
    Ok,
    TerminalList,
    AuditList,
    MetadataChanged,
    MetadataValue,
    MetadataKeys,
    Pong,
)
ALL_FRAMES: tuple[type[Frame], ...] = CLIENT_FRAMES + SERVER_FRAMES
FRAMES_BY_TYPE: dict[int, type[Frame]] = {cls.TYPE: cls for cls in ALL_FRAMES}

assert len(FRAMES_BY_TYPE) == len(ALL_FRAMES), "duplicate frame type number"
assert all(cls.TYPE < 0x80 for cls in CLIENT_FRAMES)
assert all(cls.TYPE >= 0x80 for cls in SERVER_FRAMES)

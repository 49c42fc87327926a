"""What the screen answers and announces: device reports, bells, titles and OSC
(working directory, hyperlinks, OSC 133 shell marks)."""

from __future__ import annotations

from typing import Any

from phux.engine._cells import _attrs, _set_attrs
from phux.engine._grid import GridScreen
from phux.engine._pyte import modes as mo
from phux.engine.events import Bell, CwdChanged, TitleChanged
from phux.signed_marks import unsigned

_MARKS = frozenset("ABCDI")


class OscScreen(GridScreen):
    """Answers reports and takes OSC strings."""

    # -- queries, OSC, bell ----------------------------------------------------------

    def write_process_input(self, data: str) -> None:
        self.replies.append(data)

    def report_device_attributes(self, mode: int = 0, **kwargs: Any) -> None:
        """DA1 (``CSI c``) and, with ``secondary=True``, DA2 (``CSI > c``)."""
        if mode != 0:
            return
        if kwargs.get("secondary"):
            self.write_process_input("\x1b[>1;10;0c")
        elif not kwargs.get("private"):
            self.write_process_input("\x1b[?1;2c")

    def report_device_status(self, mode: int = 0, **kwargs: Any) -> None:
        """DSR 5 and 6 (and DECXCPR, ``CSI ? 6 n``, with ``private=True``)."""
        if mode == 5 and not kwargs.get("private"):
            self.write_process_input("\x1b[0n")
        elif mode == 6:
            x = min(self.cursor.x, self.columns - 1) + 1
            y = self.cursor.y + 1
            if mo.DECOM in self.mode and self.margins is not None:
                y -= self.margins.top
            prefix = "?" if kwargs.get("private") else ""
            self.write_process_input(f"\x1b[{prefix}{y};{x}R")

    def bell(self, *args: Any) -> None:
        self.bell_count += 1
        self.events.append(Bell())

    def set_title(self, param: str) -> None:
        if param != self.title:
            self.title = param
            self.events.append(TitleChanged(title=param))

    def osc(self, payload: str) -> None:
        """Dispatch one OSC string (without introducer and terminator)."""
        code, _, rest = payload.partition(";")
        if code == "0":
            self.set_icon_name(rest)
            self.set_title(rest)
        elif code == "1":
            self.set_icon_name(rest)
        elif code == "2":
            self.set_title(rest)
        elif code == "7":
            cwd = _parse_cwd(rest)
            if cwd != self.cwd:
                self.cwd = cwd
                self.events.append(CwdChanged(cwd=cwd))
        elif code == "8":
            _params, _, uri = rest.partition(";")
            self.hyperlink = uri or None
            self.link = rest if uri else ""
            if uri:
                self.links_seen = True
            attrs = _attrs(self.cursor)
            if attrs.link != self.link:
                _set_attrs(self.cursor, attrs._replace(link=self.link))
        elif code == "133":
            self._osc133(rest)
        # 52 (clipboard) and everything else: deliberately ignored.

    def _osc133(self, rest: str) -> None:
        kind, _, args = rest.partition(";")
        if kind in _MARKS:
            shell = self.shell
            if not shell.checkpoint:
                # Output can print marks too: only the pane's signed ones count
                # (phux.signed_marks). A checkpoint is the server's, unsigned.
                signed = unsigned(args, shell.key)
                if signed is None:
                    return
                args = signed
            shell.mark(kind, args)


def _parse_cwd(value: str) -> str:
    """The path of an OSC 7 ``file:`` URL, percent-decoded: ``unquote(urlparse(value).path)``;
    any other value as it is.

    A URL of ASCII characters without brackets, tabs or line breaks (what shells
    send) is taken apart here, as urllib does it: importing urllib.parse (with
    ipaddress) costs ~4 ms, which a one-shot reader replaying a checkpoint with
    a working directory would pay. Any other URL is left to urllib, whose
    bracket (IPv6) checks, removals and non-ASCII rules are not worth repeating.
    """
    if not value.startswith("file:"):
        return value
    if not value.isascii() or any(c in value for c in "[]\t\r\n"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(value).path)
    url = value[5:]
    if url.startswith("//"):  # the host runs up to the first of / ? #
        ends = [i for i in (url.find(c, 2) for c in "/?#") if i >= 0]
        url = url[min(ends) :] if ends else ""
    path = url.partition("#")[0].partition("?")[0]  # ("file" has no ;params)
    if "%" not in path:
        return path
    head, *escaped = path.split("%")
    out = [head.encode()]
    for part in escaped:
        if len(part) >= 2 and part[0] in _HEX_DIGITS and part[1] in _HEX_DIGITS:
            out += (bytes.fromhex(part[:2]), part[2:].encode())
        else:  # not an escape: kept as it is
            out += (b"%", part.encode())
    return b"".join(out).decode("utf-8", "replace")


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")

"""The server log: start, stop, errors, refused connections.

Each line's template is throttled (``_Throttle``): a peer can make the server log a
line per connection (a flood of connections that never say HELLO, each closed for a
newer one, logged 300 lines a second), and the log must not grow with the flood."""

from __future__ import annotations

import io
import logging
import os
import sys
import time
from pathlib import Path

from phux.runtime_paths import open_private

LOGGER_NAME = "phux.server"

log = logging.getLogger(LOGGER_NAME)

THROTTLE_BURST = 20
"""Lines of one template logged per ``THROTTLE_WINDOW_S``; the rest are counted."""
THROTTLE_WINDOW_S = 60.0


class _Window:
    """One template's lines in the current window."""

    __slots__ = ("left_out", "logged", "start")

    def __init__(self, start: float) -> None:
        self.start = start
        self.logged = 1
        self.left_out = 0


class _Throttle(logging.Filter):
    """At most ``THROTTLE_BURST`` lines of each message template (the format string,
    whatever its arguments) per window; the first line of the next window, or the
    server's last words (``flush``), say how many were left out."""

    def __init__(self) -> None:
        super().__init__()
        self._windows: dict[str, _Window] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        template = str(record.msg)
        now = time.monotonic()
        window = self._windows.get(template)
        if window is None or now - window.start >= THROTTLE_WINDOW_S:
            if window is not None and window.left_out:
                record.msg = f"{template} [{_left_out(window.left_out, template)} before this]"
            self._windows[template] = _Window(now)
            return True
        if window.logged < THROTTLE_BURST:
            window.logged += 1
            return True
        window.left_out += 1
        return False

    def flush(self) -> None:
        """Log how many lines of each template the current windows left out."""
        for template, window in list(self._windows.items()):
            if window.left_out:
                left_out = _left_out(window.left_out, template)
                window.left_out = 0
                log.info("%s", left_out)


def _left_out(count: int, template: str) -> str:
    return f"{count} more lines like {template!r} were not logged (throttled)"


_throttle = _Throttle()
log.addFilter(_throttle)


def flush_throttled() -> None:
    """Say what the throttle left out (at the server's stop)."""
    _throttle.flush()


class _PrivateFileHandler(logging.FileHandler):
    """A log file created 0600 and never opened through a symlink at its name."""

    def _open(self) -> io.TextIOWrapper:
        return open(open_private(self.baseFilename), "a", encoding=self.encoding)


def setup_logging(log_file: Path | None, *, foreground: bool) -> None:
    """Log INFO and above to ``log_file`` (created 0600 in a 0700 directory if missing).

    In the foreground, warnings and errors are also written to stderr. A log
    file that cannot be opened is reported on stderr and otherwise ignored:
    the server runs without it rather than not at all.
    """
    log.setLevel(logging.INFO)
    log.propagate = False
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()
    fmt = logging.Formatter(f"%(asctime)s pid={os.getpid()} %(levelname)s %(message)s")
    if log_file is not None:
        try:
            log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            file_handler = _PrivateFileHandler(log_file, encoding="utf-8")
            file_handler.setFormatter(fmt)
            log.addHandler(file_handler)
        except OSError as exc:
            print(f"phux server: cannot open log file {log_file}: {exc}", file=sys.stderr)
    if foreground:
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.WARNING)
        err.setFormatter(fmt)
        log.addHandler(err)

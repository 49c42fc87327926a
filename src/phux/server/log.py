"""The server log: start, stop, errors, refused connections."""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path

from phux.runtime_paths import open_private

LOGGER_NAME = "phux.server"

log = logging.getLogger(LOGGER_NAME)


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

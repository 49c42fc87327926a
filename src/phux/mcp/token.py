"""The bearer token of ``phux mcp --http``: made on first start, kept in a 0600 file.

The default file is ``$XDG_STATE_HOME/phux/mcp-token`` (``~/.local/state/phux/``
without XDG_STATE_HOME), beside the server's log; ``--token-file`` names another.
The file must be a regular file of this user that nobody else may read: the token
is what stands between the HTTP port and typing into every pane.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Mapping

from phux.runtime_paths import open_private

TOKEN_BYTES = 32
"""Random bytes in a new token (43 characters, URL-safe base64)."""


class TokenError(Exception):
    """The token file cannot be used (a clear message for the person)."""


def default_token_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "phux", "mcp-token")


def load_or_create(path: str) -> str:
    """The token in ``path``, made (0600, in a 0700 directory when new) if missing."""
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise TokenError(f"cannot create {directory}: {exc}") from None
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        fd = open_private(path, append=False, exclusive=True)
    except FileExistsError:  # another adapter made it meanwhile: use that one
        return _read(path)
    except OSError as exc:
        raise TokenError(f"cannot create the token file {path}: {exc}") from None
    try:
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    return token


def _read(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise TokenError(f"cannot open the token file {path}: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise TokenError(f"{path} is not a regular file of yours")
        if st.st_mode & 0o077:
            raise TokenError(
                f"{path} may be read by others (mode {stat.S_IMODE(st.st_mode):o}); "
                f"make it private (chmod 600 {path}) or remove it for a new token"
            )
        data = os.read(fd, 4096)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    token = data.decode("utf-8", "replace").strip()
    if len(token) < 16 or not token.isprintable() or " " in token:
        raise TokenError(f"{path} holds no usable token (remove it for a new one)")
    return token

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()

"""`phux server --help` names every limit the server reads from its environment,
with the default the server really uses."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from phux.cli.server_cmd import LIMITS, server_cmd
from phux.server.config import MiB, ServerConfig

CONFIG_SOURCE = Path(__file__).resolve().parents[2] / "src" / "phux" / "server" / "config.py"


def _stated() -> dict[str, str]:
    """Each variable of the help's list and the default it states (in parentheses)."""
    entries = re.findall(r"^  (PHUX_\w+)\s+(.*?)(?=^  PHUX_|\Z)", LIMITS, re.M | re.S)
    return {name: re.findall(r"\(([^()]*)\)\s*$", text)[0] for name, text in entries}


def _value(default: str) -> float:
    number = default.split(";")[0].strip()
    if number.endswith(" MiB"):
        return float(number[: -len(" MiB")]) * MiB
    return float(number)


def _field_of(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ServerConfig field that ``$name`` sets: the one that takes a sentinel value."""
    monkeypatch.setenv(name, "424242")
    taken = [
        f.name
        for f in dataclasses.fields(ServerConfig)
        if getattr(ServerConfig(socket_path=Path("s")), f.name) == 424242
    ]
    monkeypatch.delenv(name)
    assert len(taken) == 1, (name, taken)
    return taken[0]


def test_every_environment_limit_is_in_the_help() -> None:
    read = set(re.findall(r"PHUX_\w+", CONFIG_SOURCE.read_text()))
    shown = CliRunner().invoke(server_cmd, ["--help"]).output
    assert {name for name in read if name not in shown} == set()


def test_the_defaults_the_help_states_are_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    stated = _stated()
    assert len(stated) >= 10
    for name, default in stated.items():
        monkeypatch.delenv(name, raising=False)
        field = _field_of(name, monkeypatch)
        assert getattr(ServerConfig(socket_path=Path("s")), field) == _value(default), name

"""spec/schemas/ matches the Structs, and the Structs' JSON validates against it."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from tools import gen_schemas

from phux.client import models as m
from phux.client.run_base import RunOutcome
from phux.client.selectors import Session
from phux.engine.screen_state import CellInfo, CellStyle, Cursor, PaletteColor, RgbColor
from phux.record import fields

from .schemas import SCHEMAS, validate


def test_schemas_are_current() -> None:
    assert gen_schemas.drift() == [], "run: python -m tools.gen_schemas"


def test_check_mode_reports_drift(tmp_path: Path) -> None:
    assert gen_schemas.main(["--check", "--dir", str(tmp_path)]) == 1
    assert gen_schemas.main(["--dir", str(tmp_path)]) == 0
    assert gen_schemas.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "stale.schema.json").write_text("{}")
    assert gen_schemas.main(["--check", "--dir", str(tmp_path)]) == 1


def test_every_shape_has_a_file() -> None:
    names = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert names == {shape.name for shape in gen_schemas.SHAPES}


SCREEN = m.ScreenState(
    schema_version=4,
    pane=2,
    cols=10,
    rows=1,
    cursor=None,
    lines=["$ ls"],
    scrollback=["old"],
    cells=[
        CellInfo(col=0, row=0, semantic="prompt", style=CellStyle(bold=True)),
        CellInfo(
            col=2, row=0, style=CellStyle(fg=PaletteColor(index=1), bg=RgbColor(r=1, g=2, b=3))
        ),
    ],
    title="t",
    wrapped=[],
    alternate=False,
)


@pytest.mark.parametrize(
    ("shape", "value"),
    [
        ("screen_state", SCREEN),
        (
            "screen_state",
            msgspec.structs.replace(SCREEN, cells=None, cursor=Cursor(x=0, y=0, visible=True)),
        ),
        (
            "session_list",
            m.SessionList.from_infos(
                [Session(name="a", window_count=1, attached_client_count=2, terminals=[1])]
            ),
        ),
        (
            "run_result",
            m.RunResult(command="c", exit_code=0, output="", duration_ms=1, truncated=False),
        ),
        ("new_result", m.NewResult(session="s", terminal_id=1)),
        ("watch_event", m.PaneClosed(terminal="@1", exit_status=None, signal=1)),
        ("watch_event", m.TitleChanged(terminal="@1", title="x")),
        ("watch_event", m.CommandStarted(terminal="@1", command="ls")),
        (
            "watch_event",
            m.CommandFinished(terminal="@1", exit_code=2, duration_ms=None, command="ls"),
        ),
        (
            "history_result",
            m.HistoryResult(
                pane="@1",
                commands=[
                    m.HistoryEntry(
                        command="ls",
                        cwd=None,
                        exit_code=0,
                        started_ms=1,
                        duration_ms=2,
                        running=False,
                        output="a",
                        truncated=False,
                    )
                ],
            ),
        ),
        (
            "error_report",
            m.ErrorReport(error=m.ErrorBody(code="c", message="m"), exit_code=1, remedy=""),
        ),
        ("send_keys_result", m.SendKeysResult(sent=True, pane="@1")),
        ("wait_result", m.WaitResult(met=False, checks=2, screen=SCREEN)),
    ],
)
def test_struct_json_validates(shape: str, value: object) -> None:
    validate(shape, json.loads(msgspec.json.encode(value)))


def test_schemas_reject_wrong_versions_and_shapes() -> None:
    import jsonschema

    doc = json.loads(msgspec.json.encode(SCREEN))
    doc["schema_version"] = 2
    with pytest.raises(jsonschema.ValidationError):
        validate("screen_state", doc)
    with pytest.raises(jsonschema.ValidationError):
        validate("watch_event", {"event": "nope", "terminal": "@1"})
    with pytest.raises(jsonschema.ValidationError):
        validate("run_result", {"command": "c", "exit_code": 0})
    with pytest.raises(jsonschema.ValidationError):
        validate("history_result", {"schema_version": 2, "pane": "@1", "commands": []})


@pytest.mark.parametrize(
    ("record", "shape"),
    [(RunOutcome, m.RunResult)],
)
def test_msgspec_free_results_have_their_shapes_fields(record: type, shape: type) -> None:
    # The client returns records (no msgspec on the one-shot path); the JSON
    # shape built from one must carry the same fields, in the same order.
    assert [f.name for f in fields(record)] == list(shape.__struct_fields__)

"""The one JSON envelope every ``--json`` command prints (docs/json.md).

``command`` is None only for a usage error that names no known command.

``{"format": 1, "command": ..., "ok": ..., "exit_code": ..., "error": ...}``
followed by the command's own payload. ``cli.main`` prints it once, after
the command returned or failed, so a script always gets one JSON document
on stdout, with the error's message, why and hint when there is one.
docs/json-schema.json is the schema; tests check real output against it.
"""

from __future__ import annotations

from series import json_text
from series.errors import SeriesError
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
_RESERVED = ("format", "command", "ok", "exit_code", "error")


def build(
    command: str | None, exit_code: int, error: SeriesError | None, payload: dict[str, Any] | None
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "format": FORMAT,
        "command": command,
        "ok": exit_code == 0,
        "exit_code": exit_code,
        "error": None
        if error is None
        else {"message": error.message, "why": error.why, "hint": error.hint},
    }
    for key, value in (payload or {}).items():
        if key not in _RESERVED:
            data[key] = value
    return data


def emit(ui: Ui, command: str | None, exit_code: int, error: SeriesError | None) -> None:
    data = build(command, exit_code, error, ui.payload)
    ui.out.file.write(json_text.dumps(data, indent=2) + "\n")

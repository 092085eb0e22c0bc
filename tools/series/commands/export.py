"""``series export``: the checkout's commits back into patches/ and series.toml.

The work is in series.stack.export; docs/workflow.md is the manual.
"""

from __future__ import annotations

from pathlib import Path

from series.errors import Exit
from series.project import Series
from series.stack.export import export
from series.ui import Ui


def run(series: Series, ui: Ui, *, directory: Path | None = None, as_json: bool = False) -> Exit:
    done = export(series, ui, series.checkout(directory))
    if as_json:
        ui.json(done)
    return Exit.OK

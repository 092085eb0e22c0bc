"""``series lint``: ruff on the files each patch touches, under upstream's configuration.

The work is in series.runs.lint; the manual is docs/testing.md ("series lint").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.commands.options import ENVELOPE, patch_ids
from series.errors import Exit

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (patch_ids("lint"), ENVELOPE)


def run(series: Series, ui: Ui, *, ids: list[str] | None = None, as_json: bool = False) -> Exit:
    from series.checkout import warn_unexported
    from series.runs.lint import emit, lint
    from series.unchanged import one_state

    warn_unexported(series.checkout(), ui)
    with one_state(series, "lint"):  # it takes no lock: nothing reported of a mix
        reports = lint(series, ui, series.select(ids))
    return emit(ui, reports, as_json=as_json)

"""``series apply``: materialise the pinned upstream with the stack as commits.

The work is in series.stack.apply; docs/workflow.md is the manual.
"""

from __future__ import annotations

from pathlib import Path

from series.errors import Exit
from series.project import Series
from series.stack.apply import apply
from series.ui import Ui


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    to: str | None = None,
    source: str | None = None,
    upstream_url: str | None = None,
    force: bool = False,
    as_json: bool = False,
) -> Exit:
    checkout = series.checkout(directory)
    done = apply(
        series,
        ui,
        checkout,
        series.upto(to),
        source=source,
        upstream_url=upstream_url,
        force=force,
    )
    if as_json:
        ui.json(done)
    return Exit.OK

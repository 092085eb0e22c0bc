"""``series export``: the checkout's commits back into patches/ and series.toml.

The work is in series.stack.export; docs/workflow.md is the manual.
"""

from __future__ import annotations

from pathlib import Path

from series.commands.options import DIR, ENVELOPE
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (DIR, ENVELOPE)


def run(series: Series, ui: Ui, *, directory: Path | None = None, as_json: bool = False) -> Exit:
    from series.stack import verified

    digest, done = verified.rerun(series, ui, directory, "export")
    if done is None:  # the export itself (and what it imports) only when it has work
        from series.stack.export import export

        done = export(series, ui, series.checkout(directory), digest)
    if as_json:
        ui.json(done)
    return Exit.OK

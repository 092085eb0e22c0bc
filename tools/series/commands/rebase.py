"""``series rebase``: move the series to a new upstream commit (docs/rebase.md).

The sequencer is series.stack.rebase; this module checks the options and
calls it. Exit status: 0 done, 3 stopped at a conflict, 2 bad options or
REV, 4 refused (work would be lost, or something moved under the rebase).
"""

from __future__ import annotations

from pathlib import Path

from series.errors import Exit, UsageError
from series.project import Series
from series.stack.rebase import start
from series.stack.rebase_finish import resume
from series.ui import Ui


def run(
    series: Series,
    ui: Ui,
    *,
    onto: str | None,
    upstream_url: str | None = None,
    drop_merged: bool = False,
    action: str | None = None,
    directory: Path | None = None,
) -> Exit:
    if (onto is None) == (action is None):
        raise UsageError(
            "series rebase needs --onto REV, or one of --continue, --skip, --abort",
            hint="e.g. series rebase --onto master --upstream ../keras",
        )
    if action is not None and (upstream_url or drop_merged):
        raise UsageError(
            f"--upstream and --drop-merged belong to the start of a rebase, not --{action}",
            hint=f"series rebase --{action}",
        )
    checkout = series.checkout(directory)
    if onto is not None:
        start(series, ui, checkout, onto=onto, url=upstream_url, drop_merged=drop_merged)
    else:
        assert action is not None
        resume(series, ui, checkout, action)
    return Exit.OK

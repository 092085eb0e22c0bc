"""``series rebase``: move the series to a new upstream commit (docs/rebase.md).

The sequencer is series.stack.rebase; this module checks the options and
calls it. Exit status: 0 done, 3 stopped at a conflict, 2 bad options or
REV, 4 refused (work would be lost, or something moved under the rebase).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import DIR, REV, URL, Exclusive, Option
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = (
    "exit status: 0 rebased; 3 stopped at a conflict; 2 bad options or REV; "
    "4 refused (work would be lost, or the checkout or target moved). Manual: docs/rebase.md."
)
OPTIONS = (
    DIR,
    Option("--onto", "the upstream branch, tag or commit to move to", type=REV, metavar="REV"),
    Option(
        "--upstream",
        "where REV lives (a clone, a mirror or a URL)",
        key="upstream_url",
        type=URL,
        metavar="URL|PATH",
    ),
    Option(
        "--drop-merged",
        "remove patches already upstream (same patch-id, or their PR in a subject)",
        action="store_true",
    ),
    Exclusive(
        tuple(
            Option(f"--{verb}", text, key="action", action="store_const", const=verb)
            for verb, text in (
                ("continue", "go on after resolving and staging the conflict"),
                (
                    "skip",
                    "drop the conflicting patch (series.toml records why) and go on; what "
                    "you committed or changed at the stop is kept under a backup ref",
                ),
                (
                    "abort",
                    "put refs, checkout, series.toml and patches/ back as they were; what "
                    "you committed or changed at the stop is kept under a backup ref",
                ),
            )
        )
    ),
)


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
    from series.stack.rebase import start
    from series.stack.rebase_resume import resume

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

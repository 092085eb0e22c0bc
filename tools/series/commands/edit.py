"""``series edit``: change any patch of the series in place (docs/edit.md).

One command for what StGit's ``goto``/``edit``/``refresh``/``delete``/
``sink``/``float`` and quilt's ``push``/``pop``/``refresh`` do: stop at a
patch to edit it (or after it, to add patches there), drop patches, move
one, squash ``git commit --fixup`` commits into their patches. Each is a
plan of per-patch actions run by the rebase sequencer (series.stack.edit)
and ends exported; ``--continue``, ``--skip`` and ``--abort`` go on from a
stop. Exit status: 0 done or stopped to edit, 3 stopped at a conflict,
2 bad options or an unknown patch, 4 refused (work would be lost, or
something moved under the edit).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import DIR, ENVELOPE, Option, resume
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = (
    "forms: `series edit ID` (stop at ID to amend it), `--after ID` (stop after ID to add "
    "patches), `--drop ID`, `--move ID --before|--after ID`, `--squash`; then "
    "`--continue`, `--skip` or `--abort`. exit status: 0 done or stopped to edit; "
    "3 stopped at a conflict; 2 bad options or an unknown patch; 4 refused (work would be "
    "lost, or the checkout moved). Manual: docs/edit.md."
)
OPTIONS = (
    DIR,
    Option(
        "ID",
        "stop at this patch to edit it (git commit --amend), then --continue",
        key="at",
        nargs="?",
    ),
    Option(
        "--after",
        "stop after this patch to add new patches there (with --move: move it after this one)",
        metavar="ID",
    ),
    Option("--before", "with --move: move it before this patch", metavar="ID"),
    Option("--move", "move this patch (with --before or --after)", metavar="ID"),
    Option(
        "--drop",
        "remove this patch from the series (repeatable); its file is deleted on export",
        key="drops",
        action="append",
        metavar="ID",
    ),
    Option(
        "--squash",
        "squash the branch's `git commit --fixup` commits into their patches",
        action="store_true",
    ),
    resume(
        "go on after editing (or after resolving and staging a conflict)",
        "at a conflict: drop the conflicting patch and go on; what you committed "
        "or changed at the stop is kept under a backup ref",
    ),
    ENVELOPE,
)


def run(
    series: Series,
    ui: Ui,
    *,
    at: str | None = None,
    after: str | None = None,
    before: str | None = None,
    move: str | None = None,
    drops: list[str] | None = None,
    squash: bool = False,
    action: str | None = None,
    directory: Path | None = None,
    as_json: bool = False,
) -> Exit:
    from series.stack.edit import report, resume, start
    from series.stack.edit_plan import Request

    request = Request(
        at=at, after=after, before=before, move=move, drops=tuple(drops or ()), squash=squash
    )
    checkout = series.checkout(directory)
    if action is not None:
        if request.given:
            raise UsageError(
                f"--{action} goes on with the edit in progress; it takes no other option",
                hint=f"series edit --{action}",
            )
        resume(series, ui, checkout, action)
    else:
        start(series, ui, checkout, request.checked())
    if as_json:
        ui.json(report(checkout))
    return Exit.OK

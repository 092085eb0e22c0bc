"""``series rebase``: move the series to a new upstream commit (docs/rebase.md).

The sequencer is series.stack.rebase; this module checks the options and
calls it. Exit status: 0 done, 3 stopped at a conflict, 2 bad options or
REV, 4 refused (work would be lost, or something moved under the rebase).
With ``--json`` the payload says where the checkout stands afterwards
(docs/rebase.md, "--json"); a stop at a conflict is the envelope's error.
"""

from __future__ import annotations

from pathlib import Path

from series.commands.options import DIR, ENVELOPE, REV, URL, Option, resume
from series.errors import Exit, UsageError

TYPE_CHECKING = False  # typing is not imported: --abort, --skip, --continue load this
if TYPE_CHECKING:
    from typing import Any

    from series.checkout import Checkout
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
        "remove what upstream already holds (checked hunk by hunk by merges): a patch "
        "it holds all of, or the part it holds of one (stops where it took that part in "
        "another form)",
        action="store_true",
    ),
    resume(
        "go on after resolving and staging the conflict",
        "drop the conflicting patch (series.toml records why) and go on; what "
        "you committed or changed at the stop is kept under a backup ref",
    ),
    ENVELOPE,
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
    as_json: bool = False,
) -> Exit:
    if action != "abort":
        # series.toml parsed first, before any step writes it, as the session did: only
        # --abort goes without the parse when its session knows the files (series.known)
        series.manifest  # noqa: B018
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
    # Each action imports only its own work: --abort loads none of the driver or its
    # engines, --continue and --skip none of the start's (fetch, evidence); --abort and
    # --skip start their git processes without GitPython.
    if action == "abort":
        # the git status of the stop's files starts first: it runs while the rest of
        # --abort (the checkout too) is imported and the state read
        from series.stack.stop_files import stop_files

        with stop_files(series.checkout_path(directory), series.branch) as files:
            checkout = series.checkout(directory)
            # the long-lived cat-file starts while the rest of --abort is imported
            checkout.repo.objects.warm()
            from series.stack.rebase_abort import abort_stopped

            abort_stopped(series, ui, checkout, files)
        if as_json:
            ui.json(_after(checkout, action, onto))
        return Exit.OK
    if action == "skip":
        # as --abort's: the git status of the stop's files starts first, and runs while the
        # checkout, the driver and its engines are imported and the state read
        from series.stack.stop_files import stop_files_seen

        with stop_files_seen(series.checkout_path(directory)) as early:
            checkout = series.checkout(directory)
            from series.stack.rebase_skip import resume_skip

            resume_skip(series, ui, checkout, early)
    elif onto is not None:
        checkout = series.checkout(directory)
        from series.stack.rebase import start

        start(series, ui, checkout, onto=onto, url=upstream_url, drop_merged=drop_merged)
    else:
        checkout = series.checkout(directory)
        assert action is not None
        from series.stack.rebase_resume import resume

        resume(series, ui, checkout, action)
    if as_json:
        ui.json(_after(checkout, action or "start", onto))
    return Exit.OK


def _after(checkout: Checkout, action: str, onto: str | None) -> dict[str, Any]:
    """Where the checkout stands once the rebase command is done (docs/rebase.md)."""
    from series.stack import rebase_state

    state = checkout.state()
    progress = rebase_state.load(checkout.repo) if checkout.exists() else None
    return {
        "action": action,
        "onto": onto,
        "in_progress": progress is not None,
        "checkout": str(checkout.path),
        "base": state.base if state else None,
        "tip": checkout.tip() if state else None,
        "applied": list(state.applied) if state else [],
    }

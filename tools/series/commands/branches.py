"""``series branches``: one branch per patch in the checkout, optionally pushed.

The work is in series.stack.branches; docs/branches.md is the manual.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import DIR, JSON, URL, Option
from series.errors import Exit

if TYPE_CHECKING:
    from series.project import Series
    from series.stack.branch_plan import Item, Outcome
    from series.ui import Ui

EPILOG = (
    "exit status: 0 done (or nothing to change); 2 bad input; 3 a patch does not apply "
    "(the branches before it were made); 4 refused: a branch series did not leave as it "
    "is, locally or on REMOTE (nothing changed; --force replaces it after a backup), or "
    "REMOTE lacks the upstream history the push needs; 1 REMOTE unreachable, or "
    "upstream's pinned commit cannot be fetched. Manual: docs/branches.md."
)
OPTIONS = (
    DIR,
    Option("--prefix", "put P before every branch name", default="", metavar="P"),
    Option("--alone", "each branch: the pin plus its patch only", action="store_true"),
    Option("--dry-run", "list what would change; change nothing", action="store_true"),
    Option(
        "--push",
        "push the branches too, each leased against what REMOTE had",
        type=URL,
        metavar="REMOTE",
    ),
    Option(
        "--upstream",
        "fetch upstream's pinned commit from this URL or clone (a checkout made from the "
        "sdist; default: upstream.repository)",
        type=URL,
        metavar="URL|PATH",
    ),
    Option(
        "--prune",
        "delete the branches series made for patches no longer in series.toml",
        action="store_true",
    ),
    Option(
        "--force",
        "replace branches someone else moved (the old commits are kept as backup refs)",
        action="store_true",
    ),
    JSON,
)


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    prefix: str = "",
    alone: bool = False,
    dry_run: bool = False,
    push: str | None = None,
    upstream: str | None = None,
    prune: bool = False,
    force: bool = False,
    as_json: bool = False,
) -> Exit:
    from series.stack.branch_plan import Options
    from series.stack.branches import branches
    from series.stack.branches import conflict as conflict_error

    options = Options(prefix, alone, dry_run, push, prune, force, upstream)
    checkout = series.checkout(directory)
    outcome = branches(series, ui, checkout, options)
    if as_json:
        ui.json(outcome.to_json())
    else:
        _show(ui, outcome)
    error = conflict_error(outcome, checkout)
    if error is not None:
        raise error
    return Exit.OK


def _show(ui: Ui, outcome: Outcome) -> None:
    from series.ui import Grid  # rich only for a terminal's boxed table

    remote = outcome.remote
    title = f"{len(outcome.items)} branches ({outcome.mode}) on {outcome.pin[:12]}"
    columns = ("branch", "patch", "local", *(["remote"] if remote else []), "PR base")
    table = Grid(title + (f", remote {remote}" if remote else ""), columns)
    for item in outcome.items:
        patch = item.patch or ("the pin" if item.position == 0 else "-")
        row = [item.branch, patch, _local(item, outcome.prune)]
        if remote:
            row.append(_remote(item))
        table.add_row(*row, item.base or "-")
    ui.table(table)
    changes = outcome.changes
    where = f" (and on {remote})" if remote else ""
    if not changes:
        ui.result(f"nothing to change: every branch is up to date{where}")
    elif outcome.dry_run:
        ui.result(f"dry run: {len(changes)} branch(es) would change{where}; nothing was changed")
    else:
        ui.result(f"changed {len(changes)} branch(es){where}")
    for ref in outcome.backups:
        ui.status(f"kept the commit that was replaced as {ref}")


def _local(item: Item, prune: bool) -> str:
    from series.stack.branch_plan import CREATE, DELETE, MOVE, SKIP

    old, new = (item.old or "")[:10], (item.new or "")[:10]
    if item.action == SKIP:
        return f"skipped: {item.why}"
    if item.action == CREATE:
        return f"create at {new}"
    if item.action == MOVE:
        return f"move {old} -> {new}" + (" (--force)" if item.forced else "")
    if item.action == DELETE:
        verb = "delete" if prune else "to delete (pass --prune)"
        return f"{verb} {old or '(gone locally)'}: {item.why.split(';')[0]}"
    return f"unchanged at {new}"


def _remote(item: Item) -> str:
    from series.stack.branch_plan import CREATE, DELETE, MOVE

    action, old, new = item.remote_action, (item.remote_old or "")[:10], (item.new or "")[:10]
    if action is None:
        return "-"
    if action == CREATE:
        return f"create at {new}"
    if action == MOVE:
        return f"move {old} -> {new}" + (" (--force)" if item.remote_forced else "")
    if action == DELETE:
        return f"delete {old}"
    return f"unchanged at {new}" if new else "absent"

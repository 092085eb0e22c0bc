"""``series branches``: one branch per patch in the checkout, optionally pushed.

The work is in series.stack.branches; docs/branches.md is the manual.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from series.errors import Exit
from series.project import Series
from series.stack.branch_plan import CREATE, DELETE, MOVE, SKIP, Item, Options, Outcome
from series.stack.branches import branches
from series.stack.branches import conflict as conflict_error
from series.ui import Ui


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    options: Options | None = None,
    as_json: bool = False,
) -> Exit:
    opts = options or Options()
    checkout = series.checkout(directory)
    outcome = branches(series, ui, checkout, opts)
    if as_json:
        ui.json(outcome.to_json())
    else:
        _show(ui, outcome)
    error = conflict_error(outcome, checkout)
    if error is not None:
        raise error
    return Exit.OK


def _show(ui: Ui, outcome: Outcome) -> None:
    remote = outcome.remote
    title = f"{len(outcome.items)} branches ({outcome.mode}) on {outcome.pin[:12]}"
    table = Table(title=title + (f", remote {remote}" if remote else ""))
    for column in ("branch", "patch", "local", *(["remote"] if remote else []), "PR base"):
        table.add_column(column, overflow="fold")
    for item in outcome.items:
        row = [item.branch, item.patch or "-", _local(item, outcome.prune)]
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

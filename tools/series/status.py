"""What ``series status`` says: the checkout, its state, a rebase in progress, drift.

It only reads (building the stack to compare it uses the memo in the
per-user cache). The keys are documented in docs/status.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from series.checkout import BACKUP_PREFIX, Checkout, CheckoutState
from series.errors import SeriesError
from series.stack import rebase_state

if TYPE_CHECKING:
    from series.project import Series


def describe(series: Series, checkout: Checkout) -> dict[str, Any]:
    """Where the checkout stands, for ``series status`` (docs/status.md has the keys)."""
    up = series.manifest.upstream
    sdist = f"{up.sdist.package}=={up.sdist.version}" if up.sdist else None
    report: dict[str, Any] = {
        "format": 1,
        "pin": {"ref": up.ref, "commit": up.commit, "source": up.source, "sdist": sdist},
        "checkout": None,
        "patches": [{"id": p.id, "applied": False} for p in series.manifest.patches],
        "unexported": [],
        "uncommitted": [],
        "drift": None,
        "interrupted_move": False,
        "rebase": None,
        "backups": [],
    }
    state = checkout.state() if checkout.exists() else None
    if state is None:
        report["next"] = "`series apply` makes the checkout"
        return report
    repo = checkout.repo
    head = repo.refs.symbolic_head()
    report["checkout"] = {
        "path": str(checkout.path),
        "branch": checkout.branch,
        "head": head or f"detached at {repo.refs.head()}",
        "tip": checkout.tip(),
        "base": state.base,
        "source": state.source,
    }
    applied = set(state.applied)
    for row in report["patches"]:
        row["applied"] = row["id"] in applied
    report["unexported"] = [repo.history.oneline(c) for c in checkout.unexported(state)]
    # A move of the files cut short (a kill, a full disk): what it changed is not the user's.
    move = repo.worktree.unfinished_move()
    cut = checkout.interrupted_move(state)  # killed after the refs moved, before the files
    target = move.argv[-1] if move is not None else checkout.tip() if cut is not None else None
    half = repo.worktree.half_moved(target) if target is not None else set()
    report["uncommitted"] = [
        path for path in repo.worktree.dirty(read_only=True) if path not in half
    ]
    report["drift"] = _drift(series, checkout, state)
    report["interrupted_move"] = move is not None or cut is not None
    report["backups"] = [
        {"ref": ref, "commit": commit}
        for ref, commit in sorted(repo.refs.under(BACKUP_PREFIX).items())
    ]
    rebase = rebase_state.load(repo)
    if rebase is not None:
        report["rebase"] = {
            "kind": rebase.kind,
            "stop": rebase.stop.kind if rebase.stop else None,
            "onto": rebase.onto,
            "label": rebase.onto_label,
            "steps": [
                {"id": pid, "status": status, "note": note, "action": action.kind}
                for (pid, status, note), action in zip(rebase.progress(), rebase.plan, strict=True)
            ],
            "stopped_at": rebase.stopped_at if rebase.stop else None,
            "files": list(rebase.stop.files) if rebase.stop else [],
            "next": rebase.next_step,
        }
        if rebase.stop is not None and rebase.stop.kind != "edit" and not report["uncommitted"]:
            sid = report["rebase"]["stopped_at"]
            report["rebase"]["next"] = (
                f"the checkout holds nothing of {sid} (no conflicts, no changes: a "
                "`series rebase --skip` was cut short, or the files were reset): "
                f"`series rebase --skip` drops {sid} (series.toml records it), "
                "`series rebase --abort` undoes the whole rebase"
            )
    report["next"] = _next(report)
    return report


def _drift(series: Series, checkout: Checkout, state: CheckoutState) -> dict[str, Any]:
    """Which patches differ between patches/ and the commits apply or export last wrote."""
    pin_moved = state.source == "git" and state.base != series.manifest.upstream.commit
    if not series.cache.objects.has(state.base):
        return {"known": False, "patches": [], "pin": pin_moved}
    applied = [p for p in series.manifest.patches if p.id in set(state.applied)]
    try:
        built = series.stack(state.base, applied)
    except SeriesError:
        return {"known": False, "patches": [], "pin": pin_moved}
    synced = checkout.repo.history.commits(state.base, state.synced) if state.synced else []
    ours = dict(zip(state.applied, synced, strict=False))
    differ, before_same = [], True
    for step in built.steps:
        mine = ours.get(step.patch.id)
        same = mine == step.commit
        # A patch whose parent differs has another commit id, though only what
        # came before it changed: it drifted when its own tree differs too.
        if not same and (
            before_same
            or mine is None
            or checkout.repo.objects.tree_of(mine) != series.cache.objects.tree_of(step.commit)
        ):
            differ.append(step.patch.id)
        before_same = same
    if built.failure is not None:
        differ.append(built.failure.patch.id)
    return {"known": True, "patches": differ, "pin": pin_moved}


def _next(report: dict[str, Any]) -> str:
    if report["rebase"] is not None:
        return str(report["rebase"]["next"])
    head = report["checkout"]["head"] if report["checkout"] else ""
    if head.startswith("detached"):
        return (
            "HEAD is detached: `series rebase --continue` finishes a rebase killed at its "
            f"very end; else `git switch {report['checkout']['branch']}`"
        )
    if report["interrupted_move"]:
        return "`series apply` finishes moving the files (an earlier run was interrupted)"
    if report["unexported"]:
        return "`series export` writes the unexported commits to patches/"
    drift = report["drift"]
    if drift and (drift["patches"] or drift["pin"]):
        return "`series apply` takes patches/ into the checkout (or `series export` the reverse)"
    if any(not p["applied"] for p in report["patches"]):
        return "`series apply` applies the rest of the series"
    return "nothing to do: the checkout and patches/ agree"

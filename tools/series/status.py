"""What ``series status`` says: the checkout, its state, a rebase in progress, drift.

It only reads (building the stack to compare it uses the memo in the
per-user cache). The keys are documented in docs/status.md.
A report answered from what series.status_memo kept imports nothing more:
the rebase state and the range-diff's classes are imported by the work
that needs them (docs/architecture.md, rule 12).
"""

from __future__ import annotations

from series import status_memo
from series.checkout import BACKUP_PREFIX, Checkout, CheckoutState
from series.errors import SeriesError
from series.git import leftovers
from series.git.inprogress import in_progress
from series.git.worktree import refuse_blocking
from series.plain import read_plain

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from series.project import Series
    from series.stack.rebase_plan import RebaseState
    from series.stack.stop_written import StagedOver


def describe(series: Series, checkout: Checkout) -> dict[str, Any]:
    """Where the checkout stands, for ``series status`` (docs/status.md has the keys).

    A quiet report is kept while nothing it depends on changed
    (series.status_memo); then only the uncommitted changes are asked of git.
    """
    refuse_blocking(leftovers.git_dir(checkout.path))  # before any git: status would wait
    digest = status_memo.key(series, checkout.path, checkout.branch)
    known = status_memo.recall(series, checkout.path, digest)
    if known is not None and leftovers.unfinished_move(checkout.path) is None:
        known["uncommitted"] = checkout.repo.worktree.dirty(read_only=True)
        known[GIT] = _git_in_progress(checkout)  # a marker file moves no ref, no index
        known["next"] = _next(known)
        return known
    report = _work_out(series, checkout)
    report[GIT] = _git_in_progress(checkout) if report["checkout"] is not None else None
    if report[GIT] is not None:
        report["next"] = _next(report)
    kept = {k: v for k, v in report.items() if k != GIT}  # asked again on every run
    if (
        digest is not None
        and report[GIT] is None
        and status_memo.key(series, checkout.path, checkout.branch) == digest
    ):
        status_memo.keep(series, checkout.path, digest, kept)
    return report


GIT = "git_in_progress"
REPLACE_PREFIX = "refs/replace/"


def _git_in_progress(checkout: Checkout) -> dict[str, str] | None:
    """A git command of the user's in the middle of its work in the checkout (its marker
    looked at, no git started: series.git.inprogress), which every writing command refuses."""
    git_dir = checkout.path.resolve() / ".git"
    found = in_progress(str(git_dir)) if git_dir.is_dir() else None
    if found is None:
        return None
    marker, command, end = found
    return {"command": command, "marker": str(git_dir / marker), "end": end}


def _work_out(series: Series, checkout: Checkout) -> dict[str, Any]:
    from series.stack import rebase_state

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
        "replaced": [],
        "grafted": [],
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
    move = leftovers.unfinished_move(checkout.path)
    cut = checkout.interrupted_move(state)  # killed after the refs moved, before the files
    target = move.argv[-1] if move is not None else checkout.tip() if cut is not None else None
    start = leftovers.move_start(move.argv) if move is not None else None
    half = repo.worktree.half_moved(target, start) if target is not None else set()
    rebase = rebase_state.load(repo)
    unwritten, over = _stop_not_written(checkout, rebase) if rebase is not None else (False, None)
    # (a path once: git lists one both staged and untracked, as a cut move leaves a path it
    # adds, the index still the move's start, and a file of the user's made there since)
    dirty = repo.worktree.dirty(read_only=True, staged=not unwritten)
    mine = [*dirty, *(over.staged if over is not None else ())]  # what was staged over it
    report["uncommitted"] = list(dict.fromkeys(path for path in mine if path not in half))
    report["drift"] = _drift(series, checkout, state)
    report["interrupted_move"] = move is not None or cut is not None
    listed = sorted(repo.refs.under(BACKUP_PREFIX, REPLACE_PREFIX).items())
    report["backups"] = [
        {"ref": ref, "commit": commit} for ref, commit in listed if ref.startswith(BACKUP_PREFIX)
    ]
    # What git shows in place of an object, which series does not read (series.git.run's
    # environment): named, as git log in the checkout shows the replacements.
    report["replaced"] = [
        {"object": ref.removeprefix(REPLACE_PREFIX), "by": by}
        for ref, by in listed
        if ref.startswith(REPLACE_PREFIX)
    ]
    report["grafted"] = _grafted(checkout)
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
            "written": None if rebase.stop is None else not unwritten,
            "next": rebase.next_step,
        }
        if unwritten:
            report["rebase"]["next"] = _not_written_next(rebase, checkout.path, over)
        elif rebase.stop is not None and rebase.stop.kind != "edit" and not report["uncommitted"]:
            # a stop saved but never written (its move refused: a file of the user's in
            # the way; or cut short) looks the same: --continue writes it, or says to skip
            sid, cmd = report["rebase"]["stopped_at"], rebase.command
            report["rebase"]["next"] = (
                f"the checkout holds nothing of {sid} (no conflicts, no changes): "
                f"`{cmd} --continue` writes its conflict where the stop was never written "
                "(a file of yours was in the way, or a run was cut short); where a "
                f"`{cmd} --skip` was cut short, or the files were reset, `{cmd} --skip` "
                f"drops {sid} (series.toml records it); `{cmd} --abort` undoes the whole "
                f"{rebase.kind}"
            )
    report["next"] = _next(report)
    return report


def _stop_not_written(checkout: Checkout, rebase: RebaseState) -> tuple[bool, StagedOver | None]:
    """Whether the rebase's (or edit's) stop was saved and its files never written: the
    move to it refused (a file of the user's in its way: series.stack.rebase_driver
    ``_stop_not_written``) or cut short; and what was staged over it since, if anything.
    HEAD is at the stop, and the index still holds the tree the move was to go from
    (``written_from``), which is not HEAD's: a stop written and then reset by the user
    leaves HEAD's tree there instead. Where ``written_from`` is HEAD's tree the two look
    the same: the next step says both ways on. An index changed since is told by git's
    record of the conflict's resolution in it and by the files the stop's write changes
    (series.stack.stop_written, as ``--continue`` tells it), wherever ``written_from`` is."""
    stop, repo = rebase.stop, checkout.repo
    if stop is None or repo.refs.head() != rebase.current:
        return False, None
    index = repo.worktree.index_tree()
    if index is None:
        return False, None
    if index == stop.written_from:
        return stop.written_from != repo.objects.tree_of(rebase.current), None
    from series.stack.stop_written import staged_over, told

    over = staged_over(repo, stop, index, rebase.current, told(repo, stop))
    return over is not None, over


def _not_written_next(rebase: RebaseState, where: Path, over: StagedOver | None) -> str:
    """The way on from a stop never written (:func:`_stop_not_written`); ``over``: what
    was staged over it since."""
    stop, sid, cmd, kind = rebase.stop, rebase.stopped_at, rebase.command, rebase.kind
    assert stop is not None
    if stop.kind == "edit":
        what, after = f"the files of {sid}", f"; change {sid} only once they are"
        skip = ""
    else:
        what = "the proposed remainder" if stop.proposal else "its conflict"
        after, skip = "", f"`{cmd} --skip` drops {sid}, "
    staged = "none of yours"
    if over is not None and over.beside:
        staged = (
            "none of yours but what you staged since ("
            + ", ".join(over.staged[:10])
            + "), which the stop does not write: it stays staged beside the conflict"
        )
    elif over is not None:
        from series.stack.stop_written import put_back

        staged = (
            "none of yours but what you staged since ("
            + ", ".join(over.staged[:10])
            + f"), which is no resolution: {put_back(where, stop)} first"
        )
    return (
        f"the {kind} is stopped at {sid}, but nothing of it is in the checkout: the move of "
        "the files there was refused (a file of yours in its way) or cut short, so they are "
        f"still those it moved from, and what git shows staged against HEAD (at the stop) is "
        f"{staged}; `{cmd} --continue` writes {what} (it names a file in its way, to "
        f"move out of it first){after}; or {skip}`{cmd} --abort` undoes the whole {kind}"
    )


def _grafted(checkout: Checkout) -> list[str]:
    """The commits ``info/grafts`` gives other parents in git's eyes (not in series',
    series.git.run's environment), read from the file: none where it cannot be read."""
    where = leftovers.git_dir(checkout.path)
    try:
        text = read_plain(str(where / "info" / "grafts")) if where is not None else b""
    except OSError:
        return []
    lines = text.decode("ascii", "replace").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]


def _drift(series: Series, checkout: Checkout, state: CheckoutState) -> dict[str, Any]:
    """Which patches differ between patches/ and the commits apply or export last wrote."""
    from series.stack.rangediff import CONTENT, classify_diffs

    pin_moved = state.source == "git" and state.base != series.manifest.upstream.commit
    if not series.cache.objects.has(state.base):
        why = f"the checkout's base {state.base[:12]} is not in the cache ({series.cache_dir})"
        how = (
            "`series check-conflicts --no-matrix` puts the pin in the cache (`series apply` "
            "if the checkout is not on the pin); then `series status` compares patches/ "
            "with the checkout"
        )
        return {"known": False, "patches": [], "pin": pin_moved, "why": why, "how": how}
    applied = [p for p in series.manifest.patches if p.id in set(state.applied)]
    try:
        built = series.stack(state.base, applied)
    except SeriesError as exc:
        why = f"patches/ could not be built on the checkout's base: {exc.message}"
        how = "`series check-conflicts` says which patch does not apply, and why"
        return {"known": False, "patches": [], "pin": pin_moved, "why": why, "how": how}
    synced = checkout.repo.history.commits(state.base, state.synced) if state.synced else []
    ours = dict(zip(state.applied, synced, strict=False))
    differ, before_same = [], True
    # A patch after a changed one has another commit id even when it did not change:
    # it drifted only when its own change (its diff, not its whole tree, which holds
    # the earlier patches' changes too) or its message differs.
    moved = [s for s in built.steps if ours.get(s.patch.id) not in (None, s.commit)]
    theirs = series.cache.diffs.commits([s.commit for s in moved])
    mine = checkout.repo.diffs.commits([ours[s.patch.id] for s in moved])
    for step in built.steps:
        commit = ours.get(step.patch.id)
        same = commit == step.commit
        if not same and (
            before_same
            or commit is None
            or classify_diffs(mine.get(commit, b""), theirs.get(step.commit, b"")) == CONTENT
            or checkout.repo.history.message(commit) != series.cache.history.message(step.commit)
        ):
            differ.append(step.patch.id)
        before_same = same
    if built.failure is not None:
        differ.append(built.failure.patch.id)
    return {"known": True, "patches": differ, "pin": pin_moved}


def _next(report: dict[str, Any]) -> str:
    git = report.get(GIT)
    if git is not None:
        then = f"; then {report['rebase']['next']}" if report["rebase"] is not None else ""
        return (
            f"a git {git['command']} is in progress in {report['checkout']['path']}: finish it "
            f"or abandon it ({git['end']}); series writes nothing there until then{then}"
        )
    if report["rebase"] is not None:
        return str(report["rebase"]["next"])
    head = report["checkout"]["head"] if report["checkout"] else ""
    if head.startswith("detached"):
        return (
            "HEAD is detached: `series rebase --continue` (`series edit --continue`) finishes "
            f"a rebase (an edit) killed at its very end; else `git switch "
            f"{report['checkout']['branch']}`"
        )
    if report["interrupted_move"]:
        return "`series apply` finishes moving the files (an earlier run was interrupted)"
    if report["unexported"]:
        return "`series export` writes the unexported commits to patches/"
    drift = report["drift"]
    if drift and not drift["known"]:
        return f"drift not checked: {drift['how']}"
    if drift and (drift["patches"] or drift["pin"]):
        return "`series apply` takes patches/ into the checkout (or `series export` the reverse)"
    if any(not p["applied"] for p in report["patches"]):
        return "`series apply` applies the rest of the series"
    return "nothing to do: the checkout and patches/ agree"

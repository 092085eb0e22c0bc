"""``series rebase --continue``, ``--skip`` and ``--abort``: a stopped rebase taken up again.

``--continue`` checks what the user staged at the stop (series.stack.
resolution_check), records it (series.merge.resolutions) and hands it to
the driver as the stop's resolution; ``--skip`` hands it the stop as
skipped; both then walk on (series.stack.rebase_driver). ``--abort`` puts
HEAD back on the branch, the checkout's files back to the branch,
series.toml and patches/ back from the snapshot, and deletes the rebase
state last: each step can be done again after a kill. Before ``--skip`` or
``--abort`` throws a stop away, what the user committed or changed there is
kept under a backup ref (``keep_stop``, series.backup). A rebase killed
after its last transaction, or before its first, is recognised and
finished (or its leftovers removed) here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series import backup, refnames
from series.checkout import Checkout, finish_cut_move, finish_interrupted_move
from series.errors import ConflictError, RefusedError, UsageError
from series.git import LogEntry
from series.merge import resolutions
from series.stack import export_files, resolution_check
from series.stack import rebase_state as rstate
from series.stack.edit_finish import edited, refuse_other_kind, stop_cut_short
from series.stack.rebase_driver import Run, conflict_error, drive, write_conflict
from series.stack.rebase_plan import RebaseState, Stop
from series.stack.rebase_step import Resolved, Skipped
from series.stack.snapshot import restore_project
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series


def resume(
    series: Series, ui: Ui, checkout: Checkout, action: str, *, kind: str = "rebase"
) -> None:
    """``--continue``, ``--skip`` or ``--abort`` of the ``kind`` (rebase, edit) in progress."""
    repo = checkout.repo
    st = rstate.load(repo) if checkout.exists() else None
    if st is not None:
        refuse_other_kind(checkout, st, kind)
    cut = finish_cut_move(checkout, ui)
    if st is None and checkout.exists() and (_finish_interrupted_end(checkout, ui, kind) or cut):
        ui.result(f"the {kind} had finished (interrupted while moving the files, now moved)")
        return
    if st is None and action == "abort" and checkout.exists() and _leftovers(checkout):
        ui.result(f"no {kind} was in progress; removed what an interrupted start had left")
        return
    if st is None:
        raise UsageError(
            f"no {kind} in progress in {checkout.path}",
            hint="start one with `series rebase --onto REV [--upstream URL|PATH]`"
            if kind == "rebase"
            else "start one with `series edit ID` (or --after, --drop, --move, --squash)",
        )
    if action == "abort":
        abort(series, ui, checkout, st)
        return
    editing = st.stop is not None and st.stop.kind == "edit"
    _check_moved(checkout, st, head_may_move=action == "skip" or editing)
    infos = repo.history.commit_infos(st.base, st.tip)
    run = Run(series, ui, checkout, {i.commit: i for i in infos}, lambda: _since_pin(run, st))
    if editing:
        if action == "skip":
            raise UsageError(
                f"nothing to skip: the edit is stopped for you to change {st.stopped_at}",
                hint=f"`{st.command} --continue` goes on (with or without changes); "
                f"`{st.command} --abort` puts everything back",
            )
        if not stop_cut_short(repo, ui, st, finished=cut):
            drive(run, st, edited(repo, checkout.path, st))
    elif action == "skip":
        _skip(run, st)
    elif cut and st.stop is not None and st.stop.proposal:
        # the stop was killed while writing the proposal: it is written now, but no one
        # has seen it; --continue would take it unread
        raise conflict_error(run, st)
    else:
        _continue(run, st)


def _since_pin(run: Run, st: RebaseState) -> list[LogEntry]:
    """The upstream commits since the pin (REV's that the real pin lacks), for a stop's report."""
    if st.kind == "edit":
        return []
    revs = [st.onto, f"^{st.base}"]
    real = run.series.manifest.upstream.commit
    if run.repo.objects.has(real) and run.repo.history.merge_base(real, st.onto):
        revs = [st.onto, f"^{real}"]
    return run.repo.history.log_files(revs, max_count=2000)


def _check_moved(checkout: Checkout, st: RebaseState, *, head_may_move: bool) -> None:
    """Refuse when what the rebase stands on moved; ``--skip`` keeps a moved HEAD aside."""
    repo, where = checkout.repo, checkout.path
    tip = checkout.tip()
    if tip != st.tip:
        raise RefusedError(
            f"refusing to go on: branch {checkout.branch} moved since the rebase began",
            why=f"it was {st.tip[:12]}, it is {(tip or 'gone')[:12]}",
            hint="`series rebase --abort` (it leaves the branch as it is now), then start again",
        )
    onto = repo.objects.rev(rstate.ONTO_REF)
    if onto != st.onto:
        raise RefusedError(
            "refusing to go on: the target of the rebase moved",
            why=f"{rstate.ONTO_REF} was {st.onto[:12]}, it is {(onto or 'gone')[:12]}",
            hint="`series rebase --abort`, then start again with --onto",
        )
    expected = st.current if st.stop is not None else st.tip
    head = repo.refs.head()
    if head != expected and not (head_may_move and st.stop is not None):
        raise RefusedError(
            f"refusing to go on: the checkout moved (HEAD is {(head or 'nothing')[:12]}, "
            f"the rebase left it at {expected[:12]})",
            why="commits made or checked out during a rebase stop are not part of it",
            hint="`series rebase --skip` or `--abort` (each keeps commits made here under "
            f"a backup ref and prints it); or keep them yourself (git -C {where} branch NAME), "
            f"then git -C {where} checkout --detach {expected[:12]} to go back",
        )


def _continue(run: Run, st: RebaseState) -> None:
    s = st.stop
    if s is None:
        drive(run, st)  # interrupted before its first stop, or while finishing
        return
    action = st.plan[s.index]
    resolved = _resolved_tree(run, st, s, action.id)
    info = run.infos[action.commit]
    path = resolutions.record(
        run.repo,
        run.series.root,
        patch=(action.id, info.message.splitlines()[0]),
        key=s.key,
        stages=s.stages,
        conflicted=s.conflict_tree,
        resolved=resolved,
        made_for=f"{st.onto_rev} ({st.onto[:12]})",
    )
    used = str(path.relative_to(run.series.root))
    run.ui.status(f"  {action.id:<4} resolution recorded in {used}")
    drive(run, st, Resolved(resolved, used))


def _resolved_tree(run: Run, st: RebaseState, s: Stop, sid: str) -> str:
    """The tree staged as the resolution; refuse what is not one (yet)."""
    repo, where = run.repo, run.checkout.path
    unmerged = repo.worktree.unmerged()
    index = None if unmerged else _finish_stop(run, st, s)  # raises when the stop was cut short
    if unmerged:
        raise ConflictError(
            f"{sid} still has unresolved conflicts",
            why="\n".join(unmerged),
            hint=f"edit them, `git -C {where} add` them, then `series rebase --continue`; "
            f"or `series rebase --skip` drops {sid}, `series rebase --abort` undoes the rebase",
        )
    if not repo.worktree.files_match_index():
        raise RefusedError(
            "refusing to go on: the checkout has changes that are not staged",
            why="\n".join(repo.worktree.dirty()[:10]),
            hint=f"`git -C {where} add` what belongs to the resolution "
            "(or `git checkout --` what does not), then `series rebase --continue`",
        )
    resolved = index  # the index's tree: refreshing its stat data above changed no content
    assert resolved is not None
    if resolved == repo.objects.tree_of(st.current):
        raise UsageError(
            f"nothing of {sid} is left after the resolution",
            hint="`series rebase --skip` drops it with a record; or stage its changes",
        )
    resolution_check.check(repo, resolved, s.stages, patch_id=sid, where=where)
    return resolved


def _finish_stop(run: Run, st: RebaseState, s: Stop) -> str | None:
    """A stop killed before its conflict was all written (files, then stages): write it, raise.
    Else the index's tree (None: it has unmerged entries).

    The index still holds the tree the conflict was written over (nothing
    written yet), or the conflicted files with their markers but no stages
    (killed between the two). Committing the latter as a resolution would
    put the markers into the series; a conflict added back unedited is the
    same tree, and is refused the same way.
    """
    repo, index = run.repo, run.repo.worktree.index_tree()
    if index == s.written_from and repo.worktree.files_match_index():
        run.ui.status(
            "the conflict had not been written into the checkout (interrupted); it is now"
        )
        write_conflict(repo, s)
        raise conflict_error(run, st)
    if index == s.conflict_tree:
        run.ui.status(
            "the conflicted files are staged with their markers (an interrupted stop, or "
            "`git add` of unedited files): their conflict stages are back in the index"
        )
        repo.worktree.stage_conflicts(s.stages)
        raise conflict_error(run, st)
    return index


def _skip(run: Run, st: RebaseState) -> None:
    s = st.stop
    if s is None:
        raise UsageError("nothing to skip: the rebase is not stopped at a conflict")
    keep_stop(run.checkout, st, f"{st.kind} --skip", run.ui, back_to=st.current)
    run.repo.worktree.checkout_tree(
        None, st.current
    )  # the conflict is thrown away, as git rebase --skip
    run.ui.status(f"  {st.plan[s.index].id:<4} skipped; series.toml will record why")
    drive(run, st, Skipped())


def abort(series: Series, ui: Ui, checkout: Checkout, st: RebaseState) -> None:
    repo = checkout.repo
    ours = repo.refs.under(refnames.ROOT)  # the rebase's refs and the stop's, in one listing
    gone = [rstate.STATE_REF, rstate.ONTO_REF, rstate.SAVED_REF, rstate.CURRENT_REF]
    gone += [name for name in ours if name.startswith(rstate.STOP_PREFIX)]
    keep_stop(checkout, st, f"{st.kind} --abort", ui, gone=gone)
    repo.refs.set_head(checkout.branch_ref)
    tip = checkout.tip()
    assert tip is not None
    repo.worktree.checkout_tree(None, tip)
    written = [series.patch_path(p) for p in series.manifest.patches]
    journal = export_files.interrupted(series.root)  # an edit's end (an export) cut short
    written += [series.root / str(p) for p in (journal or {}).get("created", [])]
    changed = restore_project(repo, series.root, st.saved, written)
    if journal is not None:
        export_files.finish(series.root)
    with repo.refs.transaction(f"series {st.kind}: abort") as txn:
        rstate.forget(repo, txn, keep_last=False, refs=ours)  # only series moves them
    moved = "" if tip == st.tip else f" (the branch had moved to {tip[:12]}; it stays there)"
    ui.result(
        f"{st.kind} aborted: {checkout.path} is back on {checkout.branch} at {tip[:12]}{moved}; "
        f"{changed} project file(s) restored"
    )


def keep_stop(
    checkout: Checkout,
    st: RebaseState,
    what: str,
    ui: Ui,
    *,
    gone: list[str] | None = None,
    back_to: str | None = None,
) -> None:
    """Before a stop is thrown away: keep what the user committed or changed there.

    One transaction, before anything moves: a backup ref (series.backup)
    of HEAD's commits that nothing else would reach once the refs of
    ``gone`` are deleted, and of the checkout's files when they are the
    user's (not what the rebase wrote); with ``back_to``, HEAD is detached
    back there in it. The rebase's own commits are not kept.
    """
    repo = checkout.repo
    known = [repo.objects.tree_of(c) for c in (st.current, st.tip)]
    if st.stop is not None:
        known += [st.stop.conflict_tree, st.stop.written_from]
        known += [st.stop.proposal] if st.stop.proposal else []
    changes = backup.uncommitted(repo, what, known)
    with repo.refs.transaction(f"series {what}: keep what the checkout held") as txn:
        kept = checkout.keep_lost(
            txn,
            what,
            own=[st.current, st.onto, st.base, st.tip],
            extra=[(backup.CHANGES, changes)],
            gone=gone or (),
        )
        head = repo.refs.head()
        if back_to is not None and head is not None and head != back_to:
            txn.detach_head(back_to, head)
    if kept is not None:
        where = checkout.path
        show = (
            f"; `git -C {where} diff {kept.ref}~ {kept.ref}` shows the uncommitted changes"
            if [c for _, c in kept.tips] == [changes]
            else ""
        )
        ui.status(kept.describe(where) + show)


def _finish_interrupted_end(checkout: Checkout, ui: Ui, kind: str = "rebase") -> bool:
    """A rebase or edit killed after its last transaction: put HEAD and the files on the branch.

    The transaction moved the branch and deleted the state; HEAD may still
    be detached where the last stop left it, and the files where the
    resolution (or the edit) left them. Only when nothing is unstaged or
    unmerged, the branch is what the command wrote (synced; after a rebase,
    which keeps ``last``), and HEAD's commits are kept (on the branch, or
    under the backup ref the end made of what the user committed).
    """
    repo = checkout.repo
    state = checkout.state()
    tip = checkout.tip()
    if (
        state is None
        or tip is None
        or (kind == "rebase" and repo.objects.rev(rstate.LAST_REF) is None)
    ):
        return finish_interrupted_move(checkout, ui)
    if checkout.on_branch() or state.synced != tip or repo.refs.symbolic_head() is not None:
        return finish_interrupted_move(checkout, ui)
    head = repo.refs.head()
    kept = [tip, *repo.refs.under(backup.PREFIX).values()]
    if kind == "edit" and (
        head is None or not any(repo.history.is_ancestor(head, k) for k in kept)
    ):
        return False
    if repo.worktree.unmerged() or not repo.worktree.files_match_index():
        return False
    repo.worktree.checkout_tree(None, tip)
    repo.refs.set_head(checkout.branch_ref)
    return True


def _leftovers(checkout: Checkout) -> bool:
    """Delete the refs a start killed before its first transaction left; any found?"""
    repo = checkout.repo
    left = {n: v for n, v in repo.refs.under(rstate.PREFIX).items() if n != rstate.LAST_REF}
    if left:
        with repo.refs.transaction(
            "series rebase: drop the leftovers of an interrupted start"
        ) as txn:
            for name, old in left.items():
                txn.delete(name, old)
    return bool(left)

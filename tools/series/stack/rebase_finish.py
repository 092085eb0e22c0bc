"""The end of ``series rebase`` and its ``--continue``, ``--skip`` and ``--abort``.

Finishing writes patches/ and series.toml first (each file atomically; the
new series.toml is made from the snapshot taken at the start, so doing it
twice gives the same bytes; the files of dropped patches go after it, so
series.toml never names a file that is gone), then moves the branch, the
checkout state and the rebase state in one transaction, then the files of
the checkout.
``--abort`` puts HEAD back on the branch, the checkout's files back to the
branch, series.toml and patches/ back from the snapshot, and deletes the
rebase state last: each step can be done again after a kill. Before
``--skip`` or ``--abort`` throws a stop away, what the user committed or
changed there is kept under a backup ref (``keep_stop``, series.backup).
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from series import backup
from series.checkout import Checkout, finish_cut_move, finish_interrupted_move
from series.errors import ConflictError, InternalError, RefusedError, UsageError
from series.files import confined, remove, write_atomic
from series.manifest import Dropped
from series.manifest_write import PatchUpdate, write_patches, write_pin
from series.stack import export_files, resolution_check, resolutions
from series.stack import rebase_state as rstate
from series.stack.edit_finish import finish_edit, refuse_other_kind, stop_cut_short, take_edit_stop
from series.stack.rangediff import classify_diffs
from series.stack.rebase import Context, conflict_error, replay, resume_target, write_conflict
from series.stack.snapshot import restore_project, saved_files
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series

REASONS = {
    "empty": "empty on the new base",
    "dropped": "already upstream (--drop-merged)",
    "skipped": "skipped at a conflict (series rebase --skip)",
}


def finish(ctx: Context) -> None:
    if ctx.state.kind == "edit":  # the pin stays: the end is an export
        finish_edit(ctx)
        return
    st, repo, series = ctx.state, ctx.repo, ctx.series
    old_text = saved_files(repo, st.saved)["series.toml"].decode("utf-8")
    old = {str(t["id"]): t for t in tomllib.loads(old_text)["patch"]}
    kept = [s for s in st.steps if s.status in ("picked", "resolved")]
    exported = repo.format_patches(st.onto, st.current) if kept else []
    data = {s.id: d for s, d in zip(kept, exported, strict=True)}
    commits = _verify(ctx, kept, data, old)
    dropped = _dropped(st, old)
    text = write_pin(old_text, ref=st.onto_rev, commit=st.onto, dropped=dropped)
    updates = [
        PatchUpdate(s.id, _subject(ctx, s.commit), old[s.id]["file"], old[s.id]["branch"])
        for s in kept
    ]
    text = write_patches(series.manifest, updates, text=text)
    for path in [series.manifest.path, *(series.root / old[s.id]["file"] for s in kept)]:
        confined(series.root, path)  # all checked before any is written
    for s in kept:
        _write(series.root, series.root / old[s.id]["file"], data[s.id])
    _write(series.root, series.manifest.path, text.encode("utf-8"))
    for d in dropped:  # after series.toml no longer names them: a kill leaves no dangling file
        if d.file:
            remove(series.root / d.file, within=series.root)
    # The new pin, in the cache: `series apply` needs no network for it now.
    failed = series.upstream(ctx.ui).keep(st.onto, source=ctx.checkout.path, ref=rstate.ONTO_REF)
    if failed is not None:
        ctx.ui.status(
            f"warning: could not keep the new pin in the cache ({failed}): "
            "`series apply` will fetch it (pass --upstream)"
        )
    tip = commits[-1] if commits else st.onto
    backed = ctx.checkout.write(
        "rebase",
        prior=ctx.checkout.state(),
        tip=(st.tip, tip),
        base=st.onto,
        applied=[s.id for s in kept],
        source="git",
        move_files=True,
        also=lambda txn: rstate.forget(repo, txn, keep_last=True),
        replaces_series=True,
    )
    if backed is not None:
        ctx.ui.status(backed.describe(ctx.checkout.path))
    _summary(ctx, dropped, len(kept))


def _dropped(st: rstate.RebaseState, old: dict[str, Any]) -> list[Dropped]:
    """The ``[[dropped]]`` records of the steps the rebase removed."""
    return [
        Dropped(
            id=s.id,
            title=str(old.get(s.id, {}).get("title", s.id)),
            reason=f"{REASONS[s.status]}: {s.note}" if s.note else REASONS[s.status],
            pr=old.get(s.id, {}).get("pr"),
            upstream_commit=s.upstream_commit,
            onto=st.onto,
            file=str(old.get(s.id, {}).get("file", "")),
        )
        for s in st.steps
        if s.status in REASONS
    ]


def _write(root: Path, path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data, within=root)


def _subject(ctx: Context, commit: str) -> str:
    return ctx.infos[commit].message.splitlines()[0]


def _verify(
    ctx: Context, kept: list[Any], data: dict[str, bytes], old: dict[str, Any]
) -> list[str]:
    """Re-apply the bytes about to be written: they must give the replayed tree."""
    repo, st = ctx.repo, ctx.state
    del old
    with tempfile.TemporaryDirectory(prefix="series-rebase-") as tmp:
        files = []
        for i, s in enumerate(kept):
            path = Path(tmp) / f"{i:04d}.patch"
            path.write_bytes(data[s.id])
            files.append(path)
        tree = repo.apply_all(repo.tree_of(st.onto), files) if files else repo.tree_of(st.onto)
    if tree != repo.tree_of(st.current):
        raise InternalError(
            "the re-exported patches would not reproduce the rebased commits",
            why="nothing was written; the rebase stays where it is",
        )
    return [str(s.new) for s in kept]


def _summary(ctx: Context, dropped: list[Dropped], kept: int) -> None:
    st, repo, ui = ctx.state, ctx.repo, ctx.ui
    table = Table(title=f"rebased onto {st.onto_label}")
    for column in ("#", "id", "result", "details"):
        table.add_column(column, overflow="fold")
    picked = [c for s in st.steps if s.status == "picked" for c in (s.commit, str(s.new))]
    diffs = repo.commit_diffs(picked)
    for n, s in enumerate(st.steps, 1):
        if s.status == "picked":
            result, detail = classify_diffs(diffs[s.commit], diffs[str(s.new)]), ""
        elif s.status == "resolved":
            result, detail = "resolved (recorded)", s.resolution
        else:
            result, detail = f"dropped ({REASONS[s.status]})", s.note
        table.add_row(str(n), s.id, result, detail)
    ui.table(table)
    ui.result(
        f"rebased {kept} patches onto {st.onto_label}; {len(dropped)} dropped "
        "(recorded in series.toml [[dropped]]); series.toml pins "
        f"{st.onto[:12]}; patches/ re-exported. `series range-diff` shows what changed."
    )


# -- --continue, --skip, --abort ------------------------------------------------------


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
    infos = repo.commit_infos(st.base, st.tip)
    ctx = Context(series, ui, checkout, st, {i.commit: i for i in infos})
    if st.kind == "rebase":
        resume_target(ctx)
    if editing:
        if action == "skip":
            raise UsageError(
                "nothing to skip: the edit is stopped for you to change "
                f"{st.steps[st.stop.index].id if st.stop else ''}",
                hint=f"`{st.command} --continue` goes on (with or without changes); "
                f"`{st.command} --abort` puts everything back",
            )
        if not stop_cut_short(ctx, finished=cut):
            take_edit_stop(ctx)
            replay(ctx)
    elif action == "skip":
        _skip(ctx)
    else:
        _continue(ctx)


def _check_moved(checkout: Checkout, st: rstate.RebaseState, *, head_may_move: bool) -> None:
    """Refuse when what the rebase stands on moved; ``--skip`` keeps a moved HEAD aside."""
    repo, where = checkout.repo, checkout.path
    tip = checkout.tip()
    if tip != st.tip:
        raise RefusedError(
            f"refusing to go on: branch {checkout.branch} moved since the rebase began",
            why=f"it was {st.tip[:12]}, it is {(tip or 'gone')[:12]}",
            hint="`series rebase --abort` (it leaves the branch as it is now), then start again",
        )
    onto = repo.rev(rstate.ONTO_REF)
    if onto != st.onto:
        raise RefusedError(
            "refusing to go on: the target of the rebase moved",
            why=f"{rstate.ONTO_REF} was {st.onto[:12]}, it is {(onto or 'gone')[:12]}",
            hint="`series rebase --abort`, then start again with --onto",
        )
    expected = st.current if st.stop is not None else st.tip
    head = repo.head()
    if head != expected and not (head_may_move and st.stop is not None):
        raise RefusedError(
            f"refusing to go on: the checkout moved (HEAD is {(head or 'nothing')[:12]}, "
            f"the rebase left it at {expected[:12]})",
            why="commits made or checked out during a rebase stop are not part of it",
            hint="`series rebase --skip` or `--abort` (each keeps commits made here under "
            f"a backup ref and prints it); or keep them yourself (git -C {where} branch NAME), "
            f"then git -C {where} checkout --detach {expected[:12]} to go back",
        )


def _continue(ctx: Context) -> None:
    st, repo = ctx.state, ctx.repo
    s = st.stop
    if s is None:
        replay(ctx)  # interrupted before its first stop, or while finishing
        return
    step = st.steps[s.index]
    resolved = _resolved_tree(ctx, s, step.id)
    info = ctx.infos[step.commit]
    path = resolutions.record(
        repo,
        ctx.series.root,
        patch=(step.id, info.message.splitlines()[0]),
        key=s.key,
        stages=s.stages,
        conflicted=s.conflict_tree,
        resolved=resolved,
        made_for=f"{st.onto_rev} ({st.onto[:12]})",
    )
    step.status, step.resolution = "resolved", str(path.relative_to(ctx.series.root))
    step.note = "resolved by hand, recorded"
    ctx.ui.status(f"  {step.id:<4} resolution recorded in {step.resolution}")
    step.new = repo.commit_tree(resolved, [st.current], info.message, info.author)
    st.current, st.stop = step.new, None
    replay(ctx)


def _resolved_tree(ctx: Context, s: rstate.Stop, sid: str) -> str:
    """The tree staged as the resolution; refuse what is not one (yet)."""
    repo, where = ctx.repo, ctx.checkout.path
    unmerged = repo.unmerged()
    if not unmerged:
        _finish_stop(ctx, s)  # raises when the stop itself was cut short
    if unmerged:
        raise ConflictError(
            f"{sid} still has unresolved conflicts",
            why="\n".join(unmerged),
            hint=f"edit them, `git -C {where} add` them, then `series rebase --continue`; "
            f"or `series rebase --skip` drops {sid}, `series rebase --abort` undoes the rebase",
        )
    if not repo.files_match_index():
        raise RefusedError(
            "refusing to go on: the checkout has changes that are not staged",
            why="\n".join(repo.dirty()[:10]),
            hint=f"`git -C {where} add` what belongs to the resolution "
            "(or `git checkout --` what does not), then `series rebase --continue`",
        )
    resolved = repo.index_tree()
    assert resolved is not None
    if resolved == repo.tree_of(ctx.state.current):
        raise UsageError(
            f"nothing of {sid} is left after the resolution",
            hint="`series rebase --skip` drops it with a record; or stage its changes",
        )
    resolution_check.check(repo, resolved, s.stages, patch_id=sid, where=where)
    return resolved


def _finish_stop(ctx: Context, s: rstate.Stop) -> None:
    """A stop killed before its conflict was all written (files, then stages): write it, raise.

    The index still holds the tree the conflict was written over (nothing
    written yet), or the conflicted files with their markers but no stages
    (killed between the two). Committing the latter as a resolution would
    put the markers into the series; a conflict added back unedited is the
    same tree, and is refused the same way.
    """
    repo, index = ctx.repo, ctx.repo.index_tree()
    if index == s.written_from and repo.files_match_index():
        ctx.ui.status(
            "the conflict had not been written into the checkout (interrupted); it is now"
        )
        write_conflict(repo, s)
        raise conflict_error(ctx)
    if index == s.conflict_tree:
        ctx.ui.status(
            "the conflicted files are staged with their markers (an interrupted stop, or "
            "`git add` of unedited files): their conflict stages are back in the index"
        )
        repo.stage_conflicts(s.stages)
        raise conflict_error(ctx)


def _skip(ctx: Context) -> None:
    st, repo = ctx.state, ctx.repo
    s = st.stop
    if s is None:
        raise UsageError("nothing to skip: the rebase is not stopped at a conflict")
    keep_stop(ctx.checkout, st, f"{st.kind} --skip", ctx.ui, back_to=st.current)
    step = st.steps[s.index]
    step.status = "skipped"
    step.upstream_commit = s.upstream[0].split()[0] if s.upstream else st.onto
    step.note = f"conflicts with upstream in {', '.join(s.files)}"
    repo.checkout_tree(None, st.current)  # the conflict is thrown away, as git rebase --skip
    st.stop = None
    ctx.ui.status(f"  {step.id:<4} skipped; series.toml will record why")
    replay(ctx)


def abort(series: Series, ui: Ui, checkout: Checkout, st: rstate.RebaseState) -> None:
    repo = checkout.repo
    gone = [rstate.STATE_REF, rstate.ONTO_REF, rstate.SAVED_REF, rstate.CURRENT_REF]
    gone += list(repo.refs(rstate.STOP_PREFIX))
    keep_stop(checkout, st, f"{st.kind} --abort", ui, gone=gone)
    repo.set_head(checkout.branch_ref)
    tip = checkout.tip()
    assert tip is not None
    repo.checkout_tree(None, tip)
    written = [series.patch_path(p) for p in series.manifest.patches]
    journal = export_files.interrupted(series.root)  # an edit's end cut short
    written += [series.root / str(p) for p in (journal or {}).get("created", [])]
    changed = restore_project(repo, series.root, st.saved, written)
    if journal is not None:
        export_files.finish(series.root)
    with repo.transaction(f"series {st.kind}: abort") as txn:
        rstate.forget(repo, txn, keep_last=False)
    moved = "" if tip == st.tip else f" (the branch had moved to {tip[:12]}; it stays there)"
    ui.result(
        f"{st.kind} aborted: {checkout.path} is back on {checkout.branch} at {tip[:12]}{moved}; "
        f"{changed} project file(s) restored"
    )


def keep_stop(
    checkout: Checkout,
    st: rstate.RebaseState,
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
    known = [repo.tree_of(c) for c in (st.current, st.tip)]
    if st.stop is not None:
        known += [st.stop.conflict_tree, st.stop.written_from]
    changes = backup.uncommitted(repo, what, known)
    with repo.transaction(f"series {what}: keep what the checkout held") as txn:
        kept = checkout.keep_lost(
            txn,
            what,
            own=[st.current, st.onto, st.base, st.tip],
            extra=[(backup.CHANGES, changes)],
            gone=gone or (),
        )
        head = repo.head()
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
    if state is None or tip is None or (kind == "rebase" and repo.rev(rstate.LAST_REF) is None):
        return finish_interrupted_move(checkout, ui)
    if checkout.on_branch() or state.synced != tip or repo.symbolic_head() is not None:
        return finish_interrupted_move(checkout, ui)
    head = repo.head()
    kept = [tip, *repo.refs(backup.PREFIX).values()]
    if kind == "edit" and (head is None or not any(repo.is_ancestor(head, k) for k in kept)):
        return False
    if repo.unmerged() or not repo.files_match_index():
        return False
    repo.checkout_tree(None, tip)
    repo.set_head(checkout.branch_ref)
    return True


def _leftovers(checkout: Checkout) -> bool:
    """Delete the refs a start killed before its first transaction left; any found?"""
    repo = checkout.repo
    left = {n: v for n, v in repo.refs(rstate.PREFIX).items() if n != rstate.LAST_REF}
    if left:
        with repo.transaction("series rebase: drop the leftovers of an interrupted start") as txn:
            for name, old in left.items():
                txn.delete(name, old)
    return bool(left)

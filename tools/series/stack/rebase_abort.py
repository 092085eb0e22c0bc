"""``--abort`` of a stopped rebase or edit, and what every resume checks first.

``--abort`` puts HEAD back on the branch, the checkout's files back to the
branch, series.toml and patches/ back from the snapshot, and deletes the
rebase state last: each step can be done again after a kill. Before
``--skip`` or ``--abort`` throws a stop away, what the user committed or
changed there is kept under a backup ref (``keep_stop``, series.backup).
A rebase killed after its last transaction, or before its first, is
recognised and finished (or its leftovers removed) by :func:`prepare`.

This module imports nothing of the driver (series.stack.rebase_driver)
and its engines: ``series rebase --abort`` loads only what it uses;
``--continue`` and ``--skip`` are series.stack.rebase_resume's.
"""

from __future__ import annotations

from series import backup, refnames
from series.checkout import (
    Checkout,
    finish_cut_move,
    finish_interrupted_move,
    head_label,
    refuse_git_in_progress,
)
from series.errors import RefusedError, UsageError
from series.stack import export_files
from series.stack import rebase_state as rstate
from series.stack.rebase_plan import RebaseState
from series.stack.stop_files import stop_files
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported (series rebase --abort)
if TYPE_CHECKING:
    from pathlib import Path

    from series.git.run import Started
    from series.project import Series


def prepare(
    root: Path, checkout: Checkout, ui: Ui, action: str, kind: str = "rebase"
) -> tuple[RebaseState, bool] | None:
    """What ``--continue``, ``--skip`` or ``--abort`` of ``kind`` go on from.

    The state in progress, and whether a cut move of the files was just
    finished; None when there is nothing left to do (a rebase killed after
    its end, or an ``--abort`` of a start killed before its first
    transaction: both finished here, and said).

    An edit's end killed after its transaction and before it removed its export's
    journal (in the project at ``root``: series.stack.export_files.edit_end_cut_short)
    is finished by the edit's resumes, the journal last, as the end removes it; a
    rebase's resume refuses it, naming ``series edit --continue``, before anything moves.
    """
    repo = checkout.repo
    if checkout.exists():  # a git merge (etc.) of the user's left at the stop: end it first
        refuse_git_in_progress(checkout, f"{kind} --{action}", has_force=False)
    st = rstate.load(repo) if checkout.exists() else None
    if st is not None:
        refuse_other_kind(checkout, st, kind)
    journal = export_files.interrupted(root) if st is None and checkout.exists() else None
    end_cut = journal is not None and export_files.edit_end_cut_short(journal, checkout.tip())
    if end_cut and kind != "edit":
        raise export_files.edit_end_refusal(f"{kind} --{action}")
    cut = finish_cut_move(checkout, ui)
    if st is None and checkout.exists() and (_finish_interrupted_end(checkout, ui, kind) or cut):
        if end_cut:  # after HEAD and the files: the journal goes last, as at the end
            export_files.finish(root)
        ui.result(f"the {kind} had finished (interrupted while moving the files, now moved)")
        return None
    if end_cut:  # HEAD and the files had followed (only the journal was left), or not
        if not checkout.on_branch():  # HEAD moved since (a commit of the user's on it)
            raise _end_left_behind(checkout)
        export_files.finish(root)
        ui.result(f"the {kind} had finished (interrupted before removing its export's journal)")
        return None
    if st is None and action == "abort" and checkout.exists() and _leftovers(checkout):
        ui.result(f"no {kind} was in progress; removed what an interrupted start had left")
        return None
    if st is None:
        raise UsageError(
            f"no {kind} in progress in {checkout.path}",
            hint="start one with `series rebase --onto REV [--upstream URL|PATH]`"
            if kind == "rebase"
            else "start one with `series edit ID` (or --after, --drop, --move, --squash)",
        )
    return st, cut


def resume_abort(series: Series, ui: Ui, checkout: Checkout, kind: str = "rebase") -> None:
    """``--abort`` of the ``kind`` (rebase, edit) in progress."""
    with stop_files(checkout.path, checkout.branch) as files:
        abort_stopped(series, ui, checkout, files, kind)


def abort_stopped(
    series: Series, ui: Ui, checkout: Checkout, files: Started | None, kind: str = "rebase"
) -> None:
    """:func:`resume_abort` within series.stack.stop_files ``stop_files`` (``files``: the
    git status of what the user changed at the stop, started already: it runs while the
    state is read; asked again when prepare finished a cut move, which changes them)."""
    found = prepare(series.root, checkout, ui, "abort", kind)
    if found is not None:
        abort(series, ui, checkout, found[0], None if found[1] else files)


def refuse_other_kind(checkout: Checkout, st: RebaseState, kind: str) -> None:
    """``series rebase --continue`` on an edit (or the reverse): name the right command."""
    if st.kind != kind:
        raise RefusedError(
            f"refusing to {kind}: a `{st.command}` is in progress in {checkout.path}",
            why="one sequencer state per checkout: it goes on with the command that began it",
            hint=f"`{st.command} --continue`, `--skip` or `--abort`; `series status` says "
            "where it stands",
        )


def abort(
    series: Series, ui: Ui, checkout: Checkout, st: RebaseState, files: Started | None = None
) -> None:
    """Put everything back (the module's docstring). ``files``: the ``git status`` of
    keep_stop, started already (series.git.worktree ``start_changed``)."""
    repo = checkout.repo
    listed = repo.refs.under_read(repo.git_dir, "refs/")  # the rebase's, the stop's, and others
    ours = {name: old for name, old in listed.items() if name.startswith(refnames.ROOT)}
    gone = [rstate.STATE_REF, rstate.ONTO_REF, rstate.SAVED_REF, rstate.CURRENT_REF]
    gone += [name for name in ours if name.startswith(rstate.STOP_PREFIX)]
    at = repo.refs.head_and_ref_read(repo.git_dir, listed)  # from HEAD's file: no process
    kind = f"{st.kind} --abort"
    held = keep_stop(checkout, st, kind, ui, gone=gone, listed=listed, at=at, files=files)
    tip = checkout.tip()
    assert tip is not None
    # git moves the files (with a worker per core when a core is idle: the move is the
    # abort's longest step, mostly the kernel's work on each file) while series points
    # HEAD at the branch and puts the project files back: neither touches what the other
    # writes, and each is done again by a run after a kill (the move, cut short, is
    # finished first). The state's deletion is handed to an update-ref started meanwhile,
    # and written to it only once the move is done: the state goes last, and a kill
    # before leaves it.
    moving = repo.worktree.start_reset(tip, kept=True, held=held, parallel=True)
    txn = repo.refs.begin(f"series {st.kind}: abort")
    try:
        rstate.forget(repo, txn, keep_last=False, refs=ours)  # only series moves them
        repo.refs.set_head(checkout.branch_ref)
        txn.start()
        written = [series.root / file for _, file in series.named()]  # no parse when known
        journal = export_files.interrupted(series.root)  # an edit's end (an export) cut short
        written += [series.root / str(p) for p in (journal or {}).get("created", [])]
        # any file that differs is kept first: the user's edits during the rebase (or
        # what its end, cut short, had written: it cannot be told from them by its bytes)
        what = f"{st.kind}-abort"
        from series.stack.snapshot import restore_project  # imported as the files move

        changed, copies = restore_project(repo, series.root, st.saved, written, what)
        repo.objects.warm(rest=True)  # cat-file ends while the files move: nothing more
        if journal is not None:
            export_files.finish(series.root)
        moving.wait()
    except BaseException:
        txn.abandon()
        moving.abandon()
        raise
    txn.commit()
    moved = "" if tip == st.tip else f" (the branch had moved to {tip[:12]}; it stays there)"
    ui.result(
        f"{st.kind} aborted: {checkout.path} is back on {checkout.branch} at {tip[:12]}{moved}; "
        f"{changed} project file(s) restored"
        + (f"; the files it replaced are kept in {copies}" if copies else "")
    )


def keep_stop(
    checkout: Checkout,
    st: RebaseState,
    what: str,
    ui: Ui,
    *,
    gone: list[str] | None = None,
    back_to: str | None = None,
    listed: dict[str, str] | None = None,
    at: tuple[str | None, str | None] | None = None,
    files: Started | None = None,
) -> list[str]:
    """Before a stop is thrown away: keep what the user committed or changed there; the
    trees (and snapshot commits) whose bytes the checkout's files hold now, each file
    one of them or the index's (the move after it records them: series.git.leftovers
    ``holding``).

    One transaction, before anything moves: a backup ref (series.backup)
    of HEAD's commits that nothing else would reach once the refs of
    ``gone`` are deleted, and of the checkout's files when they are the
    user's (not what the rebase wrote); with ``back_to``, HEAD is detached
    back there in it. The rebase's own commits are not kept. ``listed``:
    every ref under ``refs/``, read already in this run; ``at``: HEAD's
    commit and branch (``Refs.head_and_ref``), read already in this run;
    ``files``: the ``git status`` of the files, started already in this run.

    HEAD is read once: the snapshot of the files is made on it, the backup
    looks at it, and the transaction detaches HEAD only if it is still
    there (compare-and-swap), so a HEAD moved meanwhile fails the whole
    transaction rather than being kept from an older reading.
    """
    repo = checkout.repo
    head, on = repo.refs.head_and_ref() if at is None else at
    known = []  # the stop's own trees first: the files at a stop are most often those
    if st.stop is not None:
        known += [st.stop.conflict_tree, st.stop.written_from]
        known += [st.stop.proposal] if st.stop.proposal else []
    known += [repo.objects.tree_of(c) for c in (st.current, st.tip)]
    changes = backup.uncommitted(repo, what, known, head=head, started=files, on=st.current)
    with repo.refs.transaction(f"series {what}: keep what the checkout held") as txn:
        kept = checkout.keep_lost(
            txn,
            what,
            own=[st.current, st.onto, st.base, st.tip],
            extra=[(backup.CHANGES, c) for c in changes],
            gone=gone or (),
            head=head,
            listed=listed,
            label=head_label(on),
        )
        if back_to is not None and head is not None and head != back_to:
            txn.detach_head(back_to, head)
    if kept is not None:
        where = checkout.path
        show = (
            f"; `git -C {where} diff {kept.ref}~ {kept.ref}` shows the uncommitted changes"
            if [c for _, c in kept.tips] == list(changes[:1])
            else ""
        )
        if show and changes[1:]:
            show += f", `git -C {where} diff {kept.ref}~ {kept.ref}^2` what was staged apart"
        ui.status(kept.describe(where) + show)
    return [tree for tree in known if tree] + list(changes)


def _finish_interrupted_end(checkout: Checkout, ui: Ui, kind: str = "rebase") -> bool:
    """A rebase or edit killed after its last transaction: put HEAD and the files on the branch.

    The transaction moved the branch and deleted the state; HEAD may still
    be detached where the last stop left it, and the files where the
    resolution (or the edit) left them. Only when the branch is what the
    command wrote (synced; after a rebase, which keeps ``last``), and HEAD's
    commits are kept (on the branch, or under the backup ref the end made of
    what the user committed); refused where a file differs from the index or
    an entry is unmerged since: the move is a ``read-tree --reset``, which
    writes over them (saying "no rebase in progress" there, as before, named
    no way to finish it).
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
        where, branch = checkout.path, checkout.branch
        raise RefusedError(
            f"refusing to finish the end of the {kind} in {where}: files changed since "
            "it was cut short",
            why=f"its last step moved branch {branch} (the {kind} is over); the files are "
            "still the stop's, and these changed since (moving them would write over "
            "them):\n" + "\n".join(repo.worktree.dirty()[:10]),
            hint=f"put them away (`git -C {where} stash`), then `series {kind} --continue` "
            f"moves the files to {branch}; `git -C {where} stash pop` brings them back",
        )
    repo.worktree.checkout_tree(None, tip)
    repo.refs.set_head(checkout.branch_ref)
    return True


def _end_left_behind(checkout: Checkout) -> RefusedError:
    """An edit's end cut short after its transaction, HEAD since moved where the end does
    not follow it (commits of the user's on the detached HEAD, another branch)."""
    where, branch, repo = checkout.path, checkout.branch, checkout.repo
    ref = repo.refs.symbolic_head()
    head = f"on {ref.removeprefix('refs/heads/')}" if ref else "detached"
    at = repo.refs.head()
    return RefusedError(
        f"refusing to finish the end of the edit in {where}: HEAD moved since it was cut short",
        why=f"its last step moved branch {branch} and wrote patches/ and series.toml (the "
        f"edit is over); HEAD is {head} at {(at or '?')[:12]}: the end moves HEAD to "
        f"{branch} only from a detached HEAD whose commits {branch} or a backup ref keeps",
        hint=f"keep what is on HEAD (`git -C {where} branch NAME`), then `git -C {where} "
        f"switch {branch}` and `series edit --continue`, which ends the edit",
    )


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

"""The end of ``series edit``, and what the user made at an edit stop.

The end is an export (series.stack.export.export_tip) of the series the
sequencer made: patches/ and series.toml are written (backed up,
journalled, all or nothing), then the branch, the checkout state and the
deletion of the sequencer's state move in one transaction, and the files
follow. A kill before that transaction leaves the edit in progress and
the export's journal: ``--continue`` undoes the journal's writes and does
the end again (the commits are the same), ``--abort`` restores the
snapshot. A kill after it, before the journal is removed, leaves the edit
over and every file written: the resumes finish HEAD, the files and then
the journal (series.stack.rebase_abort ``prepare``); other commands refuse,
naming ``series edit --continue`` (series.stack.export_files
``edit_end_cut_short``).

At an edit stop, ``--continue`` takes what the user made: the commits from
the edited patch's parent to HEAD (series.stack.rebase_step.Edited), after
refusing what cannot be taken (uncommitted changes, a HEAD that left the
series, merges, fixups).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.builder.message import series_id
from series.checkout import Checkout
from series.errors import RefusedError
from series.git import Repo
from series.manifest import load
from series.stack import export_files
from series.stack import rebase_state as rstate
from series.stack.edit_plan import FIXUP_PREFIXES
from series.stack.export import export_tip
from series.stack.rebase_plan import RebaseState
from series.stack.rebase_step import Edited
from series.stack.stop_written import mark_written, refuse_staged_over
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series


def finish_edit(series: Series, ui: Ui, checkout: Checkout, st: RebaseState) -> None:
    """Export the edited series and end the edit, in export's transaction.

    A file of the user's where the edited series writes one (ignored, a FIFO: any other
    untracked file was refused at the stop) is refused before anything is written, as at
    a rebase's end (``Checkout.check_move``): the move after the transaction refused it
    only once patches/, series.toml and the refs were the edited series' and the edit's
    state was gone, the export's journal left behind."""
    # the edited series' tree (export changes no tree)
    checkout.check_move(st.current, then=f"`{st.command} --continue` ends the edit")
    repo = checkout.repo
    journal = export_files.interrupted(series.root)
    if journal is not None:  # an end killed after writing files: start it again
        export_files.undo_interrupted(series.root, journal)
        series.manifest = load(series.manifest.path, missing_ok=True)
    export_tip(
        series,
        ui,
        checkout,
        checkout.require(),
        st.current,
        branch=st.tip,
        verb="edit",
        also=lambda txn: rstate.forget(repo, txn, keep_last=False),
    )
    shown = [
        f"{a.id or 'new'}" + ("" if o.status == "picked" else f" {o.status}")
        for a, o in st.walked()
    ]
    ui.status("edit: " + ", ".join(shown))


def stop_cut_short(repo: Repo, ui: Ui, st: RebaseState, *, finished: bool) -> bool:
    """An edit stop killed before the files were moved to it: move them, say so.

    ``finished``: a move of the files cut short was just finished (git's
    leftovers, series.checkout.finish_cut_move): while an edit stop is in
    progress, the only move is the one to the stop, so the stop is reached
    now; the user has not seen it yet, so this is not yet a --continue.
    """
    s = st.stop
    assert s is not None
    target = repo.objects.tree_of(st.current)
    if repo.refs.head() != st.current or target == s.written_from:
        return False
    kept = ""
    if not finished:
        index = repo.worktree.index_tree()
        if index != s.written_from and index is not None:
            refuse_staged_over(repo, st, index, repo.path)  # staged over it since
        if index != s.written_from:
            return False
        if not repo.worktree.files_match_index():
            kept = _changed_over(repo, st, target)
        repo.worktree.checkout_tree(s.written_from, target)
        mark_written(repo, st)
    elif repo.worktree.index_tree() != target:
        return False
    ui.result(
        f"edit: stopped at {st.stopped_at} (the files had not followed: now moved{kept}); "
        f"change it, then `{st.command} --continue`"
    )
    return True


def _changed_over(repo: Repo, st: RebaseState, target: str) -> str:
    """At an edit stop never written (the index the tree it was to be written over), the
    files the user changed since: none where the move to the stop writes (refused: they
    were made over the files from before the stop, and committing them into the patch,
    as the uncommitted changes' refusal says to, would fold the later patches into it),
    else kept as they are by the two-tree move; what the result says of them."""
    s = st.stop
    assert s is not None
    changed = repo.worktree.dirty(staged=False)
    writes = set(repo.diffs.tree_changes(s.written_from, target))
    over = sorted(p for p in changed if p in writes)
    if over:
        cmd, sid, where = st.command, st.stopped_at, repo.path
        raise RefusedError(
            f"refusing to go on: the stop at {sid} was never written into {where}, and you "
            "changed files it writes since",
            why="the files are still those from before the stop (HEAD is at "
            f"{sid}'s commit); changed since: " + ", ".join(over[:10]),
            hint=f"`{cmd} --abort` puts everything back and keeps your changes under a backup "
            f"ref (it names it); or copy them aside, `git -C {where} checkout -- "
            + " ".join(over[:10])
            + f"`, then `{cmd} --continue` moves the files to {sid}",
        )
    return "; your changes kept as they are: " + ", ".join(changed[:10])


def edited(repo: Repo, where: object, st: RebaseState) -> Edited:
    """The commits made at the edit stop, as the sequencer's event; refuse what is not."""
    cmd, sid = st.command, st.stopped_at
    dirty = repo.worktree.dirty()
    if dirty:
        raise RefusedError(
            f"refusing to go on: {where} has changes that are not committed",
            why="\n".join(dirty[:10]),
            hint=f"commit them into {sid} (`git -C {where} commit --amend -a`) or as a new "
            f"patch (`git commit`), or put them away (`git -C {where} stash`); then "
            f"`{cmd} --continue`",
        )
    parent = repo.objects.rev(f"{st.current}^")
    head = repo.refs.head()
    assert parent is not None
    on = repo.refs.symbolic_head()
    if on is not None:
        raise RefusedError(
            f"refusing to go on: HEAD in {where} is on {on.removeprefix('refs/heads/')}, "
            f"not at the stop",
            why="the edit takes the commits made on the detached HEAD it stopped at",
            hint=f"git -C {where} checkout --detach {st.current[:12]} to go back to the stop "
            f"(your commits there are kept by `{cmd} --abort`)",
        )
    if (
        head is None
        or not repo.history.is_ancestor(parent, head)
        or repo.history.merges(parent, head)
    ):
        raise RefusedError(
            f"refusing to go on: HEAD in {where} no longer stands on the patches before {sid}",
            why=f"HEAD is {(head or 'nothing')[:12]}; the edit needs a straight line of "
            f"commits on {parent[:12]}",
            hint=f"git -C {where} checkout --detach {st.current[:12]} to go back to the stop, "
            f"or `{cmd} --abort` (it keeps your commits under a backup ref)",
        )
    made = repo.history.commits(parent, head)
    messages = {c: repo.history.message(c) for c in made}
    fixups = [c for c in made if messages[c].startswith(FIXUP_PREFIXES)]
    if fixups:
        raise RefusedError(
            "refusing to go on: a fixup commit at the stop",
            why="\n".join(repo.history.oneline(c) for c in fixups),
            hint=f"squash it into {sid} with `git -C {where} commit --amend`, then "
            f"`{cmd} --continue`",
        )
    commits = tuple((c, series_id(messages[c]) or "", repo.objects.tree_of(c)) for c in made)
    return Edited(commits, head)

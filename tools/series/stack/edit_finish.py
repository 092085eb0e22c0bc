"""The end of ``series edit``, and going on from an edit stop.

The end is an export (series.stack.export.export_tip) of the series the
sequencer made: patches/ and series.toml are written (backed up,
journalled, all or nothing), then the branch, the checkout state and the
deletion of the sequencer's state move in one transaction, and the files
follow. A kill before that transaction leaves the edit in progress and
the export's journal: ``--continue`` undoes the journal's writes and does
the end again (the commits are the same), ``--abort`` restores the
snapshot.

At an edit stop, ``--continue`` takes what the user made: the commits from
the edited patch's parent to HEAD replace the patch (the one carrying its
``Series-Id`` stays it; every other commit is a new patch at that place),
and the sequencer replays the patches after it onto HEAD.
"""

from __future__ import annotations

from series.builder.message import series_id
from series.checkout import Checkout
from series.errors import RefusedError
from series.manifest import load
from series.stack import export_files
from series.stack import rebase_state as rstate
from series.stack.edit_plan import FIXUP_PREFIXES
from series.stack.export import export_tip
from series.stack.rebase import Context
from series.stack.rebase_state import RebaseState, StepState


def finish_edit(ctx: Context) -> None:
    """Export the edited series and end the edit, in export's transaction."""
    st, series, repo = ctx.state, ctx.series, ctx.repo
    journal = export_files.interrupted(series.root)
    if journal is not None:  # an end killed after writing files: start it again
        export_files.undo_interrupted(series.root, journal)
        series.manifest = load(series.manifest.path, missing_ok=True)
    state = ctx.checkout.require()
    export_tip(
        series,
        ctx.ui,
        ctx.checkout,
        state,
        st.current,
        branch=st.tip,
        verb="edit",
        also=lambda txn: rstate.forget(repo, txn, keep_last=False),
    )
    _summary(ctx)


def _summary(ctx: Context) -> None:
    rows = []
    for s in ctx.state.steps:
        what = {"picked": "", "resolved": " (conflict resolved)", "pending": ""}.get(s.status)
        rows.append(f"{s.id or 'new'}{what}" if what is not None else f"{s.id} {s.status}")
    ctx.ui.status("edit: " + ", ".join(rows))


def stop_cut_short(ctx: Context, *, finished: bool) -> bool:
    """An edit stop killed before the files were moved to it: move them, say so.

    ``finished``: a move of the files cut short was just finished (git's
    leftovers, series.checkout.finish_cut_move): while an edit stop is in
    progress, the only move is the one to the stop, so the stop is reached
    now; the user has not seen it yet, so this is not yet a --continue.
    """
    st, repo = ctx.state, ctx.repo
    s = st.stop
    assert s is not None
    target = repo.tree_of(st.current)
    if repo.head() != st.current or target == s.written_from:
        return False
    if not finished:
        if repo.index_tree() != s.written_from or not repo.files_match_index():
            return False
        repo.checkout_tree(s.written_from, target)
    elif repo.index_tree() != target:
        return False
    ctx.ui.result(
        f"edit: stopped at {st.steps[s.index].id} (the files had not followed: now moved); "
        f"change it, then `{st.command} --continue`"
    )
    return True


def take_edit_stop(ctx: Context) -> None:
    """The commits made at the stop replace the edited patch; the rest is replayed after."""
    st, repo, where = ctx.state, ctx.repo, ctx.checkout.path
    s = st.stop
    assert s is not None and s.kind == "edit"
    step = st.steps[s.index]
    dirty = repo.dirty()
    if dirty:
        raise RefusedError(
            f"refusing to go on: {where} has changes that are not committed",
            why="\n".join(dirty[:10]),
            hint=f"commit them into {step.id} (`git -C {where} commit --amend -a`) or as a new "
            f"patch (`git commit`), or put them away (`git -C {where} stash`); then "
            f"`{st.command} --continue`",
        )
    parent = repo.rev(f"{st.current}^")
    head = repo.head()
    assert parent is not None
    if head is None or not repo.is_ancestor(parent, head) or repo.merges(parent, head):
        raise RefusedError(
            f"refusing to go on: HEAD in {where} no longer stands on the patches before {step.id}",
            why=f"HEAD is {(head or 'nothing')[:12]}; the edit needs a straight line of "
            f"commits on {parent[:12]}",
            hint=f"git -C {where} checkout --detach {st.current[:12]} to go back to the stop, "
            f"or `{st.command} --abort` (it keeps your commits under a backup ref)",
        )
    made = repo.commits(parent, head)
    subjects = {c: repo.message(c) for c in made}
    fixups = [c for c in made if subjects[c].startswith(FIXUP_PREFIXES)]
    if fixups:
        raise RefusedError(
            "refusing to go on: a fixup commit at the stop",
            why="\n".join(repo.oneline(c) for c in fixups),
            hint=f"squash it into {step.id} with `git -C {where} commit --amend`, then "
            f"`{st.command} --continue`",
        )
    st.steps[s.index : s.index + 1] = _replacing(st, step, made, subjects)
    st.current, st.stop = head, None
    ctx.ui.status(f"  {step.id:<4} {step.note}")


def _replacing(
    st: RebaseState, step: StepState, made: list[str], messages: dict[str, str]
) -> list[StepState]:
    """The steps that stand for what was made at the stop, in order."""
    out: list[StepState] = []
    mine = [c for c in made if series_id(messages[c]) == step.id]
    if not mine:
        step.status, step.note = "dropped", "removed at the edit stop"
        out.append(step)
    for c in made:
        if mine and c == mine[0]:
            step.status, step.new = "edited", c
            step.note = "edited" if c != st.current else "unchanged at the stop"
            out.append(step)
        else:
            pid = series_id(messages[c]) or ""
            out.append(StepState(pid, c, "picked", c, "new at the stop", action="pick"))
    return out


def refuse_other_kind(checkout: Checkout, st: RebaseState, kind: str) -> None:
    """``series rebase --continue`` on an edit (or the reverse): name the right command."""
    if st.kind != kind:
        raise RefusedError(
            f"refusing to {kind}: a `{st.command}` is in progress in {checkout.path}",
            why="one sequencer state per checkout: it goes on with the command that began it",
            hint=f"`{st.command} --continue`, `--skip` or `--abort`; `series status` says "
            "where it stands",
        )

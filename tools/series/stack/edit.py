"""``series edit``: a plan of per-patch actions, run by the rebase sequencer onto the same base.

``start`` checks the checkout as a rebase does (series.stack.rebase.guard:
on its branch, clean, the whole series, patches/ in agreement;
``--squash`` also takes commits made since the last export), turns the
request into a plan (series.stack.edit_plan), saves it as the
sequencer's state (kind ``edit``, onto = the base: the pin does not move)
in one transaction, and hands it to the driver
(series.stack.rebase_driver): an ``edit`` action stops there for the
user, a conflict stops as a rebase's does, and the end is an export
(series.stack.edit_finish). ``resume`` is the rebase's ``--continue``,
``--skip`` and ``--abort`` (series.stack.rebase_resume) for this kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from series.builder.message import series_id
from series.checkout import Checkout, finish_cut_move
from series.errors import RefusedError
from series.stack import edit_plan, export_files
from series.stack import rebase_state as rstate
from series.stack.edit_finish import edited, finish_edit, stop_cut_short
from series.stack.edit_plan import Entry, Request
from series.stack.rebase import guard
from series.stack.rebase_driver import Run, drive
from series.stack.rebase_plan import begin
from series.stack.rebase_resume import EditEnds
from series.stack.rebase_resume import resume as resume_sequencer
from series.stack.snapshot import save_project
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series


def start(series: Series, ui: Ui, checkout: Checkout, request: Request) -> None:
    """Run the plan of ``request``: to its end (exported), or to a stop."""
    cstate = checkout.require()
    repo = checkout.repo
    running = rstate.load(repo)
    if running is not None:
        raise RefusedError(
            f"refusing to edit: a `{running.command}` is already in progress in {checkout.path}",
            why="one sequencer state per checkout",
            hint=f"`series status` says where it stands; {running.next_step}",
        )
    journal = export_files.interrupted(series.root)
    if export_files.edit_end_cut_short(journal, checkout.tip()):
        raise export_files.edit_end_refusal("edit")
    if journal is not None:
        raise RefusedError(
            "refusing to edit: an export was interrupted (.series/export-journal.json)",
            why="patches/ may be half new",
            hint="`series export` finishes it; then `series edit` again",
        )
    finish_cut_move(checkout, ui)
    guard(series, checkout, cstate.applied, verb="edit", unexported_ok=request.squash)
    tip = checkout.tip()
    assert tip is not None
    infos = repo.history.commit_infos(cstate.base, tip)
    entries = [Entry(series_id(i.message) or "", i.commit, i.message.split("\n")[0]) for i in infos]
    synced = len(repo.history.commits(cstate.base, cstate.synced)) if cstate.synced else 0
    plan = edit_plan.build(entries, synced, request)
    saved = save_project(repo, series.root, [series.patch_path(p) for p in series.manifest.patches])
    state = begin(
        onto=cstate.base,
        onto_tree=repo.objects.tree_of(cstate.base),
        onto_rev="the pin",
        onto_label="the patches before it",
        url=None,
        tip=tip,
        base=cstate.base,
        saved=saved,
        drop_merged=False,
        plan=plan,
        kind="edit",
    )
    shown = " ".join(f"{a.kind} {a.id}" for a in plan if a.kind != "pick")
    with repo.refs.transaction(f"series edit: start ({shown})") as txn:
        rstate.save(repo, txn, state, None)
        txn.update(rstate.SAVED_REF, saved, None)
        txn.update(rstate.ONTO_REF, cstate.base, None)
    ui.status(f"edit: {shown} in a series of {len(plan)} steps")
    drive(Run(series, ui, checkout, {i.commit: i for i in infos}, list, finish_edit), state)


def report(checkout: Checkout) -> dict[str, Any]:
    """Where the edit left the checkout, for ``--json`` (docs/edit.md)."""
    st = rstate.load(checkout.repo)
    state = checkout.require()
    return {
        "checkout": str(checkout.path),
        "stopped_at": st.stopped_at if st is not None and st.stop is not None else None,
        "stop": st.stop.kind if st is not None and st.stop is not None else None,
        "tip": checkout.tip(),
        "head": checkout.repo.refs.head(),
        "applied": list(state.applied),
    }


def resume(series: Series, ui: Ui, checkout: Checkout, action: str) -> None:
    """``--continue``, ``--skip`` or ``--abort`` of the edit in progress."""
    ends = EditEnds(finish_edit, stop_cut_short, edited)
    resume_sequencer(series, ui, checkout, action, kind="edit", ends=ends)

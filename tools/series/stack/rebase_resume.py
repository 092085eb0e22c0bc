"""``series rebase --continue``, ``--skip`` and ``--abort``: a stopped rebase taken up again.

``--continue`` checks what the user staged at the stop (series.stack.
resolution_check), records it (series.merge.resolutions) and hands it to
the driver as the stop's resolution; ``--skip`` keeps what the user
changed at the stop (``keep_stop``) and hands the driver the stop as
skipped; both then walk on (series.stack.rebase_driver). ``--abort``, and
what all three check first (a rebase killed after its end or before its
start), are series.stack.rebase_abort's, which loads none of the driver.
"""

from __future__ import annotations

from series.checkout import Checkout
from series.errors import ConflictError, RefusedError, UsageError
from series.git import worktree
from series.git.history import HeadsLater, LogEntry, start_infos
from series.git.run import light_processes
from series.merge import resolutions
from series.records import NamedTuple
from series.stack import rebase_state as rstate
from series.stack.rebase_abort import keep_stop, prepare, resume_abort
from series.stack.rebase_driver import Run, begin, conflict_error, drive, write_conflict
from series.stack.rebase_plan import RebaseState, Stop
from series.stack.rebase_step import Edited, Resolved, Skipped
from series.stack.stop_written import (
    StagedOver,
    mark_written,
    markers_staged,
    refuse_over,
    staged_over,
    told,
)
from series.ui import Ui
from series.upstream import range_log

TYPE_CHECKING = False  # typing is not imported: see series.records
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import NoReturn

    from series.git import Repo
    from series.git.history import BaseAndHeads
    from series.git.mergetree import MergeStream
    from series.git.run import Started
    from series.project import Series


class EditEnds(NamedTuple):
    """What a ``series edit`` resume takes of series.stack.edit_finish, handed in by
    series.stack.edit: a rebase's resume loads none of the export behind it."""

    finish: Callable[[Series, Ui, Checkout, RebaseState], None]  # the edit's end
    cut_short: Callable[..., bool]  # an edit stop killed before it was all written
    edited: Callable[[Repo, Path, RebaseState], Edited]  # what the user made at the stop


def resume(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    action: str,
    *,
    kind: str = "rebase",
    ends: EditEnds | None = None,
    early: tuple[worktree.Seen | None, Started | None] | None = None,
) -> None:
    """``--continue``, ``--skip`` or ``--abort`` of the ``kind`` (rebase, edit) in progress.

    ``--continue`` and ``--skip`` start their git processes without importing GitPython
    (series.git.run.light_processes: the same processes; the import cost more CPU than
    any of them but the merges). ``ends``: an edit's (series.stack.edit). ``early``:
    --skip's ``git status`` of the stop's files, started by its caller, and the index and
    HEAD just before it started (series.stack.stop_files ``stop_files_seen``).
    """
    if action == "abort":
        resume_abort(series, ui, checkout, kind)
        return
    with light_processes():
        _resume(series, ui, checkout, action, kind, ends, early)


def _resume(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    action: str,
    kind: str,
    ends: EditEnds | None,
    early: tuple[worktree.Seen | None, Started | None] | None = None,
) -> None:
    """``early``: --skip's status and what it saw, started by its caller already
    (series.commands.rebase: before the driver is imported); else started here."""
    # --skip: the git status of what the user changed at the stop (keep_stop) runs while
    # the state is read and the first merge starts; after the project lock, so only
    # prepare's finishing of a cut move could change the files meanwhile (then it is
    # asked again), as --abort does (series.stack.rebase_abort.resume_abort)
    # and the merges' two processes start too (the first merge waits for neither's start),
    # for --continue as well, with the long-lived cat-file the checks read through
    skip = action == "skip" and checkout.exists()
    # the index and HEAD as the status sees them: --skip's move to the commit so far then
    # needs no git to tell that it adds no path (series.git.worktree ``adds_nothing``)
    if early is not None:
        before, files = early if skip else (None, None)
    else:
        before = worktree.seen(checkout.path) if skip else None
        files = checkout.repo.worktree.start_changed() if skip else None
    walks = action in ("skip", "continue") and checkout.exists()
    if walks:
        checkout.repo.objects.warm()
    stream = _start_stream(checkout.repo) if walks else None
    try:
        found = prepare(series.root, checkout, ui, action, kind)
        if found is not None:  # a cut move finished by prepare: the status is asked again
            fresh = None if found[1] else files
            seen = _Seen(before, fresh)
            asked = _Asked(series, ui, checkout, action, ends)
            _resumed(asked, found, seen, stream)
    finally:
        if files is not None:
            files.abandon()
        if stream is not None:
            stream.close()  # unused, or ended by the walk already


def _start_stream(repo: Repo) -> MergeStream:
    """The walk's merge stream (series.stack.rebase_driver ``Steps``), started now."""
    stream = repo.merge.stream(repo.merge.hermetic())
    stream.start()
    return stream


class _Asked(NamedTuple):
    """What the resume was asked to do, and where (:func:`resume`'s arguments)."""

    series: Series
    ui: Ui
    checkout: Checkout
    action: str
    ends: EditEnds | None


def _resumed(
    asked: _Asked, found: tuple[RebaseState, bool], seen: _Seen, stream: MergeStream | None
) -> None:
    series, ui, checkout, action, ends = asked
    st, cut = found
    repo = checkout.repo
    editing = st.stop is not None and st.stop.kind == "edit"
    early = start_infos(repo.history, st.base, st.tip)  # its log runs beside the checks
    try:
        at = _check_moved(checkout, st, head_may_move=action == "skip" or editing)
    except BaseException:
        early.abandon()
        raise
    infos = repo.history.commit_infos(st.base, st.tip, early=early)
    assert (ends is not None) == (st.kind == "edit"), "an edit is resumed with its ends"
    end = ends.finish if ends is not None else None
    since = _SincePin(st)
    run = Run(series, ui, checkout, {i.commit: i for i in infos}, since, end, early=since)
    since.run = run
    run.stream = stream
    if editing:
        assert ends is not None
        if action == "skip":
            raise UsageError(
                f"nothing to skip: the edit is stopped for you to change {st.stopped_at}",
                hint=f"`{st.command} --continue` goes on (with or without changes); "
                f"`{st.command} --abort` puts everything back",
            )
        if not ends.cut_short(repo, ui, st, finished=cut):
            drive(run, st, ends.edited(repo, checkout.path, st))
    elif action == "skip":
        _skip(run, st, at, seen)
    elif cut and st.stop is not None and st.stop.proposal:
        # the stop was killed while writing the proposal: it is written now, but no one
        # has seen it; --continue would take it unread
        raise conflict_error(run, st)
    else:
        _continue(run, st)


class _SincePin:
    """The upstream commits since the pin, for a stop's report (``Run.upstream_commits``).

    At a conflict that will stop (no resolution recorded for it), the driver starts
    them (``start``): the ``merge-base`` and the ``log`` they most likely need run side
    by side with the stop's own git work (series.git.history ``base_and_heads``), and
    are read when the report asks; the driver ends them if it does not (``abandon``).
    Where the pin is the base the rebase started from (a pin of git's: the range is
    the same whatever the merge base says), the ``log`` alone.
    """

    def __init__(self, st: RebaseState) -> None:
        self.st = st
        self.run: Run | None = None
        self.early: BaseAndHeads | HeadsLater | None = None

    def start(self) -> None:
        run, st = self.run, self.st
        assert run is not None
        if self.early is not None or st.kind == "edit":
            return
        real = run.series.manifest.upstream.commit
        revs = [st.onto, f"^{real}"]
        if real == st.base:
            self.early = run.repo.history.heads_later(revs, max_count=2000)
        elif run.repo.objects.has(real):
            self.early = run.repo.history.base_and_heads(real, st.onto, revs, max_count=2000)

    def __call__(self) -> list[LogEntry]:
        assert self.run is not None
        early, self.early = self.early, None
        return _since_pin(self.run, self.st, early)

    def abandon(self) -> None:
        if self.early is not None:
            self.early.abandon()
            self.early = None


def _since_pin(
    run: Run, st: RebaseState, early: BaseAndHeads | HeadsLater | None
) -> list[LogEntry]:
    """The upstream commits since the pin (REV's that the real pin lacks), for a stop's report.

    Listed as ``--onto`` lists them (series.upstream.rangelog): one ``log`` that reads
    no tree, and the files of each commit from the per-user cache, where ``--onto``
    kept them; only the others are diffed. ``early``: the merge base and that ``log``
    (or the ``log`` alone), started already (``_SincePin.start``).

    The range is REV's commits that the real pin lacks where the two share history, else
    those the base lacks; where the real pin is the base, both are one range, and no
    ``merge-base`` is asked.
    """
    if st.kind == "edit":
        return []
    revs = [st.onto, f"^{st.base}"]
    real = run.series.manifest.upstream.commit
    heads = None
    if isinstance(early, HeadsLater):
        heads = early.answer()  # real is the base: revs are the range
    elif early is not None:
        found, heads = early.answer()
        if found:
            revs = [st.onto, f"^{real}"]
    elif (
        real != st.base
        and run.repo.objects.has(real)
        and run.repo.history.merge_base(real, st.onto)
    ):
        revs = [st.onto, f"^{real}"]
    cache = run.series.cache_dir
    return range_log(run.repo, revs, cache_dir=cache, max_count=2000, heads=heads)


def _check_moved(
    checkout: Checkout, st: RebaseState, *, head_may_move: bool
) -> tuple[str | None, str | None]:
    """Refuse when what the rebase stands on moved; ``--skip`` keeps a moved HEAD aside.

    HEAD's commit and branch, as read here (``--skip`` keeps what they hold).
    """
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
    # HEAD from its file where it is detached (as a stop leaves it), peeled by the running
    # cat-file: no process; on a branch, or in any form that file cannot tell, git is asked
    head, on = repo.refs.head_and_ref_read(repo.git_dir, {}) or repo.refs.head_and_ref()
    if head != expected and not (head_may_move and st.stop is not None):
        raise RefusedError(
            f"refusing to go on: the checkout moved (HEAD is {(head or 'nothing')[:12]}, "
            f"the rebase left it at {expected[:12]})",
            why="commits made or checked out during a rebase stop are not part of it",
            hint="`series rebase --skip` or `--abort` (each keeps commits made here under "
            f"a backup ref and prints it); or keep them yourself (git -C {where} branch NAME), "
            f"then git -C {where} checkout --detach {expected[:12]} to go back",
        )
    return head, on


def _continue(run: Run, st: RebaseState) -> None:
    s = st.stop
    if s is None:
        drive(run, st)  # interrupted before its first stop, or while finishing
        return
    action = st.plan[s.index]
    resolved = _resolved_tree(run, st, s, action.id)
    root = run.series.root
    used = str(resolutions.path_for(root, action.id, s.key).relative_to(root))
    event = Resolved(resolved, used)
    # The first merge after the stop needs the staged tree alone: git makes it on the
    # other core while the resolution is checked and recorded (a refusal closes the walk
    # unused: merges write objects only).
    walk = begin(run, st, event)
    try:
        # imported here: --skip loads neither it nor the parser's _ast (whose import makes
        # a class per node of Python's grammar: 5% of a --skip's own instructions)
        from series.stack import resolution_check

        resolution_check.check(
            run.repo, resolved, s.stages, patch_id=action.id, where=run.checkout.path
        )
        info = run.infos[action.commit]
        path = resolutions.record(
            run.repo,
            root,
            patch=(action.id, info.message.splitlines()[0]),
            key=s.key,
            stages=s.stages,
            conflicted=s.conflict_tree,
            resolved=resolved,
            made_for=f"{st.onto_rev} ({st.onto[:12]})",
        )
        assert str(path.relative_to(root)) == used, (path, used)
        run.ui.status(f"  {action.id:<4} resolution recorded in {used}")
    except BaseException:
        walk.close()
        raise
    drive(run, st, event, walk)


def _resolved_tree(run: Run, st: RebaseState, s: Stop, sid: str) -> str:
    """The tree staged as the resolution; refuse what is not one (yet). What it holds is
    checked after (series.stack.resolution_check), beside the first merge."""
    repo, where = run.repo, run.checkout.path
    # The index's tree; None when it has conflict stages (git's write-tree refuses them),
    # and only then are they listed. Raises when the stop was cut short.
    recorded = told(repo, s)  # git's record of the conflict's resolution, read once
    index = _finish_stop(run, st, s, recorded)
    unmerged = repo.worktree.unmerged() if index is None else []
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
    # what was staged over a stop never written (series.stack.stop_written): its conflict
    # written beside it where that writes nothing it holds (the files are the index's,
    # checked above: the move writes over no change of the user's), else refused
    over = staged_over(repo, s, resolved, st.current, recorded)
    if over is not None and over.beside:
        _write_beside(run, st, s, over)
    refuse_over(st, where, over)
    if resolved == repo.objects.tree_of(st.current):
        raise UsageError(
            f"nothing of {sid} is left after the resolution",
            hint="`series rebase --skip` drops it with a record; or stage its changes",
        )
    return resolved


def _write_beside(run: Run, st: RebaseState, s: Stop, over: StagedOver) -> NoReturn:
    """The stop's conflict, never written, written beside what was staged over it since
    (``over``: none of it where the conflict's move writes), the files the index's: the
    two-tree move from the tree the stop was to be written over keeps every other path as
    it is staged; raise."""
    write_conflict(run.repo, s)
    mark_written(run.repo, st)
    paths = ", ".join(over.staged[:10]) + (", ..." if len(over.staged) > 10 else "")
    run.ui.status(
        "the conflict had not been written into the checkout (interrupted), and git "
        "recorded no resolution of it in the index; it is now, beside what you staged "
        f"since, kept as it is ({paths})"
    )
    raise conflict_error(run, st)


def _finish_stop(run: Run, st: RebaseState, s: Stop, recorded: bool | None) -> str | None:
    """A stop killed before its conflict was all written (files, then stages): write it, raise.
    Else the index's tree (None: it has unmerged entries). ``recorded``: git's record of
    the conflict's resolution in the index (series.stack.stop_written ``told``).

    The index still holds the tree the conflict was written over (nothing
    written yet), or the conflicted files with their markers but no stages
    (killed between the two, or during the move, whose finish wrote them: with
    what was staged beside it too). Committing the latter as a resolution would
    put the markers into the series; a conflict added back unedited is the
    same tree, and is refused the same way.
    """
    repo, index = run.repo, run.repo.worktree.index_tree()
    if index == s.written_from and repo.worktree.files_match_index():
        run.ui.status(
            "the conflict had not been written into the checkout (interrupted); it is now"
        )
        write_conflict(repo, s)
        mark_written(repo, st)
        raise conflict_error(run, st)
    if index == s.conflict_tree or (index is not None and markers_staged(repo, s, index, recorded)):
        run.ui.status(
            "the conflicted files are staged with their markers (an interrupted stop, or "
            "`git add` of unedited files): their conflict stages are back in the index"
        )
        repo.worktree.stage_conflicts(s.stages)
        raise conflict_error(run, st)
    return index


class _Seen(NamedTuple):
    """keep_stop's ``git status``, started already (None: not started, or asked again),
    and the checkout's index and HEAD just before it started (series.git.worktree
    ``seen``)."""

    before: worktree.Seen | None
    files: Started | None


def _skip(run: Run, st: RebaseState, at: tuple[str | None, str | None], seen: _Seen) -> None:
    """``at``: HEAD's commit and branch, read by the checks a moment before (keep_stop's
    transaction detaches HEAD only if it is still there); ``seen``: keep_stop's ``git
    status``, started already, and what it saw.

    The checkout is reset to the commit so far (the conflict thrown away, as ``git rebase
    --skip`` does) in a ``read-tree`` that runs while the patches after the stop are
    merged (they need nothing of the checkout); the walk waits for it before it changes
    anything visible (``Run.settle``)."""
    s = st.stop
    if s is None:
        raise UsageError("nothing to skip: the rebase is not stopped at a conflict")
    # the first merge after the stop needs nothing of the checkout: git makes it on the
    # other core while the user's changes are kept and the checkout is reset
    walk = begin(run, st, Skipped())
    try:
        what = f"{st.kind} --skip"
        files = seen.files
        held = keep_stop(run.checkout, st, what, run.ui, back_to=st.current, at=at, files=files)
        run.index_tree = run.repo.objects.tree_of(st.current)  # what the index will hold
        if at[0] is not None:  # keep_stop's transaction detached HEAD there if it was not
            run.head = at if at[0] == st.current else (st.current, None)
        run.ui.status(f"  {st.plan[s.index].id:<4} skipped; series.toml will record why")
        # what the reset adds to the index: nothing where the status says so of this index
        # and HEAD at the commit so far (no diff-index); else git is asked, as at any move
        none = worktree.adds_nothing(run.checkout.path, seen.before, files, st.current)
        run.moving = run.repo.worktree.start_reset(
            st.current, kept=True, held=held, adds="" if none else None
        )  # drive waits
    except BaseException:
        walk.close()
        raise
    drive(run, st, Skipped(), walk)

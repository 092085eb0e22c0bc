"""Whether a rebase stop whose index changed since was ever written into the checkout.

A stop is saved (its state, HEAD detached at the commit so far), then its files are
written (series.stack.rebase_driver ``write_conflict``; an edit stop's, the patch's).
Where that move is refused (a file of the user's in its way) or cut short, the index is
still the tree the stop was to be written over (``written_from``) and ``--continue``
writes it. Once something is staged there (``git add -f`` of the file in the way), the
index is no longer that tree, and ``rebase --continue`` took it for the stop's
resolution: the series' files from before the stop, the user's with them, the patch that
difference and the next ones empty; ``edit --continue`` refused it as uncommitted
changes, to be amended into the patch (``git commit --amend -a``), which would fold the
later patches' files into it.

:func:`staged_over` tells such an index from a resolution by the files the stop's write
changes outside its conflict (``written_from`` to the stop's tree): at a stop written,
the index holds the stop's version of them (or, where the user changed one, the user's);
at one never written, none holds the stop's, and they hold what they held before it.
An edit stop's write is the move to the patch to edit: the same holds, without a conflict.
The trees are read in the process (series.git.diffs ``tree_changes``: a few objects
where the stop was written). That cannot tell a stop whose write changes nothing outside
its conflict but paths the user then staged: where the stop's move was refused, series
recorded it then (:func:`mark_unwritten`: ``refs/series/rebase/unwritten``, the tree the
stop writes, deleted once it is written or the rebase is over), and that record tells
where the files cannot (a record a kill left after the stop was written is not believed
over a file that holds the stop's version). A stop left unwritten by a kill has no
record: the files tell, as above; and at a conflict stop, the index itself: git records
in it the conflict stages a command takes out (``git add``, ``rm``, ``checkout --``:
its resolve-undo extension), so a conflict resolved there is known written, and one of
which git recorded nothing, with nothing staged where the stop writes, never was:
``--continue`` writes it beside what was staged (``beside``), as ``git checkout`` keeps
what it does not touch. Read from the index file, no process.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from series.errors import RefusedError, SeriesError
from series.git.repo import Repo
from series.git.run import ZERO
from series.git.worktree import resolution_recorded
from series.records import NamedTuple
from series.stack.rebase_plan import RebaseState, Stop
from series.stack.rebase_state import UNWRITTEN_REF


class StagedOver(NamedTuple):
    """What :func:`staged_over` found."""

    moved: int  # files the stop's write changes outside its conflict
    before: tuple[str, ...]  # of them, those the index holds as they were before the stop
    staged: tuple[str, ...]  # what the index holds of neither: staged since
    recorded: bool = False  # told by the record of the refusal (the files could not tell)
    beside: bool = False  # a conflict never in the index, staged only where it writes nothing


def written_tree(repo: Repo, stop: Stop, current: str) -> str:
    """The tree the stop's move writes: its conflict marked up, the proposed remainder, or
    (an edit stop) the patch's."""
    if stop.kind == "edit":
        return repo.objects.tree_of(current)
    return stop.proposal or stop.conflict_tree


def mark_unwritten(repo: Repo, st: RebaseState) -> None:
    """Record that the move to ``st``'s stop was refused: ``UNWRITTEN_REF`` at the tree
    it writes. A record that cannot be written is left (the files tell, :func:`staged_over`)."""
    assert st.stop is not None
    tree = written_tree(repo, st.stop, st.current)
    reason = f"series {st.kind}: the move to the stop refused, {tree[:12]}"
    with contextlib.suppress(SeriesError), repo.refs.transaction(reason) as txn:
        txn.update(UNWRITTEN_REF, tree, repo.refs.value(UNWRITTEN_REF) or ZERO)


def mark_written(repo: Repo, st: RebaseState) -> None:
    """``st``'s stop written since its move was refused: its record goes."""
    old = repo.refs.value(UNWRITTEN_REF)
    if old is not None:
        with repo.refs.transaction(f"series {st.kind}: the stop written") as txn:
            txn.delete(UNWRITTEN_REF, old)


def told(repo: Repo, stop: Stop) -> bool | None:
    """Whether git recorded the resolution of ``stop``'s conflict in the checkout's index
    (series.git.worktree ``resolution_recorded``); None where the stop has no conflict
    stages (an edit stop, a proposed remainder) or the index cannot be read. Read once
    by a command, handed to :func:`staged_over` and :func:`markers_staged`."""
    if stop.kind != "conflict" or not stop.stages or stop.proposal:
        return None
    return resolution_recorded(repo.path, stop.stages)


def staged_over(
    repo: Repo, stop: Stop, staged: str, current: str, recorded: bool | None
) -> StagedOver | None:
    """The stop never written and ``staged`` (the index's tree) staged over it since; None
    where the index is the stop's (written), or a resolution of it, or cannot be told.
    ``current``: the commit the stop is at (an edit stop writes its tree); ``recorded``:
    :func:`told` of the stop."""
    written = written_tree(repo, stop, current)
    if not written or written == stop.written_from:
        return None
    conflicted = set(stop.files)
    if recorded:
        return None  # git recorded its conflict resolved in this index: written
    beside = _beside(repo, stop, written, staged) if recorded is False else None
    if beside is not None:
        return beside
    outside = repo.diffs.tree_changes(written, staged)
    outside = {p: c for p, c in outside.items() if p not in conflicted}
    if not outside:
        return None  # the stop's files, but for its conflict's: the common case, one read
    moved = repo.diffs.tree_changes(stop.written_from, written)
    moved = {p: c for p, c in moved.items() if p not in conflicted}
    if any(p not in outside for p in moved):
        return None  # one holds the stop's version: written (a record left by a kill too)
    before = tuple(sorted(p for p, (old, _) in moved.items() if outside[p][1] == old))
    # none as before the stop, every one the user's: a stop never written only where its
    # move's refusal was recorded
    recorded = not before and repo.refs.value(UNWRITTEN_REF) == written
    if not before and not recorded:
        return None
    mine = sorted(p for p, (_, now) in outside.items() if p not in moved or now != moved[p][0])
    return StagedOver(len(moved), before, tuple(mine), recorded)


def markers_staged(repo: Repo, stop: Stop, staged: str, recorded: bool | None) -> bool:
    """Whether the index's tree ``staged`` holds the conflict's marked-up files where its
    stages were (the stop's move done, or finished after a kill, its stages not written
    yet), something else staged beside them perhaps, and git recorded no resolution of
    them (``recorded``, :func:`told`: a ``git add`` of them, unedited, records one, and
    the markers are refused then)."""
    if recorded is not False:
        return False
    return not repo.diffs.tree_changes(stop.conflict_tree, staged).keys() & set(stop.files)


def _beside(repo: Repo, stop: Stop, written: str, staged: str) -> StagedOver | None:
    """A conflict stop whose resolution git did not record in the index (its resolve-undo
    extension: series.git.worktree ``resolution_recorded``), where nothing was staged at
    a path the stop's write changes: never written (a stop written holds its version of
    those paths, or the user's resolution of them, which git records), and what was staged
    can stay beside it. None where something was staged there (the files tell, below)."""
    writes = repo.diffs.tree_changes(stop.written_from, written)
    since = repo.diffs.tree_changes(stop.written_from, staged)
    if writes.keys() & since.keys():
        return None
    return StagedOver(len(writes.keys() - set(stop.files)), (), tuple(sorted(since)), beside=True)


def refuse_staged_over(repo: Repo, st: RebaseState, staged: str, where: Path) -> None:
    """Refuse the index's tree ``staged`` at ``st``'s stop where it was staged over the stop
    never written (:func:`staged_over`): not the stop's resolution, nor the patch's edit."""
    assert st.stop is not None
    recorded = told(repo, st.stop)
    refuse_over(st, where, staged_over(repo, st.stop, staged, st.current, recorded))


def refuse_over(st: RebaseState, where: Path, over: StagedOver | None) -> None:
    """Refuse what :func:`staged_over` found at ``st``'s stop in the checkout ``where``, if
    anything; not a conflict that can be written beside it (``beside``: the caller writes
    it, series.stack.rebase_resume)."""
    stop = st.stop
    assert stop is not None
    if over is None or over.beside:
        return
    cmd, sid = st.command, st.stopped_at
    taken = f"{sid}'s edit" if stop.kind == "edit" else f"the resolution of {sid}"
    outside = "" if stop.kind == "edit" else " outside its conflict"
    told = (
        "its move was refused, a file in its way, and series recorded that then"
        if over.recorded
        else f"of the {over.moved} file(s) the stop writes{outside}, none holds its version "
        f"in the index and {len(over.before)} hold what they held before it (its move was "
        "refused, a file in its way, or cut short)"
    )
    raise RefusedError(
        f"refusing to take what is staged in {where} for {taken}: the stop was never written "
        "into the checkout",
        why=f"{told}; what was staged since is not "
        + ("an edit" if stop.kind == "edit" else "a resolution")
        + (": " + ", ".join(over.staged[:10]) if over.staged else ""),
        hint=f"{put_back(where, stop)}; move out of the way what is in the stop's way, then "
        f"`{cmd} --continue` writes the stop; or `{cmd} --abort`",
    )


def put_back(where: Path, stop: Stop) -> str:
    """The way to put the index of the checkout ``where`` back as the stop left it."""
    return (
        f"`git -C {where} read-tree {stop.written_from}` puts the index back as the stop left "
        "it (your files stay as they are)"
    )

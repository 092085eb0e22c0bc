"""Backup refs: no command leaves a commit of the user's unreachable.

The invariant (docs/workflow.md, "What is kept"): every commit reachable
from the checkout's HEAD (detached or on any branch) or from its series
branch before a command, and the uncommitted changes a command throws
away, are reachable from a named ref after it, and the command prints
that ref. A command that moves HEAD, the branch, or resets files asks
:func:`keep_lost` with the transaction it is about to commit: what would
no longer be reached by any ref once the transaction is applied goes under
one ``refs/series/backup/<time>-<what>`` added to the same transaction
(compare-and-swap: it must not exist yet). Several lost tips get one
commit whose parents are those tips, so one ref keeps them all.

Not kept: commits series wrote itself and can write again with the same
ids (up to ``refs/series/synced``, a rebase's replayed commits and the
upstream it replays onto), which the caller names as ``own``. Backup refs
are never deleted by series.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from series import refnames
from series.git.ident import Ident
from series.git.refs import Transaction
from series.git.repo import Repo
from series.git.run import ZERO
from series.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from series.git.run import Started

PREFIX = refnames.BACKUP
CHANGES = "uncommitted changes"  # the label of a snapshot made by :func:`uncommitted`


class Kept(NamedTuple):
    """The backup ref a command added, and what it keeps."""

    ref: str
    tips: tuple[tuple[str, str], ...]  # (what it was, commit)
    count: int  # type: ignore[assignment]  # the user's commits that only this ref reaches
    changes: bool  # it holds a snapshot of uncommitted changes

    def describe(self, path: Path) -> str:
        held = [f"{self.count} commit(s) that nothing else would reach"] if self.count else []
        held += ["the uncommitted changes (the files as they were)"] if self.changes else []
        tips = "; ".join(f"{label} at {commit[:12]}" for label, commit in self.tips)
        return (
            f"kept {' and '.join(held)} ({tips}) as {self.ref} in {path}: "
            f"`git -C {path} log {self.ref}` shows them"
        )


def _who() -> Ident:
    return Ident("keras-series", "backup@keras-series.invalid", f"@{int(time.time())} +0000")


def keep_lost(
    repo: Repo,
    txn: Transaction,
    what: str,
    *,
    looked_at: Sequence[tuple[str, str | None]],
    kept: Iterable[str | None] = (),
    gone: Iterable[str] = (),
    made: Iterable[str | None] = (),
    listed: dict[str, str] | None = None,
) -> Kept | None:
    """Add a backup ref to ``txn`` of what it would leave unreachable; None if nothing.

    ``looked_at``: (label, commit) of what the user may have work on (HEAD,
    the branch, a snapshot of uncommitted changes). Reachable after the
    command: every ref as ``txn`` leaves it, less the refs of ``gone`` (a
    later step deletes them), and the commits of ``kept`` (HEAD when it
    does not move, commits series wrote itself). ``made``: commits made
    for this backup (a snapshot of uncommitted changes), not counted as
    the user's. ``listed``: every ref under ``refs/``, read already.

    A commit that is itself one of ``kept``, or what a ref points at once ``txn`` is
    applied (a rebase's end: HEAD at the commit the branch moves to), is reached by it:
    git is not asked (``rev-list C ^C`` is empty), nor are the refs listed for it.
    """
    planned: dict[str, str | None] = dict(txn.planned())
    planned.update({ref: None for ref in gone})
    planned.update({f"kept:{n}": c for n, c in enumerate(kept) if c})
    reached = {c for c in planned.values() if c}
    lost: dict[str, tuple[str, frozenset[str]]] = {}
    for label, commit in looked_at:
        if commit and commit not in lost and commit not in reached:
            if listed is None:
                listed = repo.refs.under("refs/")
            gone_from = frozenset(repo.refs.unreachable([commit], planned, listed))
            if gone_from:
                lost[commit] = (label, gone_from)
    tips = [
        (label, commit)
        for commit, (label, commits) in lost.items()
        if not any(commits < other for _, other in lost.values())  # an ancestor of another
    ]
    if not tips:
        return None
    target = tips[0][1]
    if len(tips) > 1:
        message = f"series {what}: backup of {len(tips)} tips\n\n" + "".join(
            f"{label}: {commit}\n" for label, commit in tips
        )
        target = repo.objects.commit_tree(
            repo.objects.tree_of(target), [c for _, c in tips], message, _who()
        )
    ref = backup_ref(repo, what)
    txn.update(ref, target, ZERO)
    snapshots = {c for c in made if c}
    every: set[str] = set().union(*(commits for _, commits in lost.values()))
    return Kept(ref, tuple(tips), len(every - snapshots), bool(every & snapshots))


def backup_ref(repo: Repo, what: str) -> str:
    """A new ``refs/series/backup/<time>-<what>`` (``-2``, ``-3`` ... when taken)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    ref, n = f"{PREFIX}{stamp}-{what}", 1
    while repo.refs.value(ref) is not None:
        n += 1
        ref = f"{PREFIX}{stamp}-{what}-{n}"
    return ref


def free_ref(repo: Repo, ref: str, commit: str) -> str:
    """``ref``, or ``ref-2``, ``ref-3`` ... when it keeps another commit already.

    For backups with fixed names (``series branches``): a second backup
    never replaces the first.
    """
    name, n = ref, 1
    while repo.refs.value(name) not in (None, commit):
        n += 1
        name = f"{ref}-{n}"
    return name


def uncommitted(
    repo: Repo,
    what: str,
    known: Iterable[str],
    *,
    head: str | None = None,
    started: Started | None = None,
    on: str | None = None,
) -> tuple[str, ...]:
    """Commits on HEAD of the work tree's files and of what is staged apart from them,
    when they are the user's changes: the snapshot first; none when there is nothing to keep.

    The files (tracked, changed and untracked, not ignored) as they are;
    nothing when they are HEAD's tree, one of the ``known`` trees (what series
    itself wrote there) or the tree of a backup ref already made (a command
    run again after a kill keeps them once; the backup refs are listed only
    when the tree is none of the others), and nothing is staged apart.
    Staged apart: a path whose index entry differs from HEAD's and whose file
    differs from that entry (staged, then changed or restored in the work
    tree): the files alone do not hold what was staged, so the index's
    entries of those paths are kept too, in a commit on HEAD that is the
    snapshot's second parent (``git diff REF~ REF^2`` shows them; a run after
    a kill keeps them again). ``head``: HEAD's commit, read already in this
    run; ``started``: the ``git status`` of the files (series.git.worktree
    ``start_changed``), started already in this run. ``on``: the commit the
    snapshot goes on when HEAD has none (an unborn branch checked out, ``git
    checkout --orphan`` at a rebase stop): every file is snapshot then (git
    status lists changes against no commit); nothing is kept only when there
    is no such commit either.

    Whether the files are HEAD's or a known tree is told from the files
    themselves first (series.git.index ``Index.files_are``: the paths git
    status names, hashed here, against the trees read from the long-lived
    cat-file); only when they are not is the snapshot built (three git
    processes), and compared again.
    """
    head = repo.refs.head() if head is None else head
    if head is None:
        return _unborn(repo, what, known, on)
    base = repo.objects.tree_of(head)
    index = repo.index  # its module imported while git status runs
    changed, entries = repo.worktree.changed(started)  # and the index's own entries
    trees = [base, *known]
    if not entries and index.files_are(base, changed, trees):  # told from the files
        return ()
    tree = index.files_tree(base, changed)
    parents = [head]
    if entries:  # over HEAD's tree
        staged = index.rewrite(base, entries)
        message = f"series {what}: the staged changes in the checkout (the index as it was)\n"
        parents.append(repo.objects.commit_tree(staged, [head], message, _who()))
    elif tree in trees or tree in {t for _, t, _ in repo.refs.commits_under(PREFIX).values()}:
        return ()
    message = f"series {what}: the uncommitted changes in the checkout\n"
    return (repo.objects.commit_tree(tree, parents, message, _who()), *parents[1:])


def _unborn(repo: Repo, what: str, known: Iterable[str], on: str | None) -> tuple[str, ...]:
    """:func:`uncommitted` where HEAD names no commit: a snapshot of every file, on ``on``."""
    if on is None:
        return ()
    base = repo.objects.tree_of(on)
    tree = repo.index.files_tree(base)  # every file: nothing of git status is relative to it
    if tree in [base, *known]:
        return ()
    if tree in {t for _, t, _ in repo.refs.commits_under(PREFIX).values()}:
        return ()
    message = f"series {what}: the uncommitted changes in the checkout (HEAD had no commit)\n"
    return (repo.objects.commit_tree(tree, [on], message, _who()),)

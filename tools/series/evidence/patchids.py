"""Patch-ids of commits, kept in the per-user cache by commit id.

The patch-id evidence (series.evidence.find) reads the diff of every
upstream commit since the pin that touches the series' files: at 5,000
upstream commits, seconds of ``git log -p``. A commit's ``patch-id
--stable`` depends on the commit alone (its id names its tree and its
parent's), so it is kept under ``patchids/<first two hex digits>.json``
in the cache (series.bycommit, versioned and validated on read: a file
that does not validate is not trusted, its ids are asked of git again
and rewritten, and the caller is told) and read back instead of asked
again. Without a cache every id is asked of git.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from series.bycommit import Store, is_commit_id
from series.git import Repo

FORMAT = 2  # 1: {"format": 1, "ids": {...}}, before series.bycommit
KIND = "patchids"


def store(cache_dir: Path) -> Store:
    return Store(cache_dir, KIND, FORMAT, _valid)


def _valid(value: Any) -> bool:
    return is_commit_id(value)


def patch_ids(
    repo: Repo,
    commits: Sequence[str],
    cache_dir: Path | None,
    say: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """commit -> ``patch-id --stable`` of each of ``commits`` that has one (a non-merge
    commit with a parent and a diff); those the cache holds are read there."""
    kept = store(cache_dir) if cache_dir is not None else None
    known = kept.recall(commits) if kept else {}
    fresh = repo.diffs.patch_ids_of([c for c in commits if c not in known])
    every = {**known, **fresh}
    doubted = _shared(known, every)
    if doubted:
        again = repo.diffs.patch_ids_of(doubted)
        wrong = [c for c in doubted if again.get(c) != known[c]]
        for commit in wrong:
            if commit in again:
                every[commit] = again[commit]
            else:
                del every[commit]
        fresh.update(again)
        if wrong and say is not None and kept is not None:
            say(_untrue(kept, wrong))
    if kept is not None:
        kept.keep(fresh)
        if kept.ignored and say is not None:
            say(kept.ignored)
    return {c: every[c] for c in commits if c in every}


def _shared(known: dict[str, str], every: dict[str, str]) -> list[str]:
    """The commits whose kept patch-id another commit of ``every`` has too.

    Two commits with one patch-id are one change: a patch upstream has, which
    check-conflicts drops and ``rebase --drop-merged`` takes as evidence. A kept id
    is a record another series may have written (an older one, which diffed under
    the repository's attributes or the user's GIT_DIFF_OPTS, rows 143 and 155, or one
    of another format it did not change): well formed and of the right commit, and
    wrong. Such a claim is asked of git again before anything rests on it; it is
    rare (a patch upstream has), and costs one ``log -p`` of those commits.
    """
    counts: dict[str, int] = {}
    for pid in every.values():
        counts[pid] = counts.get(pid, 0) + 1
    return [c for c, pid in known.items() if counts.get(pid, 0) > 1]


def _untrue(kept: Store, wrong: list[str]) -> str:
    """One line on the kept patch-ids git does not give."""
    more = f" and {len(wrong) - 1} more" if len(wrong) > 1 else ""
    return (
        f"warning: the cache file {kept.root / f'{wrong[0][:2]}.json'} held a patch-id for "
        f"{wrong[0][:12]}{more} that git does not give: not trusted, asked of git again "
        "and the file rewritten"
    )

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
    if kept is not None:
        kept.keep(fresh)
        if kept.ignored and say is not None:
            say(kept.ignored)
    every = {**known, **fresh}
    return {c: every[c] for c in commits if c in every}

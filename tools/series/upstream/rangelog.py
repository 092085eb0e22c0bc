"""The upstream commits since the pin, with the files each changes, kept by commit.

check-conflicts and rebase read every upstream commit of the range since
the pin with the files it changes (the evidence and the report look for
the commits that touched a patch's files). Listing the range costs little
(one ``log`` that reads no tree); the files of each commit cost a diff of
its trees against its parent's, seconds at 5,000 commits on the Keras
tree. They depend on the commit alone, so they are kept in the per-user
cache by commit id (series.bycommit, ``commitfiles/``): a second run over
the same range, or a longer one, diffs only the commits it has not seen.
A commit without parents here (a root, or a shallow one whose parents
were not fetched) is diffed every time and never kept: its files would
change with a deeper fetch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from series.bycommit import Store
from series.git.history import LogEntry
from series.git.repo import Repo

TYPE_CHECKING = False  # typing is not imported: a rebase's resume loads this module
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
KIND = "commitfiles"


def _valid(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(f, str) and f for f in value)


def store(cache_dir: Path) -> Store:
    return Store(cache_dir, KIND, FORMAT, _valid)


def range_log(
    repo: Repo,
    revs: list[str],
    *,
    cache_dir: Path | None,
    max_count: int | None = None,
    say: Callable[[str], None] | None = None,
    heads: list[tuple[str, tuple[str, ...], str]] | None = None,
) -> list[LogEntry]:
    """``History.log_files(revs, max_count=...)`` with each entry's parents; the files of
    the commits the cache holds are read there (``cache_dir`` None: none are).
    ``heads``: ``History.heads(revs, max_count=...)``, asked already."""
    if heads is None:
        heads = repo.history.heads(revs, max_count=max_count)
    kept = store(cache_dir) if cache_dir is not None else None
    known = kept.recall(c for c, parents, _ in heads if parents) if kept else {}
    fresh = repo.history.files_of([c for c, _, _ in heads if c not in known])
    if kept is not None:
        kept.keep({c: list(fresh[c]) for c, parents, _ in heads if parents and c in fresh})
        if kept.ignored and say is not None:
            say(kept.ignored)
    return [
        LogEntry(c, subject, tuple(known[c]) if c in known else fresh.get(c, ()), parents)
        for c, parents, subject in heads
    ]

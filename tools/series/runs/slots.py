"""Work trees where series runs things (pytest now): a pool of reusable slots.

Tests need files on disk, so each concurrent pytest run gets a slot: a
detached linked work tree of the per-user cache repository at
``<cache>/worktrees/slot-N``. Slots belong to series, not to the user. They
are made once and then moved from tree to tree with ``git checkout``, which
rewrites only the files that differ, so a move between neighbouring patches
costs a few files and Python's ``__pycache__`` stays warm. Test droppings
(untracked files) are cleaned away on every move; ``__pycache__`` is kept,
minus the bytecode of every source file the move changed (CPython checks
source mtime and size, which a fast move can leave equal).

A slot is held with an exclusive ``flock`` on ``slot-N.lock`` for the whole
run, so two ``series test`` processes (or two threads of one) never share a
slot: each takes the first free one and makes a new one when all are busy.
A move starts by discarding what an interrupted one left (git's lock files,
local edits, untracked files), so a slot is usable again after Ctrl-C or a
crash.
Remove ``<cache>/worktrees`` and run ``git -C <cache>/upstream.git worktree
prune`` to reclaim the space.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from series.errors import SeriesError
from series.git import Repo
from series.locks import exclusive

KEEP = ("__pycache__",)
MAX_SLOTS = 256


@dataclass(frozen=True)
class Slot:
    name: str
    path: Path
    changed: tuple[str, ...]  # paths the last move rewrote


class SlotPool:
    def __init__(self, cache_repo: Repo, root: Path) -> None:
        self.repo = cache_repo
        self.root = root

    @contextmanager
    def slot(self, commit: str) -> Iterator[Slot]:
        """A free slot, moved to ``commit``, held until the block ends."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd, index = self._lock()
        try:
            path = self.root / f"slot-{index}"
            changed = self._move(path, commit)
            yield Slot(path.name, path, tuple(changed))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _lock(self) -> tuple[int, int]:
        for index in range(MAX_SLOTS):
            fd = os.open(self.root / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd, index
        raise SeriesError(
            f"all {MAX_SLOTS} test slots in {self.root} are busy",
            hint="wait for the other `series test` runs to finish",
        )

    def _move(self, path: Path, commit: str) -> list[str]:
        repo = Repo(path)
        if not repo.worktree.is_linked():
            if path.exists():
                shutil.rmtree(path)
            # `git worktree add` reads every other worktree's admin files, and
            # races with another process adding one: serialise the adds.
            with exclusive(self.root / "add.lock"):
                self.repo.worktree.add(path, commit)
            return []
        repo.worktree.clear_stale_locks()
        changed = repo.worktree.move(commit, keep=KEEP)
        _drop_bytecode(path, changed)
        return changed


def _drop_bytecode(root: Path, changed: list[str]) -> None:
    for rel in changed:
        if not rel.endswith(".py"):
            continue
        source = root / rel
        cache = source.parent / "__pycache__"
        if cache.is_dir():
            for pyc in cache.glob(f"{source.stem}.*.pyc"):
                pyc.unlink(missing_ok=True)

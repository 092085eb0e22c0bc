"""Copying commits between repositories of series': ``repo.remote.copy_from``, the one way.

Real repositories in tmp_path: a "cache" whose refs under refs/series/
name the commits, shallow as series' own cache is after a depth-1 pin
fetch, and a checkout that receives them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import git
from series.errors import InternalError
from series.git import Repo


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD").strip()


def _shallow_cache(tmp_path: Path) -> tuple[Repo, list[str]]:
    """A cache that holds commits c2 <- c3 on a shallow c1 (c0 is not there)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    commits = [_commit(origin, f"f{i}") for i in range(4)]
    cache = tmp_path / "cache.git"
    git(tmp_path, "init", "-q", "--bare", str(cache))
    git(cache, "fetch", "-q", "--depth=3", f"file://{origin}", "main:refs/series/stack/top")
    assert (cache / "shallow").read_text().split() == [commits[1]]
    return Repo(cache), commits


def test_copy_from_a_shallow_cache_brings_each_commit_and_writes_no_ref(tmp_path: Path) -> None:
    cache, commits = _shallow_cache(tmp_path)
    checkout = Repo.init(tmp_path / "work")
    checkout.remote.copy_from(cache, [commits[3], commits[3]])
    assert checkout.objects.has(commits[3]) and checkout.objects.has(commits[1])
    assert checkout.history.commits(commits[1], commits[3]) == commits[2:]
    assert checkout.refs.under("refs/") == {}  # the caller keeps them, in its transaction
    assert checkout.history.shallow_roots() == {commits[1]}


def test_copy_from_fetches_nothing_when_every_commit_is_here(tmp_path: Path) -> None:
    cache, commits = _shallow_cache(tmp_path)
    checkout = Repo.init(tmp_path / "work")
    checkout.remote.copy_from(cache, [commits[3]])
    (cache.path / "objects").rename(tmp_path / "gone")  # a fetch now would fail
    checkout.remote.copy_from(cache, [commits[3], commits[2]])
    assert checkout.objects.has(commits[2])


def test_copy_from_refuses_a_commit_no_ref_names(tmp_path: Path) -> None:
    cache, commits = _shallow_cache(tmp_path)
    checkout = Repo.init(tmp_path / "work")
    with pytest.raises(InternalError, match="has no ref in"):
        checkout.remote.copy_from(cache, ["1" * 40])
    assert not checkout.objects.has(commits[3])

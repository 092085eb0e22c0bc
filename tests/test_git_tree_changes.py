"""``Diffs.tree_changes``: what differs between two trees, read from git's objects in the
process (only the subtrees that differ), the same files and entries as ``git diff-tree
-r --no-renames`` lists; ``diff-tree`` itself where a tree cannot be read so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import git
from series.git.repo import Repo
from series.git.run import GitFailed

NAMES = st.sampled_from(["a", "b", "a.py", "a-b", "é", "d", "d.x", "z"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
KINDS = st.sampled_from(["one", "two", "exec", "link", "gone"])
TREES = st.dictionaries(PATHS, KINDS, max_size=8)


def _tree(repo: Path, files: dict[str, str]) -> str:
    """A tree of ``files`` (path -> kind), written through a scratch index: a path that
    is a prefix directory of another is left out (a file and a directory of one name)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "scratch")}
    (repo / ".git" / "scratch").unlink(missing_ok=True)
    paths = sorted(p for p, k in files.items() if k != "gone")
    paths = [p for p in paths if not any(q.startswith(p + "/") for q in paths)]
    lines = []
    for path in paths:
        kind = files[path]
        data = {"one": b"1\n", "two": b"2\n", "exec": b"1\n", "link": b"a"}[kind]
        oid = _hash(repo, data)
        mode = {"exec": "100755", "link": "120000"}.get(kind, "100644")
        lines.append(f"{mode} {oid}\t{path}\n")
    subprocess.run(
        ["git", "update-index", "--index-info"],
        cwd=repo,
        input="".join(lines).encode(),
        env=env,
        check=True,
    )
    return subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _hash(repo: Path, data: bytes) -> str:
    done = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True
    )
    return done.stdout.decode().strip()


def _git_says(repo: Path, old: str, new: str) -> dict[str, tuple[object, object]]:
    out = git(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
    fields = out.split("\0")
    found: dict[str, tuple[object, object]] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        head = meta.split()
        if len(head) == 5:
            zero = "0" * len(head[2])
            before = None if head[2] == zero else (head[0][1:], head[2])
            after = None if head[3] == zero else (head[1], head[3])
            found[path] = (before, after)
    return found


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(old=TREES, new=TREES)
def test_tree_changes_lists_what_diff_tree_lists(
    tmp_path: Path, old: dict[str, str], new: dict[str, str]
) -> None:
    repo = tmp_path / "repo"
    if not repo.exists():
        repo.mkdir()
        git(repo, "init", "-q")
    a, b = _tree(repo, old), _tree(repo, new)
    assert Repo(repo).diffs.tree_changes(a, b) == _git_says(repo, a, b)


def test_a_tree_that_cannot_be_read_is_diffed_by_git(tmp_path: Path) -> None:
    """A tree missing from the objects: git's own diff-tree answers (and fails so)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    a = _tree(repo, {"x/y": "one"})
    b = _tree(repo, {"x/y": "two"})
    assert Repo(repo).diffs.tree_changes(a, b) == _git_says(repo, a, b)
    (sub,) = [line.split()[2] for line in git(repo, "ls-tree", b).splitlines()]
    loose = repo / ".git" / "objects" / sub[:2] / sub[2:]
    loose.unlink()
    with pytest.raises(GitFailed, match="diff-tree"):  # git's own error, no answer
        Repo(repo).diffs.tree_changes(a, b)

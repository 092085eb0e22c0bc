"""Files put over a tree (``repo.index.rewrite``): the tree a scratch index gives, always.

``rewrite`` edits the trees on the files' paths (read from the long-lived
``cat-file``, written by one ``mktree``) where it can, and takes the scratch
index (``read-tree``, ``update-index --index-info``, ``write-tree``) where it
cannot. Either way the tree must be the one git's index gives for the same
lines: each case is checked against a scratch index built here with git itself.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import git
from series.git import Repo


def _repo(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """A repository with nested directories, an executable and a symlink; its tree and
    the ids of a few blobs."""
    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q")
    files = {
        "README.md": "hello\n",
        "a/one.py": "one\n",
        "a/b/two.py": "two\n",
        "a/b/c/three.py": "three\n",
        "a-b.txt": "dash sorts before the directory a/\n",
        "a.txt": "dot sorts after the directory a/ in git's order\n",
        "z/last.txt": "last\n",
    }
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    os.symlink("README.md", work / "link")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    tree = git(work, "rev-parse", "HEAD^{tree}").strip()
    blobs = [
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=work,
            input=f"blob {i}\n".encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
        for i in range(3)
    ]
    return work, tree, blobs


def _by_git(work: Path, tree: str, lines: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "scratch-index")}
    subprocess.run(["git", "read-tree", tree], cwd=work, env=env, check=True)
    subprocess.run(
        ["git", "update-index", "--index-info"],
        cwd=work,
        env=env,
        input=("\n".join(lines) + "\n").encode(),
        check=True,
    )
    return subprocess.run(
        ["git", "write-tree"], cwd=work, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


CASES = {
    "a file replaced": ["100644 {0}\tREADME.md"],
    "deep files replaced": ["100644 {0}\ta/b/c/three.py", "100755 {1}\ta/one.py"],
    "files added in old and new directories": [
        "100644 {0}\ta/b/new.py",
        "100644 {1}\tnew/dir/deep/f.txt",
        "100644 {2}\ta/0first.py",
    ],
    "names git orders around a directory": ["100644 {0}\ta.txt", "100644 {1}\ta-b.txt"],
    "an executable made plain, a symlink replaced": [
        "100644 {0}\trun.sh",
        "120000 {1}\tlink",
    ],
    "a file where a directory is (the scratch index answers)": ["100644 {0}\ta/b"],
    "a directory where a file is (the scratch index answers)": ["100644 {0}\tREADME.md/x"],
    "a removal (the scratch index answers)": [f"0 {'0' * 40}\tz/last.txt"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rewrite_gives_the_tree_a_scratch_index_gives(tmp_path: Path, case: str) -> None:
    work, tree, blobs = _repo(tmp_path)
    lines = [line.format(*blobs) for line in CASES[case]]
    assert Repo(work).index.rewrite(tree, lines) == _by_git(work, tree, lines, tmp_path)

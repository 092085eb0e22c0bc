"""Builders and real-git oracles for the check-conflicts tests.

Each case is a real tiny upstream, a real chain of patch commits (the
"author" clone, whose trees are exactly the stack series builds) and a
project whose manifest lists them. The oracles answer the same questions
as check-conflicts with porcelain git in a throwaway clone (cherry-pick,
merge, rebase), so the tests compare verdicts and trees with what git
itself does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    PatchSpec,
    Project,
    git,
    make_patches,
    make_upstream,
    manifest_text,
    replace_line,
)
from series.git import TreeMerge
from series.merge import Job, Merger


@dataclass
class Case:
    project: Project
    author: Path  # the clone holding the patch commits
    commits: list[str]  # the patch commits, in series order
    ids: list[str]

    def run_json(self, *args: str) -> tuple[int, dict[str, Any], str]:
        code, out, err = self.project.run("check-conflicts", "--json", *args)
        return code, json.loads(out) if out.strip() else {}, err


def spy_batches(monkeypatch: pytest.MonkeyPatch) -> list[list[Job]]:
    """Every batch of merges series asks git for from now on (``Merger.run``), in order."""
    batches: list[list[Job]] = []
    original = Merger.run

    def spy(self: Merger, jobs: Sequence[Job]) -> list[TreeMerge]:
        batches.append(list(jobs))
        return original(self, jobs)

    monkeypatch.setattr(Merger, "run", spy)
    return batches


def no_stdbuf(tmp: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """How series' merge stream (series.git.mergetree.MergeStream) runs from now on:
    ``stream``, as on this machine (coreutils' ``stdbuf`` unbuffers git); ``none``, PATH
    with git and no ``stdbuf`` (the replay goes to batches); ``buffering``, a ``stdbuf``
    that leaves git's output buffered (as where it cannot unbuffer git: the stream takes
    one answer by ending git's input, then closes)."""
    if how == "stream":
        return
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    assert real is not None
    (bin_dir / "git").symlink_to(real)
    if how == "buffering":
        (bin_dir / "stdbuf").write_text('#!/bin/sh\nshift\nexec "$@"\n')
        (bin_dir / "stdbuf").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def make_case(
    tmp: Path,
    specs: list[PatchSpec],
    *,
    applies_alone: dict[str, bool] | None = None,
) -> Case:
    """Like helpers.make_project, plus empty patches and applies_alone flags."""
    upstream = tmp / "upstream"
    commit = make_upstream(upstream)
    author = tmp / "author"
    commits = make_patches(upstream, author, specs, tmp / "project" / "patches")
    text = manifest_text(str(upstream), commit, specs)
    for pid, flag in (applies_alone or {}).items():
        anchor = f'id = "{pid}"\n'
        text = text.replace(anchor, f"{anchor}applies_alone = {str(flag).lower()}\n", 1)
    (tmp / "project" / "series.toml").write_text(text)
    return Case(Project(tmp / "project", upstream, commit), author, commits, [s.id for s in specs])


def upstream_commit(
    upstream: Path, branch: str, subject: str, edits: dict[str, tuple[str, str]]
) -> str:
    """Commit ``edits`` on ``branch`` of the upstream (made from v1.0 when new)."""
    back = git(upstream, "symbolic-ref", "--short", "HEAD")
    if git(upstream, "branch", "--list", branch):
        git(upstream, "checkout", "-q", branch)
    else:
        git(upstream, "checkout", "-q", "-b", branch, "v1.0")
    for name, (old, new) in edits.items():
        replace_line(upstream / name, old, new)
    git(upstream, "commit", "-qam", subject)
    sha = git(upstream, "rev-parse", "HEAD")
    git(upstream, "checkout", "-q", back)
    return sha


# -- oracles: the same questions, asked of porcelain git ------------------------


@dataclass(frozen=True)
class Picked:
    clean: bool
    tree: str | None
    commit: str | None
    files: tuple[str, ...]


class RealGit:
    """A throwaway clone of the author repository with the upstream fetched."""

    def __init__(self, case: Case, tmp: Path, *, fetch: str | None = None) -> None:
        self.path = tmp / "oracle"
        git(tmp, "clone", "-q", str(case.author), str(self.path))
        if fetch:
            git(self.path, "fetch", "-q", str(case.project.upstream), f"{fetch}:refs/oracle/onto")

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=self.path, capture_output=True, text=True)

    def cherry_pick(self, onto: str, commits: list[str], *, theirs: bool = False) -> Picked:
        """Cherry-pick ``commits`` in order onto ``onto``; the outcome of the last one."""
        git(self.path, "checkout", "-q", "--detach", onto)
        option = ["-X", "theirs"] if theirs else []
        for i, commit in enumerate(commits):
            last = i == len(commits) - 1
            done = self._git(
                "cherry-pick", "--allow-empty", "--keep-redundant-commits", *option, commit
            )
            if done.returncode != 0:
                files = tuple(git(self.path, "diff", "--name-only", "--diff-filter=U").split())
                self._git("cherry-pick", "--abort")
                assert last, f"earlier pick {commit} failed: {done.stderr}"
                return Picked(False, None, None, files)
        return Picked(
            True,
            git(self.path, "rev-parse", "HEAD^{tree}"),
            git(self.path, "rev-parse", "HEAD"),
            (),
        )

    def merges_cleanly(self, one: str, two: str) -> bool:
        git(self.path, "checkout", "-q", "--detach", one)
        done = self._git("merge", "-q", "--no-edit", two)
        if done.returncode != 0:
            self._git("merge", "--abort")
        return done.returncode == 0

    def rebase(self, onto: str, tip: str, *, theirs: bool = False) -> tuple[list[str], str]:
        """``git rebase`` of v1.0..tip onto ``onto``, skipping every stop.

        Returns the Series-Id of each commit it stopped at, and the final tree.
        """
        git(self.path, "checkout", "-q", "-B", "replay", tip)
        option = ["-X", "theirs"] if theirs else []
        done = self._git("rebase", *option, "--onto", onto, "v1.0")
        stopped = []
        while done.returncode != 0:
            head = git(self.path, "log", "-1", "--format=%B", "REBASE_HEAD")
            stopped.append(head.rsplit("Series-Id: ", 1)[1].strip())
            done = self._git("rebase", "--skip")
        return stopped, git(self.path, "rev-parse", "HEAD^{tree}")


def real_matrix(oracle: RealGit, pin: str, commits: list[str], ids: list[str]) -> dict[str, Any]:
    """alone and pair verdicts, the check-conflicts way, from porcelain git."""
    alone = {pid: oracle.cherry_pick(pin, [c]) for pid, c in zip(ids, commits, strict=True)}
    pairs = {}
    for i, a in enumerate(ids):
        for j in range(i + 1, len(ids)):
            b = ids[j]
            one, two = alone[a], alone[b]
            if one.clean and two.clean:
                assert one.commit and two.commit
                pairs[(a, b)] = (
                    "commute" if oracle.merges_cleanly(one.commit, two.commit) else "conflict"
                )
            elif one.clean:
                assert one.commit
                on_top = oracle.cherry_pick(one.commit, [commits[j]])
                pairs[(a, b)] = "needs" if on_top.clean else "n/a"
            else:
                pairs[(a, b)] = "n/a"
    return {"alone": alone, "pairs": pairs}

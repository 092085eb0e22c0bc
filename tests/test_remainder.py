"""The remainder engine (series.evidence.remainder) on real repositories.

Each case is a tiny repository: a base commit, a patch commit on it with
hunks far apart, and an upstream branch from the base whose commits take
some hunks as they are (the patch's own lines), some in another form, and
leave the rest. The engine's verdicts per hunk, the commits it names and
the proposed remainder are checked against the files, and, where git would
not stop, against a plain ``git cherry-pick``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from helpers import git, write
from series.evidence import Ask, Remainder, weigh
from series.evidence.hunks import split
from series.git import Repo
from series.merge import Merger, Node

BASE = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(30))


def cat(repo: Path, rev: str, env: Mapping[str, str] | None = None) -> str:
    """``git cat-file blob REV`` (``env``: the scratch object store the trees are in)."""
    argv = ["git", "cat-file", "blob", rev]
    return subprocess.run(
        argv,
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def edit(text: str, i: int, value: str) -> str:
    return text.replace(f"    return {i}\n", f"    return {value}\n", 1)


def commit(repo: Path, text: str, subject: str) -> str:
    write(repo, {"core.py": text})
    git(repo, "commit", "-qam", subject)
    return git(repo, "rev-parse", "HEAD")


class World:
    """base, a patch changing f1, f12 and f24, and an upstream branch."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "repo"
        self.path.mkdir()
        git(self.path, "init", "-q")
        write(self.path, {"core.py": BASE, "other.py": "x = 1\n"})
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", "base")
        self.base = git(self.path, "rev-parse", "HEAD")
        patched = edit(edit(edit(BASE, 1, "'one'"), 12, "'twelve'"), 24, "'twenty-four'")
        self.patch = commit(self.path, patched, "fork: three changes (#7)")
        git(self.path, "checkout", "-q", "-b", "up", self.base)
        self.text = BASE

    def upstream(self, i: int, value: str, subject: str) -> str:
        self.text = edit(self.text, i, value)
        return commit(self.path, self.text, subject)

    def weigh(self, evidence: tuple[str, ...] = ()) -> tuple[Remainder, Repo, str]:
        repo = Repo(self.path)
        tip = git(self.path, "rev-parse", "up")
        commits = repo.history.log_files([tip, f"^{self.base}"])

        def node(c: str) -> Node:
            return Node(repo.objects.tree_of(c), c)

        with repo.merge.scratch_objects() as env:
            merger = Merger(repo, env)
            ask = Ask("P", node(self.base), node(self.patch), node(tip), evidence)
            found = weigh(merger, [ask], commits)["P"]
            text = cat(self.path, f"{found.tree}:core.py", env)
        return found, repo, text

    def cherry_pick(self) -> subprocess.CompletedProcess[str]:
        git(self.path, "checkout", "-q", "-b", "pick", "up")
        return subprocess.run(
            ["git", "cherry-pick", self.patch], cwd=self.path, capture_output=True, text=True
        )


def states(found: Remainder) -> list[tuple[int, str]]:
    """(function number, state) per hunk: f_i is at line 4i + 2, its hunk from 4i - 1."""
    return [((h.unit.old[0] + 1) // 4, h.state) for h in found.hunks]


def test_split_cuts_one_unit_per_hunk_each_applying_alone(tmp_path: Path) -> None:
    w = World(tmp_path)
    repo = Repo(w.path)
    units = split(repo.diffs.trees(repo.objects.tree_of(w.base), repo.objects.tree_of(w.patch)))
    assert [u.path for u in units] == ["core.py"] * 3
    trees = repo.index.apply_each(repo.objects.tree_of(w.base), [u.diff for u in units])
    for unit, tree, (i, v) in zip(
        units, trees, [(1, "'one'"), (12, "'twelve'"), (24, "'twenty-four'")], strict=True
    ):
        assert tree is not None
        assert cat(w.path, f"{tree}:core.py") == edit(BASE, i, v)
        assert unit.label.startswith("core.py:")


def test_partly_upstream_in_own_lines_is_clean_and_equals_git(tmp_path: Path) -> None:
    w = World(tmp_path)
    took = w.upstream(1, "'one'", "take f1 (#7)")
    w.upstream(28, "'upstream'", "unrelated")
    found, _, text = w.weigh((took,))
    assert states(found) == [(1, "upstream"), (12, "missing"), (24, "missing")]
    assert found.verdict == "partial" and found.clean
    assert found.hunks[0].commits == (took,)
    assert found.commits == (took,)
    assert w.cherry_pick().returncode == 0
    assert git(w.path, "rev-parse", "HEAD^{tree}") == found.tree
    assert "return 'twelve'" in text and "return 'upstream'" in text


def test_own_lines_found_without_pr_evidence(tmp_path: Path) -> None:
    w = World(tmp_path)
    took = w.upstream(12, "'twelve'", "someone else wrote the same")
    found, _, _ = w.weigh()
    assert states(found)[1] == (12, "upstream")
    assert found.hunks[1].commits == (took,)
    assert found.evidence == (took,)
    assert found.verdict == "partial"


def test_partly_upstream_in_another_form_proposes_upstream_side(tmp_path: Path) -> None:
    w = World(tmp_path)
    took = w.upstream(12, "'TWELVE'", "take f12, written otherwise (#7)")
    found, _, text = w.weigh((took,))
    assert states(found) == [(1, "missing"), (12, "other-form"), (24, "missing")]
    assert found.hunks[1].commits == (took,)
    assert found.verdict == "partial" and not found.clean
    assert text == edit(edit(edit(BASE, 1, "'one'"), 12, "'TWELVE'"), 24, "'twenty-four'")
    assert "<<<<<<<" not in text
    assert w.cherry_pick().returncode != 0  # git stops here: the engine proposes instead


def test_conflict_with_a_commit_without_evidence_is_an_ordinary_conflict(tmp_path: Path) -> None:
    w = World(tmp_path)
    other = w.upstream(24, "'upstream'", "unrelated change of f24")
    found, _, _ = w.weigh()
    assert states(found) == [(1, "missing"), (12, "missing"), (24, "conflict")]
    assert found.hunks[2].commits == (other,)
    assert found.verdict == "none"
    assert found.conflicts and not found.other_form


def test_fully_upstream_own_lines_and_other_form(tmp_path: Path) -> None:
    w = World(tmp_path)
    a = w.upstream(1, "'one'", "f1 (#7)")
    b = w.upstream(12, "'twelve'", "f12 (#7)")
    c = w.upstream(24, "'24'", "f24 otherwise (#7)")
    found, _, text = w.weigh((a, b, c))
    assert states(found) == [(1, "upstream"), (12, "upstream"), (24, "other-form")]
    assert found.verdict == "full"
    assert text == w.text  # nothing of the patch is left
    assert [h.commits for h in found.hunks] == [(a,), (b,), (c,)]


def test_not_upstream_equals_git(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.upstream(28, "'upstream'", "unrelated")
    found, _, _ = w.weigh()
    assert found.verdict == "none" and found.clean
    assert {h.state for h in found.hunks} == {"missing"}
    assert w.cherry_pick().returncode == 0
    assert git(w.path, "rev-parse", "HEAD^{tree}") == found.tree

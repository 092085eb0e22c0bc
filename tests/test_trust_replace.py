"""A replace ref or a graft in the checkout or the cache changes nothing series answers.

git reads ``refs/replace/<id>`` as "show this other object wherever <id> is
asked for", unless ``GIT_NO_REPLACE_OBJECTS`` is set. series names every
commit and tree by id and keeps records by id (its state, the patch-ids, the
files each commit touched), and its diffs already ran without replacements
(through an empty repository, series.git.diffs): on main, the other git
commands it ran in the checkout honoured them. With P1's commit replaced by
another, `status` listed every patch as drifting from patches/ while saying
0 unexported, and `export` refused: "branch series does not sit on the
upstream base" (it does). ``.git/info/grafts`` (git's older way of giving
a commit other parents) did the same: with P2 grafted onto the pin, export
dropped P1 and folded its change into P2's file. series now runs every git
with ``GIT_NO_REPLACE_OBJECTS`` and an empty ``GIT_GRAFT_FILE``: it reads
the objects themselves, as its diffs did, and says so where it reports on
the checkout (`status`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from rebase_helpers import moving_project


def _git_in(repo: Path, argv: list[str], text: str) -> str:
    return subprocess.run(
        ["git", *argv], cwd=repo, input=text, check=True, capture_output=True, text=True
    ).stdout.strip()


def _replacement(repo: Path, commit: str) -> str:
    """A commit like ``commit`` (same parents and message) with another tree: a file added."""
    listing = git(repo, "ls-tree", f"{commit}^{{tree}}")
    extra = _git_in(repo, ["hash-object", "-w", "--stdin"], "replaced\n")
    made = _git_in(repo, ["mktree"], f"{listing}\n100644 blob {extra}\tREPLACED\n")
    parents = git(repo, "log", "-1", "--format=%P", commit).split()
    message = git(repo, "log", "-1", "--format=%B", commit)
    argv = ["commit-tree", made, *[a for p in parents for a in ("-p", p)]]
    return _git_in(repo, argv, message)


Said = list[tuple[str, int, str, str]]


def _answers(project: Project) -> tuple[Said, dict[str, bytes], str]:
    """What status, export (worked out, not recalled), check-conflicts and apply say and
    write, the project's directory left out (and check-conflicts' time taken)."""
    said: Said = []
    for command in ("status", "export", "check-conflicts", "apply"):
        if command == "export":
            (project.work / ".git" / "series" / "verified.json").unlink(missing_ok=True)
        code, out, err = project.run(command)
        here = str(project.root.parent)
        err = "" if command == "check-conflicts" else err  # its time taken
        said.append((command, code, out.replace(here, "TMP"), err.replace(here, "TMP")))
    tree = git(project.work, "--no-replace-objects", "rev-parse", "HEAD^{tree}", "HEAD")
    return said, project.patch_bytes(), tree


def _applied(tmp: Path) -> Project:
    project = make_project(tmp)
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == 0, err
    return project


@pytest.mark.parametrize("which", ["P1", "P3", "pin"])
def test_a_replace_ref_in_the_checkout_changes_nothing_series_says_or_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """P1's commit, the tip's (P3) or the pin's replaced in the checkout by a commit with
    another tree: status, export, check-conflicts and apply say and write what they do
    without it, but for status's note naming the replacement. On main, with P1 replaced,
    status listed every patch as drifting and export refused, exit 4."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "plain-cache"))
    plain = _answers(_applied(tmp_path / "plain"))
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "replaced-cache"))
    project = _applied(tmp_path / "replaced")
    work = project.work
    commits = git(work, "rev-list", "--reverse", "HEAD").split()
    target = {"P1": commits[1], "P3": commits[-1], "pin": commits[0]}[which]
    git(work, "replace", target, _replacement(work, target))
    said, patches, tree = _answers(project)
    plain_said, plain_patches, plain_tree = plain
    assert patches == plain_patches
    assert tree.split()[0] == plain_tree.split()[0]
    status = said[0]
    assert "refs/replace" in status[2], status
    note = [line for line in status[2].splitlines() if "refs/replace" in line]
    assert said[1:] == plain_said[1:]
    assert [line for line in status[2].splitlines() if line not in note] == [
        line for line in plain_said[0][2].splitlines()
    ]
    assert git(work, "replace", "-l").strip() == target  # the user's replacement kept


def test_a_replace_ref_in_the_cache_changes_nothing_series_says_or_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin replaced in the per-user cache's repository (which a user can write as
    well): a fresh apply builds the same commits, export writes the same files."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "plain-cache"))
    plain = _answers(_applied(tmp_path / "plain"))
    cache = tmp_path / "replaced-cache"
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    project = _applied(tmp_path / "replaced")
    repos = [c.parent for c in cache.rglob("config") if (c.parent / "objects").is_dir()]
    assert repos
    for repo in repos:
        git(repo, "replace", project.commit, _replacement(repo, project.commit))
    git(project.work, "replace", "-l")
    project.run("apply", "--force")
    assert _answers(project) == plain


def test_a_rebase_with_a_replace_ref_in_the_checkout_moves_the_commits_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rebase --onto main`` with the tip's commit replaced in the checkout: the same
    patch files, series.toml and commits as without the replacement."""

    def rebased(tmp: Path, replace: bool) -> object:
        monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp / "cache"))
        project = moving_project(tmp, carries_p3=False)
        if replace:
            tip = git(project.work, "rev-parse", "HEAD").strip()
            git(project.work, "replace", tip, _replacement(project.work, tip))
        code, out, err = project.run(
            "rebase", "--onto", "main", "--upstream", str(project.upstream)
        )
        assert code == 0, err
        tree = git(project.work, "--no-replace-objects", "rev-parse", "HEAD^{tree}", "HEAD")
        manifest = (project.root / "series.toml").read_text()
        return (
            out.replace(str(tmp), "TMP"),
            manifest.replace(str(tmp), "TMP"),
            project.patch_bytes(),
            tree,
        )

    assert rebased(tmp_path / "replaced", True) == rebased(tmp_path / "plain", False)


def test_a_graft_in_the_checkout_changes_nothing_series_says_or_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.git/info/grafts`` giving P2's commit the pin as its parent (P1 gone from git's
    history): status, export, check-conflicts and apply as without it, but for status's
    note. On main export dropped P1 (its file removed) and wrote P1's change into P2's
    file; status listed every patch as drifting."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "plain-cache"))
    plain_said, plain_patches, plain_tree = _answers(_applied(tmp_path / "plain"))
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "grafted-cache"))
    project = _applied(tmp_path / "grafted")
    commits = git(project.work, "rev-list", "--reverse", "HEAD").split()
    grafts = project.work / ".git" / "info" / "grafts"
    grafts.parent.mkdir(exist_ok=True)
    grafts.write_text(f"{commits[2]} {commits[0]}\n")
    said, patches, tree = _answers(project)
    assert patches == plain_patches
    assert tree.split()[0] == plain_tree.split()[0]
    note = [line for line in said[0][2].splitlines() if "info/grafts" in line]
    assert note and "1 commit(s)" in note[0], said[0]
    assert [line for line in said[0][2].splitlines() if line not in note] == (
        plain_said[0][2].splitlines()
    )
    assert said[1:] == plain_said[1:]
    assert grafts.read_text() == f"{commits[2]} {commits[0]}\n"  # the user's graft kept

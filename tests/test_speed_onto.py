"""What ``series rebase --onto`` asks of git and of the system (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is how the rebase starts its git processes and how many it
starts, and that what it writes and says stays the same.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GitShim, Project, git
from rebase_helpers import moving_project, resolve_p1

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


SDIST_ONLY = {"series.upstream.sdist_download", "tarfile", "html.parser"}


def test_onto_starts_its_git_processes_without_forking_series(tmp_path: Path) -> None:
    """Every git process of a rebase is started by subprocess (``vfork``, nothing run in
    the child but C), not by series.git.child.spawn's ``fork`` (series' page tables
    copied, Python run in the child): a fresh process, as a person runs it. A git pin's
    rebase loads none of the sdist download and import (HTML parser, tarfile)."""
    project = moving_project(tmp_path, conflict=True)
    probe = (
        "import os, sys\n"
        "forks = []\n"
        "real = os.fork\n"
        "def counted():\n"
        "    forks.append(1)\n"
        "    return real()\n"
        "os.fork = counted\n"
        f"sys.argv = ['series', '-C', {str(project.root)!r}, 'rebase', '--onto', 'main',"
        f" '--upstream', {str(project.upstream)!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print('forks', len(forks), 'subprocess' in sys.modules)\n"
        f"print(sorted(set(sys.modules) & {set(SDIST_ONLY)!r}))\n"
        "sys.exit(code)\n"
    )
    argv = [sys.executable, "-c", probe]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr  # stopped at P1's conflict: a dozen git processes
    assert proc.stdout.split("\n")[-3] == "forks 0 True", proc.stdout
    assert proc.stdout.split("\n")[-2] == "[]", proc.stdout  # a git pin: no sdist machinery


def _recorded(tmp_path: Path, *, extra: bool = False) -> tuple[Project, Path, str]:
    """A project rebased onto ``main`` with P1's conflict resolved and recorded (with
    ``extra``, the resolution also edits pkg/util.py), a copy of it taken before that
    rebase (``tmp_path / "two"``), and the upstream's path."""
    project = moving_project(tmp_path / "one", conflict=True)
    other = tmp_path / "two"
    shutil.copytree(project.root, other, symlinks=True)
    up = str(project.upstream)
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", up)
    assert code == 3, err
    resolve_p1(project.work, "return -11")
    if extra:
        util = project.work / "pkg" / "util.py"
        util.write_text(util.read_text() + "EXTRA = 1\n")
        git(project.work, "add", "pkg/util.py")
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    return project, other, up


def test_onto_marks_up_and_replays_a_recorded_resolution_in_one_scratch_index(
    tmp_path: Path,
) -> None:
    """P1's conflict recorded (resolved once, --continue), then the same rebase of a copy:
    the resolution gives exactly the blob its ``index`` line names, so the conflict's
    marked-up tree and the resolved one are written as edits of the merged tree (one
    ``mktree``, no scratch index: no ``read-tree``, ``write-tree`` or ``apply``), and the
    snapshot of series.toml and patches/ is built in an index that starts empty (no empty
    tree written, nor read)."""
    project, other, up = _recorded(tmp_path)
    recorded = sorted((project.root / "resolutions" / "P1").glob("*.patch"))
    assert len(recorded) == 1, recorded
    shutil.copytree(project.root / "resolutions", other / "resolutions")
    shimmed = GitShim(tmp_path)
    out, calls = shimmed.run(other, "rebase", "--onto", "main", "--upstream", up)
    assert "resolved (recorded)" in out
    began = "update-ref -m series rebase: start"
    start = next(k for k, c in enumerate(calls) if c.startswith(began))
    end = next(k for k, c in enumerate(calls) if c.startswith("format-patch "))
    walk = [c.split()[0] for c in calls[start:end]]
    counts = [walk.count(c) for c in ("read-tree", "write-tree", "apply", "mktree")]
    assert counts == [0, 0, 0, 1], walk
    assert not [c for c in calls if c.startswith("hash-object -t tree")], calls
    assert f"read-tree {EMPTY_TREE}" not in calls
    # The same files and commits as the first rebase made.
    assert (other / "series.toml").read_text() == (project.root / "series.toml").read_text()
    assert git(other / "work", "rev-parse", "series^{tree}") == git(
        project.work, "rev-parse", "series^{tree}"
    )
    assert _patch_files(other) == _patch_files(project.root)


@pytest.mark.parametrize("how", ["hunk edited by hand", "another file too"])
def test_a_resolution_that_is_not_a_plain_edit_of_its_blobs_is_applied_by_git(
    tmp_path: Path, how: str
) -> None:
    """A recorded resolution whose hunks no longer give the blob its ``index`` line names
    (edited by hand), or that also edits a file without a conflict, is replayed as it
    always was: ``apply --cached`` on a scratch index of the marked-up tree, whose result
    the rebase commits (the hand-edited line; the other file's change)."""
    project, other, up = _recorded(tmp_path, extra=how == "another file too")
    (recorded,) = (project.root / "resolutions" / "P1").glob("*.patch")
    text = recorded.read_text()
    assert ("+EXTRA = 1\n" in text) == (how == "another file too")
    if how == "hunk edited by hand":
        assert text.count("+    return -11\n") == 1
        recorded.write_text(text.replace("+    return -11\n", "+    return -12\n"))
    shutil.copytree(project.root / "resolutions", other / "resolutions")
    out, calls = GitShim(tmp_path).run(other, "rebase", "--onto", "main", "--upstream", up)
    assert "resolved (recorded)" in out
    start = next(
        k for k, c in enumerate(calls) if c.startswith("update-ref -m series rebase: start")
    )
    end = next(k for k, c in enumerate(calls) if c.startswith("format-patch "))
    walk = [c.split()[0] for c in calls[start:end]]
    assert (walk.count("read-tree"), walk.count("apply")) == (1, 1), walk
    core = git(other / "work", "show", "series:pkg/core.py")
    assert ("return -12" in core) == (how == "hunk edited by hand")
    assert ("return -11" in core) == (how == "another file too")
    util_now = git(other / "work", "show", "series:pkg/util.py")
    assert ("EXTRA = 1" in util_now) == (how == "another file too")


def test_check_conflicts_replays_a_recorded_resolution_in_its_scratch_store_in_one_index(
    tmp_path: Path,
) -> None:
    """check-conflicts merges in a scratch object store, where the trees cannot be edits of
    the repository's own (no ``mktree``): a recorded resolution that applies exactly (its
    hunks, at their lines, give the blobs its index lines name: the rebase's answer,
    docs/hardening.md row 880) is written as the marked-up tree and the resolved one in
    one scratch index (``Index.rewrite_twice``), not in two, and with no ``apply
    --cached``, which answers only where that does not."""
    project, _, _ = _recorded(tmp_path)
    other = moving_project(tmp_path / "three", conflict=True)
    shutil.copytree(project.root / "resolutions", other.root / "resolutions")
    argv = ["check-conflicts", "--no-matrix", "--onto", "main", "--upstream", str(other.upstream)]
    out, calls = GitShim(tmp_path).run(other.root, *argv)
    assert "resolved by resolutions/P1/" in " ".join(out.split())
    marked = next(i for i, c in enumerate(calls) if c.startswith("merge-file "))
    after = [c.split()[0] for c in calls[marked + 1 :]]
    assert (after.count("read-tree"), after.count("write-tree")) == (1, 2), calls
    assert not any(c.startswith("apply --cached /") for c in calls), calls


def _patch_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "patches").glob("*.patch"))}


def test_the_summary_diffs_only_the_files_whose_raw_lines_differ(tmp_path: Path) -> None:
    """Of the pairs whose raw diffs differ, only the files whose raw lines differ are read
    as patches (literal paths: ``c[1].py`` is not a pattern for ``c1.py``), and every
    pair is classified as from the whole diffs: context only, content changed, a file
    added, unchanged."""
    from series.git import Repo
    from series.stack.diffclass import CONTENT, CONTEXT, UNCHANGED, classify_diffs, differing_files

    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    names = ("a.py", "b.py", "c1.py", "c[1].py")
    for name in names:
        (work / name).write_text("".join(f"line {i}\n" for i in range(30)))
    git(work, "add", ".")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD")

    def patch(name: str, old: str, new: str, *more: str) -> None:
        for path in (name, *more):
            text = (work / path).read_text()
            (work / path).write_text(text.replace(old, new))
        git(work, "commit", "-qam", f"patch {name}")

    patch("a.py", "line 10\n", "line ten\n", "c1.py", "c[1].py")  # c[1].py: context moves
    patch("b.py", "line 20\n", "line twenty\n", "c1.py")  # b.py: upstream edits its line
    patch("a.py", "line 25\n", "line 25 again\n")  # a.py: context moves under it too
    old = git(work, "rev-list", "--reverse", f"{base}..HEAD").split()
    git(work, "checkout", "-q", "-b", "up", base)
    for name, line in (("c[1].py", "line 12\n"), ("b.py", "line 20\n"), ("a.py", "line 23\n")):
        text = (work / name).read_text()
        (work / name).write_text(text.replace(line, line.replace("line", "LINE")))
    git(work, "commit", "-qam", "upstream")
    for commit in old:
        git(work, "cherry-pick", "-X", "theirs", commit)
    new = git(work, "rev-list", "--reverse", "up~3..up").split()
    repo = Repo(work)
    raw = repo.diffs.raw_commits([*old, *new])
    pairs = [(was, now) for was, now in zip(old, new, strict=True) if raw[was] != raw[now]]
    paths = differing_files(raw, pairs)
    assert paths == ["a.py", "b.py", "c[1].py"], paths
    full = repo.diffs.commits([c for pair in pairs for c in pair])
    part = repo.diffs.commits([c for pair in pairs for c in pair], paths)
    assert b"c1.py" not in b"".join(part.values())
    classes = [classify_diffs(full[was], full[now]) for was, now in pairs]
    assert classes == [CONTEXT, CONTENT, CONTEXT], classes
    assert [classify_diffs(part[w], part[n]) for w, n in pairs] == classes
    assert classify_diffs(full[old[0]], full[old[0]]) == UNCHANGED

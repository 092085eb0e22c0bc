"""series rebase on real tiny repositories, checked against plain git."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from helpers import GitShim, Project, git
from rebase_helpers import (
    commit_upstream,
    git_rebase_trees,
    manifest,
    moving_project,
    resolve_p1,
    snapshot,
)
from series.git.diffs import Diffs
from series.stack import rebase_finish


def rebase(project: Project, *args: str) -> tuple[int, str, str]:
    return project.run("rebase", "--onto", "main", "--upstream", str(project.upstream), *args)


def test_clean_rebase_equals_git_rebase(tmp_path: Path) -> None:
    project = moving_project(tmp_path)
    oracle = git_rebase_trees(project, "main")
    code, out, err = rebase(project)
    assert code == 0, err
    work = project.work
    main = git(project.upstream, "rev-parse", "main")
    ours = git(work, "log", "--reverse", "--format=%T", f"{main}..series").split()
    assert ours == oracle
    pin = manifest(project)["upstream"]
    assert (pin["commit"], pin["ref"], pin["source"]) == (main, "main", "git")
    assert "sdist" not in pin
    assert git(work, "rev-parse", "refs/series/base") == main
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "status", "--porcelain") == ""
    assert git(work, "for-each-ref", "refs/series/rebase/").count("\n") == 0  # only last
    assert "unchanged" in out
    code, out, err = project.run("apply")  # patches/ and the checkout agree
    assert code == 0 and "up to date" in out, err
    code, out, err = project.run("export")  # the files are export's, byte for byte
    assert code == 0 and "0 file(s) changed" in out, err


def test_empty_patch_is_dropped_with_a_record_never_exported(tmp_path: Path) -> None:
    project = moving_project(tmp_path, carries_p3=True)
    oracle = git_rebase_trees(project, "main")  # git drops the now-empty P3 too
    code, _out, err = rebase(project)
    assert code == 0, err
    ours = git(project.work, "log", "--reverse", "--format=%T", "refs/series/base..series")
    assert ours.split() == oracle
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P1", "P2"]
    (dropped,) = data["dropped"]
    assert dropped["id"] == "P3" and dropped["reason"].startswith("empty on the new base")
    assert not (project.root / "patches" / "perf-P3.patch").exists()


def test_conflict_resolved_continued_recorded_and_replayed_elsewhere(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    project = moving_project(tmp_path / "a", conflict=True)
    shutil.copytree(project.root, pristine, ignore=shutil.ignore_patterns("work"))
    code, _, err = rebase(project)
    assert code == 3, err
    assert "P1" in err and "pkg/core.py" in err and "core: f1 returns -1" in err
    assert "<<<<<<< new base" in (project.work / "pkg" / "core.py").read_text()
    assert git(project.work, "ls-files", "-u") != ""
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "still has unresolved conflicts" in err
    resolve_p1(project.work)
    code, out, err = project.run("rebase", "--continue")
    assert code == 0, err
    (recorded,) = (project.root / "resolutions" / "P1").glob("*.patch")
    assert "resolved (recorded)" in out
    assert "return 1001" in (project.work / "pkg" / "core.py").read_text()
    # Another machine: the old series plus the recorded resolution, a new cache.
    other = Project(pristine, project.upstream, project.commit)
    shutil.copytree(project.root / "resolutions", pristine / "resolutions")
    assert other.run("apply")[0] == 0
    code, out, err = rebase(other)
    assert code == 0, err
    assert other.patch_bytes() == project.patch_bytes()
    assert recorded.name in out


def test_conflicted_files_added_with_their_markers_are_not_a_resolution(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    conflict = git(project.work, "ls-files", "-u")
    git(project.work, "add", "pkg/core.py")  # the markers as they were written
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict stages are back in the index" in err, err
    assert git(project.work, "ls-files", "-u") == conflict
    assert not (project.root / "resolutions").exists()
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    assert all(b"<<<<<<<" not in data for data in project.patch_bytes().values())


def test_changed_conflict_refuses_the_old_resolution(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    rebase(project)
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    # Move on to an upstream where P1 meets another conflict in the same place.
    up = project.upstream
    git(up, "checkout", "-q", "-b", "other", "v1.0")
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -2\n", "core: f1 returns -2")
    code, _out, err = project.run("rebase", "--onto", "other", "--upstream", str(up))
    assert code == 3, err
    assert "made for another conflict" in err


def test_skip_drops_the_patch_with_a_record(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    conflicting = git(project.upstream, "rev-parse", "main")
    code, _out, err = project.run("rebase", "--skip")
    assert code == 0, err
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P2", "P3"]
    (dropped,) = data["dropped"]
    assert dropped["id"] == "P1" and "--skip" in dropped["reason"]
    assert dropped["upstream_commit"] == conflicting
    assert not (project.root / "patches" / "perf-P1.patch").exists()
    assert git(project.work, "status", "--porcelain") == ""


def test_a_skip_that_stops_again_waited_for_its_reset_of_the_checkout(tmp_path: Path) -> None:
    """--skip resets the checkout beside the merges of the patches after the stop
    (series.stack.rebase_resume, ``Run.settle``): a --skip that stops at the next
    conflict waited for that move before the stop's transaction, so no move is left
    recorded as cut short, and the checkout holds the next conflict."""
    project = moving_project(tmp_path, conflict=True)
    commit_upstream(project.upstream, "pkg/core.py", "return 9\n", "return -9\n", "core: f9")
    assert rebase(project)[0] == 3  # P1 conflicts
    code, _out, err = project.run("rebase", "--skip")
    assert code == 3 and "P3" in err, err  # P1 skipped, P2 replayed, P3 conflicts
    assert not list((project.work / ".git").glob("series-git-*"))  # no move cut short
    unmerged = git(project.work, "ls-files", "-u", "--", "pkg/core.py").splitlines()
    assert sorted(line.split()[2] for line in unmerged) == ["1", "2", "3"]
    assert ">>>>>>> P3" in (project.work / "pkg" / "core.py").read_text()
    code, _out, err = project.run("rebase", "--abort")
    assert code == 0, err


class SlowReset(GitShim):
    """A ``git`` shim that sleeps a second before it runs a ``read-tree --reset`` (the
    real git, started late): a reset of the checkout that ends long after the work
    beside it."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, prelude='case "$*" in *"read-tree --reset"*) sleep 1 ;; esac\n')


def test_a_skip_waits_for_its_reset_however_late_it_ends(tmp_path: Path) -> None:
    """--skip's reset of the checkout runs beside the merges (``Run.settle``). Here git
    starts that reset a second late, so the merges and the next conflict are known long
    before it ends: the skip waits for it before the stop's transaction and the conflict
    written into the checkout (written first, the reset would wipe it; or the stop's
    ``read-tree -m`` would meet the skipped conflict's stages), and exits as the stop."""
    project = moving_project(tmp_path, conflict=True)
    commit_upstream(project.upstream, "pkg/core.py", "return 9\n", "return -9\n", "core: f9")
    assert rebase(project)[0] == 3  # P1 conflicts
    shim = SlowReset(tmp_path)
    code, _out, err, calls = shim.said(project.root, "rebase", "--skip")
    assert code == 3 and "P3" in err, err  # P1 skipped, P2 replayed, P3 conflicts
    assert any("read-tree --reset" in call for call in calls), calls  # the late reset ran
    assert not list((project.work / ".git").glob("series-git-*"))  # no move cut short
    unmerged = git(project.work, "ls-files", "-u", "--", "pkg/core.py").splitlines()
    assert sorted(line.split()[2] for line in unmerged) == ["1", "2", "3"]
    assert ">>>>>>> P3" in (project.work / "pkg" / "core.py").read_text()
    head = git(project.work, "rev-parse", "HEAD")
    assert head == git(project.work, "rev-parse", "refs/series/rebase/current")
    code, _out, err = project.run("rebase", "--continue")
    assert code == 3 and "P3 still has unresolved conflicts" in err, err


def test_abort_restores_everything_byte_for_byte(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    before = snapshot(project)
    assert rebase(project)[0] == 3
    (project.work / "pkg" / "core.py").write_text("half resolved\n")
    code, _out, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert snapshot(project) == before
    kept = git(project.work, "for-each-ref", "--format=%(refname)", "refs/series/backup/")
    assert kept in err and git(project.work, "show", f"{kept}:pkg/core.py") == "half resolved"
    assert project.run("rebase", "--abort")[0] == 2  # nothing left to abort


@pytest.mark.parametrize("idle", [True, False])
def test_abort_with_git_s_workers_or_without_puts_back_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle: bool
) -> None:
    """--abort moves the files back with a git worker per core when a core is idle as it
    starts (series.git.worktree ``core_idle``), else in git's own process. Under a test
    run a core is seldom idle: here ``core_idle`` is made to answer, and git's threshold
    of files for its workers (``checkout.thresholdForParallelism``, 100 by default) is 1
    in the checkout's configuration, so that the workers run on this small project (its
    trace lists them). Either way every file, ref, HEAD and the index are put back byte for
    byte, and what the user changed at the stop is kept."""
    project = moving_project(tmp_path, conflict=True)
    git(project.work, "config", "checkout.thresholdForParallelism", "1")
    before = snapshot(project)
    assert rebase(project)[0] == 3
    (project.work / "pkg" / "core.py").write_text("half resolved\n")
    monkeypatch.setattr("series.git.worktree.core_idle", lambda: idle)
    trace = tmp_path / "trace2"
    trace.mkdir()
    monkeypatch.setenv("GIT_TRACE2_PERF", str(trace))
    code, _out, err = project.run("rebase", "--abort")
    monkeypatch.delenv("GIT_TRACE2_PERF")
    assert code == 0, err
    said = "".join(f.read_text(errors="replace") for f in trace.iterdir())
    assert "read-tree --reset -u" in said
    assert ("checkout--worker" in said) is idle
    assert snapshot(project) == before
    kept = git(project.work, "for-each-ref", "--format=%(refname)", "refs/series/backup/")
    assert kept in err and git(project.work, "show", f"{kept}:pkg/core.py") == "half resolved"


def test_drop_merged_removes_a_patch_upstream_holds(tmp_path: Path) -> None:
    project = moving_project(tmp_path, carries_p3=True)
    named = git(project.upstream, "rev-parse", "main")
    code, _out, err = rebase(project, "--drop-merged")
    assert code == 0, err
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P1", "P2"]
    (dropped,) = data["dropped"]
    assert dropped["id"] == "P3" and dropped["upstream_commit"] == named
    assert dropped["reason"].startswith(
        "already upstream (--drop-merged): already upstream (upstream has it, "
    )


def test_moved_checkout_or_target_is_refused(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    git(project.work, "commit", "-qm", "by hand")
    code, _, err = project.run("rebase", "--continue")
    assert code == 4 and "the checkout moved" in err
    git(project.work, "checkout", "-q", "--detach", "HEAD~1")
    git(project.work, "update-ref", "refs/series/rebase/onto", "HEAD~1")
    code, _, err = project.run("rebase", "--continue")
    assert code == 4 and "target of the rebase moved" in err
    for command in (["apply", "--force"], ["export"]):  # the rebase owns the checkout
        code, _, err = project.run(*command)
        assert code == 4 and "rebase` is in progress" in err
    assert project.run("rebase", "--abort")[0] == 0


def test_refuses_to_start_over_unexported_work(tmp_path: Path) -> None:
    project = moving_project(tmp_path)
    (project.work / "pkg" / "core.py").write_text("local edit\n")
    code, _, err = rebase(project)
    assert code == 4 and "uncommitted changes" in err
    git(project.work, "commit", "-qam", "not exported")
    code, _, err = rebase(project)
    assert code == 4 and "never exported" in err


def test_bad_options(tmp_path: Path) -> None:
    project = moving_project(tmp_path)
    assert project.run("rebase")[0] == 2
    assert project.run("rebase", "--continue", "--drop-merged")[0] == 2
    assert project.run("rebase", "--continue")[0] == 2  # none in progress
    code, _, err = project.run("rebase", "--onto", "no-such", "--upstream", str(project.upstream))
    assert code == 2, err
    assert git(project.work, "for-each-ref", "refs/series/rebase/") == ""


def test_offline_apply_after_a_rebase_says_the_pin_needs_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = moving_project(tmp_path)
    assert rebase(project)[0] == 0
    code, _, err = project.run("apply", "--dir", str(tmp_path / "again"))
    assert code == 0, err  # the new pin is in the cache: no network needed
    # Another machine: an empty cache, and upstream out of reach.
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "other-cache"))
    project.upstream.rename(tmp_path / "unreachable")
    code, _out, err = project.run("apply", "--dir", str(tmp_path / "elsewhere"))
    assert code == 1 and "no sdist stands in for this pin" in err and "--upstream" in err
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("altered_at", ["last", "first of two halves", "last of two halves"])
def test_exported_bytes_that_do_not_give_the_replayed_tree_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, altered_at: str
) -> None:
    """The end's files are staged and flushed while git applies the exported bytes again;
    when those do not give the replayed tree (one patch's bytes altered here, after
    format-patch), --continue refuses as a bug: no patch file or series.toml is renamed
    into place, no temporary file is left, and the rebase is still where it stopped.
    A series cut in two halves (here from 2 patches: rebase_finish.CUT_AT) is refused for
    a patch altered in either half: the first must give the tree of the commit it ends
    at (its scratch index read while git exported), the second the replayed tree."""
    if "halves" in altered_at:
        monkeypatch.setattr(rebase_finish, "CUT_AT", 2)
    project = moving_project(tmp_path, conflict=True)
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3, err
    resolve_p1(project.work)
    before = (project.patch_bytes(), (project.root / "series.toml").read_bytes())
    refs = git(project.work, "for-each-ref", "--format=%(refname) %(objectname)")
    original = Diffs._patches

    def altered(self: Diffs, *args: Any, **kwargs: Any) -> list[bytes]:
        patches = original(self, *args, **kwargs)
        assert len(patches) >= 2, len(patches)
        k = 0 if altered_at.startswith("first") else len(patches) - 1
        one = patches[k]
        at = one.index(b"\n+", one.index(b"\n@@ ")) + 2
        return [*patches[:k], one[:at] + b"altered " + one[at:], *patches[k + 1 :]]

    monkeypatch.setattr(Diffs, "_patches", altered)
    code, _, err = project.run("rebase", "--continue")
    assert code == 70 and "would not reproduce the rebased commits" in err, err
    assert (project.patch_bytes(), (project.root / "series.toml").read_bytes()) == before
    assert not list(project.root.rglob(".series-tmp-*"))
    assert git(project.work, "for-each-ref", "--format=%(refname) %(objectname)") == refs
    monkeypatch.setattr(Diffs, "_patches", original)
    code, _, err = project.run("rebase", "--continue")  # the bytes as git made them: it ends
    assert code == 0, err
    assert project.patch_bytes() != before[0]

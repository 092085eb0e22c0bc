"""Records in the per-user cache that are well formed, valid, and wrong
(docs/hardening.md, "What series remembers to skip work", rows 400 and up).

Earlier rounds damaged records (torn, truncated, a FIFO, a link, another user's);
these write records a reader cannot tell from good ones by their shape: what an
older or newer series sharing the cache, or one run under another configuration,
kept there. An answer that rests on such a record must be the answer of an empty
cache, or a refusal: never a wrong "ok".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import Project, git, make_project, replace_line, series_process


def _cache() -> Path:
    return Path(os.environ["SERIES_CACHE_DIR"])


def _conflicting_next(project: Project) -> str:
    """An upstream ``next`` whose one commit rewrites the line P1 changes (P1 conflicts
    with it), and touches only pkg/core.py, as P1 does: its id."""
    up = project.upstream
    git(up, "checkout", "-q", "-b", "next")
    replace_line(up / "pkg/core.py", "return 1\n", "return 7\n")
    git(up, "commit", "-qam", "upstream: f1 returns 7")
    commit = git(up, "rev-parse", "HEAD")
    git(up, "checkout", "-q", "-")
    return commit


def _kept_patch_id(commit: str) -> tuple[Path, dict[str, object]]:
    """The patchids shard that holds ``commit``, and its record."""
    path = _cache() / "patchids" / f"{commit[:2]}.json"
    record = json.loads(path.read_text())
    assert commit in record["commits"], record
    return path, record


def test_a_kept_patch_id_shared_with_a_patch_is_asked_of_git_before_it_drops_it(
    tmp_path: Path,
) -> None:
    """A patchids record naming, for an upstream commit, the patch-id of P1: what an
    older series kept when a `* -diff` in the checkout's info/attributes made every diff
    of pkg/core.py "Binary files differ" (one patch-id for all), before row 155. main
    took it as git's: check-conflicts said P1 "already-upstream", "ok: the series fits",
    exit 0, where P1 conflicts; `rebase --drop-merged` dropped P1 from the series."""
    project = make_project(tmp_path)
    upstream_commit = _conflicting_next(project)
    assert project.run("apply")[0] == 0
    code, fresh, err = project.run("check-conflicts", "--onto", "next")
    assert code == 3, err  # the answer of an empty cache: P1 conflicts
    assert "P1 conflicts on next" in fresh and "P1  #1000  already-upstream" not in fresh
    p1 = git(project.work, "rev-parse", "series~2")
    _, mine = _kept_patch_id(p1)
    path, record = _kept_patch_id(upstream_commit)
    wrong = mine["commits"][p1]  # type: ignore[index]
    record["commits"][upstream_commit] = wrong  # type: ignore[index]
    path.write_text(json.dumps(record, sort_keys=True))

    code, out, err = project.run("check-conflicts", "--onto", "next")
    assert code == 3, out + err
    assert "P1 conflicts on next" in out and "ok: the series fits" not in out
    assert "P1  #1000  already-upstream" not in out
    assert "patch-id" in err and upstream_commit[:12] in err  # the record is said untrusted
    right = json.loads(path.read_text())["commits"][upstream_commit]
    assert right != wrong  # rewritten with git's answer

    path.write_text(json.dumps(record, sort_keys=True))  # poisoned again, then a rebase
    code, out, err = project.run("rebase", "--onto", "next", "--drop-merged")
    assert code == 3, out + err
    assert "rebase stopped: P1" in err and "upstream holds all of P1" not in err
    assert (project.root / "patches" / "perf-P1.patch").exists()
    assert project.run("rebase", "--abort")[0] == 0


def test_a_kept_git_verdict_is_taken_only_for_a_version_this_series_needs(
    tmp_path: Path,
) -> None:
    """The cache's ``git-version`` line for the git first on PATH (a copy of the real
    binary, git itself: its verdict is kept), saying ``git version 2.38.1``: what a series
    that needs less (an older one, before merge-tree --stdin; or a later one that no
    longer needs it) keeps for a git it found new enough, in the cache both share. main
    took any line of the right key as "new enough" and went on with that git, never
    asking it: this series asks again, and keeps what git says."""
    real = shutil.which("git")
    assert real is not None
    project = make_project(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    binary = bin_dir / "git"
    shutil.copy2(os.path.realpath(real), binary)
    trace = tmp_path / "trace"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GIT_TRACE": str(trace),
    }
    code, _, err = series_process(project.root, "apply", env=env)
    assert code == 0, err
    record = _cache() / "git-version"
    lines = record.read_text().splitlines()
    mine = [line for line in lines if line.startswith(os.path.realpath(binary) + "\t")]
    assert len(mine) == 1 and mine[0].endswith("\tgit version " + _said(real)), lines
    key = mine[0].rpartition("\t")[0]
    record.write_text(f"{key}\tgit version 2.38.1\n")  # another series' verdict
    trace.unlink()

    code, _, err = series_process(project.root, "status", env=env)
    assert code == 0, err
    asked = [line for line in trace.read_text().splitlines() if "built-in: git version" in line]
    assert len(asked) == 1, asked  # git asked again: 2.38.1 is not new enough for series
    assert record.read_text().splitlines()[0] == f"{key}\tgit version {_said(real)}"


def _said(real: str) -> str:
    """The version the real git says (``2.39.5``)."""
    out = subprocess.run([real, "version"], capture_output=True, text=True, check=True).stdout
    return out.strip().removeprefix("git version ")


def _loose(repo: Path, commit_ish: str, path: str) -> Path:
    """The loose file of the blob at ``path`` in ``commit_ish`` of the cache's ``repo``."""
    blob = git(repo, "rev-parse", f"{commit_ish}:{path}")
    file = repo / "objects" / blob[:2] / blob[2:]
    assert file.is_file(), f"{blob} is not loose in {repo}"
    return file


def test_a_loose_object_of_the_cache_holding_another_object_is_refused(tmp_path: Path) -> None:
    """The cache repository's loose file of next's pkg/core.py holding the pin's (another
    valid object's whole, compressed bytes: what a disk may leave after a crash, blocks of
    a freed object under a new file's name). git 2.39 reads a loose object without
    checking its bytes against its name: main merged the pin's file where next has its
    own, and said "ok: the series fits", exit 0, where P1 conflicts with next."""
    project = make_project(tmp_path)
    upstream_next = _conflicting_next(project)
    assert project.run("apply")[0] == 0
    code, out, err = project.run("check-conflicts", "--onto", "next")
    assert code == 3 and "P1 conflicts on next" in out, out + err
    repo = _cache() / "upstream.git"
    theirs = _loose(repo, upstream_next, "pkg/core.py")
    pin = _loose(repo, project.commit, "pkg/core.py")
    theirs.chmod(0o644)
    theirs.write_bytes(pin.read_bytes())

    # As its own process: the check is once per process and cache repository.
    code, out, err = series_process(project.root, "check-conflicts", "--onto", "next")
    assert code == 1, out + err
    assert "ok: the series fits" not in out
    assert f"the git repository {repo} is damaged" in err, err
    assert str(theirs.relative_to(repo)) in err and f"delete {repo}" in err, err
    shutil.rmtree(repo)  # the way on the hint gives
    code, out, err = series_process(project.root, "check-conflicts", "--onto", "next")
    assert code == 3 and "P1 conflicts on next" in out, out + err


def test_files_kept_by_commit_are_git_s_whatever_a_checkout_s_replace_refs_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebase in a checkout whose own ``git replace --graft`` gives an upstream commit
    another parent (the user's, to stitch history) kept, under that commit's id in the
    per-user cache, the files of its diff against that parent (main: README.md too,
    where the commit changes pkg/core.py alone). Another project that shares the cache
    then took those files for the commit's own: its check-conflicts said P3 "already
    upstream" without the patch-id evidence (its carrier's files no longer P3's), where
    an empty cache names the carrier. The files of a commit are now read without the
    repository's replace refs and grafts (its objects by id, as diffs are)."""
    project = make_project(tmp_path / "a")
    up = project.upstream
    git(up, "checkout", "-q", "-b", "next")
    replace_line(up / "README.md", "tiny upstream\n", "tiny upstream, read me\n")
    git(up, "commit", "-qam", "upstream: README")
    replace_line(up / "pkg/core.py", "return 9\n", "return 909\n")  # P3, as upstream took it
    git(up, "commit", "-qam", "upstream: f9 returns 909")
    carrier = git(up, "rev-parse", "HEAD")
    git(up, "checkout", "-q", "-")
    other = tmp_path / "b"
    shutil.copytree(project.root, other)  # the second project, as the first was
    second = Project(other, up, project.commit)

    assert project.run("apply")[0] == 0
    git(project.work, "fetch", "-q", str(up), "next:refs/remotes/up/next")
    git(project.work, "replace", "--graft", carrier, project.commit)  # the user's own
    code, _, err = project.run("rebase", "--onto", "next")
    assert code == 0, err
    kept = json.loads((_cache() / "commitfiles" / f"{carrier[:2]}.json").read_text())
    assert kept["commits"][carrier] == ["pkg/core.py"], kept

    assert second.run("apply")[0] == 0
    argv = ("check-conflicts", "--onto", "next", "--no-matrix", "--json")
    code, shared, err = second.run(*argv)
    assert code == 0, err
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp_path / "cold"))
    code, cold, err = second.run(*argv)
    assert code == 0, err
    assert json.loads(shared)["onto"] == json.loads(cold)["onto"]
    assert carrier in cold

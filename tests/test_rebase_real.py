"""The real series moved to the real upstream master of the shared shallow clone.

P18 and P23 conflict (upstream cd5bfc1 rewrote the lines of
keras/src/tree/torchtree_impl.py that both change); this repository
records their resolutions in resolutions/P18/ and resolutions/P23/, so
the rebase runs through without asking.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from helpers import Project, git
from test_shallow import real_project


def applied(tmp: Path, shared: Path, source: Path, *, recorded: bool) -> Project:
    project = real_project(tmp, source)
    if recorded:
        shutil.copytree(source / "resolutions", project.root / "resolutions")
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(shared))
    assert code == 0, err
    return project


def test_real_series_stops_at_p18_without_the_recorded_resolution(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    project = applied(tmp_path, shared_upstream, project_copy, recorded=False)
    code, _, err = project.run("rebase", "--onto", "master", "--upstream", str(shared_upstream))
    assert code == 3, err
    assert "rebase stopped: P18" in err and "cd5bfc1938a9" in err
    # The 12 patches before it: the same trees as plain git rebase.
    clone = tmp_path / "oracle"
    git(tmp_path, "clone", "-q", str(project.work), str(clone))
    git(
        clone, "fetch", "-q", "--update-shallow", str(shared_upstream), "+master:refs/oracle/master"
    )
    base = git(project.work, "rev-parse", "refs/series/base")
    git(clone, "checkout", "-q", "series")
    proc = subprocess.run(
        ["git", "rebase", "-q", "--onto", "refs/oracle/master", base],
        cwd=clone, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode != 0  # git stops at P18 too
    oracle = git(clone, "log", "--reverse", "--format=%T", "refs/oracle/master..HEAD").split()
    master = git(clone, "rev-parse", "refs/oracle/master")
    ours = git(project.work, "log", "--reverse", "--format=%T", f"{master}..HEAD").split()
    assert len(oracle) == 12 and ours == oracle
    assert project.run("rebase", "--abort")[0] == 0


def test_real_series_rebases_with_the_recorded_resolution(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    project = applied(tmp_path, shared_upstream, project_copy, recorded=True)
    code, out, err = project.run("rebase", "--onto", "master", "--upstream", str(shared_upstream))
    assert code == 0, err
    assert "resolved (recorded)" in out
    # Every patch of the series is still there: none was dropped.
    patches = len(list((project_copy / "patches").glob("*.patch")))
    assert len(list((project.root / "patches").glob("*.patch"))) == patches
    assert "P23" in out and out.count("resolved (recorded)") == 2
    code, out, err = project.run("apply")
    assert code == 0 and "up to date" in out, err
    code, out, err = project.run("export")
    assert code == 0 and "0 file(s) changed" in out, err


def test_the_rebase_benchmark_agrees_with_git_and_times_each_part_of_its_floor(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """ci/bench_rebase.py runs once, where git knows no identity (a fresh machine: no
    HOME configuration, no GIT_AUTHOR_*/GIT_COMMITTER_*): its trees equal git rebase's
    (the script exits otherwise), and every part of the rebase's floor and the merges of
    check-conflicts got CPU time. It had stopped running on such a machine (its git
    rebase by hand could not commit), and its floor had lost the export (0.000 s) since
    series started format-patch in a way the script did not time."""
    import os
    import sys

    from conftest import SHARED_UPSTREAM

    home = tmp_path / "no-identity"  # not the hermetic HOME, whose git has one
    home.mkdir()
    (home / ".gitconfig").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        EMAIL="",
    )
    ident = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], env=env, capture_output=True)
    assert ident.returncode != 0, "git found an identity: the test would prove nothing"
    script = project_copy / "ci" / "bench_rebase.py"  # it reads the series beside it
    argv = [sys.executable, str(script), "--repeat", "1", "--shared", str(SHARED_UPSTREAM)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "git rebase + rerere + --continue" in proc.stdout
    floor = next(line for line in proc.stdout.splitlines() if "the floor:" in line)
    listed = floor.split(" s (", 1)[1].removesuffix(")")  # "what seconds, ..."
    parts = {what: float(sec) for what, sec in (p.rsplit(" ", 1) for p in listed.split(", "))}
    for what in ("the merges", "the dirty check", "moving the work tree", "the export"):
        assert parts.get(what, 0.0) > 0, floor
    merges = re.search(r"merge-tree's CPU ([0-9.]+) s", proc.stdout)
    assert merges is not None and float(merges.group(1)) > 0, proc.stdout

"""kill -9 at any step of a rebase, then --continue or --abort: nothing is lost.

``SERIES_FAULT_KILL_AT=N`` (series.git.run) SIGKILLs series before its Nth
git call. Each run below is a real ``series`` process killed at one such
point (sampled across the whole run), followed by an uninterrupted
``--continue`` (which must reach the same result as a run never killed) or
``--abort`` (which must restore the state before the rebase exactly).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, git
from rebase_helpers import moving_project, snapshot
from test_rebase import resolve_p1


def series(
    project: Project, *args: str, kill_at: int | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SERIES_DEBUG": "1"}
    env.pop("SERIES_FAULT_KILL_AT", None)
    if kill_at is not None:
        env["SERIES_FAULT_KILL_AT"] = str(kill_at)
    argv = [sys.executable, "-m", "series", "-C", str(project.root), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


def git_calls(proc: subprocess.CompletedProcess[str]) -> int:
    return sum(1 for line in proc.stderr.splitlines() if line.startswith("series.git: git "))


def start_args(project: Project) -> list[str]:
    return ["rebase", "--onto", "main", "--upstream", str(project.upstream)]


def result(project: Project) -> tuple[object, ...]:
    work = project.work
    return (
        project.patch_bytes(),
        (project.root / "series.toml").read_bytes(),
        git(work, "rev-parse", "series"),
        git(work, "symbolic-ref", "HEAD"),
        git(work, "status", "--porcelain"),
    )


def restore(pristine: Path, root: Path) -> None:
    shutil.rmtree(root)
    shutil.copytree(pristine, root, symlinks=True)


def points(total: int, samples: int = 5) -> list[int]:
    return sorted({1 + (total - 2) * i // (samples - 1) for i in range(samples)})


@pytest.mark.parametrize("then", ["continue", "abort"])
def test_kill_during_a_rebase_that_replays_a_recorded_resolution(tmp_path: Path, then: str) -> None:
    project = moving_project(tmp_path / "p", conflict=True)
    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine, symlinks=True)
    assert series(project, *start_args(project)).returncode == 3
    resolve_p1(project)
    assert series(project, "rebase", "--continue").returncode == 0
    recorded = project.root / "resolutions"
    shutil.copytree(recorded, pristine / "resolutions")
    restore(pristine, project.root)
    before = snapshot(project)
    clean = series(project, *start_args(project))
    assert clean.returncode == 0, clean.stderr
    wanted, total = result(project), git_calls(clean)
    for n in points(total):
        restore(pristine, project.root)
        killed = series(project, *start_args(project), kill_at=n)
        assert killed.returncode == -9, (n, killed.stderr[-2000:])
        if then == "abort":
            done = series(project, "rebase", "--abort")
            if "had finished" in done.stdout:  # killed after its last transaction
                assert result(project) == wanted, n
                continue
            if "no rebase in progress" in done.stderr:  # killed before it began, or done
                assert snapshot(project) == before or result(project) == wanted, n
                continue
            assert done.returncode == 0, (n, done.stderr)
            assert snapshot(project) == before, n
        else:
            done = series(project, "rebase", "--continue")
            if "no rebase in progress" in done.stderr:  # killed before it began, or done
                if result(project) == wanted:
                    continue
                done = series(project, *start_args(project))
            if done.returncode == 4 and "not on branch" in done.stderr:
                pytest.fail(f"kill at git call {n} left the checkout detached: {done.stderr}")
            assert done.returncode == 0, (n, done.stderr)
            assert result(project) == wanted, n


def test_kill_during_continue_then_continue_or_abort(tmp_path: Path) -> None:
    project = moving_project(tmp_path / "p", conflict=True)
    before = snapshot(project)
    assert series(project, *start_args(project)).returncode == 3
    resolve_p1(project)
    stopped = tmp_path / "stopped"
    shutil.copytree(project.root, stopped, symlinks=True)
    clean = series(project, "rebase", "--continue")
    assert clean.returncode == 0, clean.stderr
    wanted, total = result(project), git_calls(clean)
    for n in points(total, 4):
        for then in ("--continue", "--abort"):
            restore(stopped, project.root)
            assert series(project, "rebase", "--continue", kill_at=n).returncode == -9
            done = series(project, "rebase", then)
            if "had finished" in done.stdout or "no rebase in progress" in done.stderr:
                assert result(project) == wanted, n  # killed after its last transaction
                continue
            assert done.returncode == 0, (n, then, done.stderr)
            if then == "--continue":
                assert result(project) == wanted, n
            else:
                snap = snapshot(project)
                assert snap == before, n

"""Fault injection: SIGKILL before every git call of apply, re-apply and export, one run per step.

``SERIES_FAULT_KILL_AT=N`` (series/git/run.py) kills the process right
before its Nth git call. For every N until the command completes, the
killed run must leave the old state, the new one, or a state the next
command explains and completes (an interrupted export's journal: apply
refuses with the way on, and ``series export`` finishes it). Nothing the
user had may be lost.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import Project, git, make_project

MAX_STEPS = 200


def killed_run(root: Path, n: int, *args: str) -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SERIES_FAULT_KILL_AT": str(n)},
        check=False,
    )
    assert proc.returncode in (0, -9), proc.stderr
    return proc.returncode


def files(root: Path) -> dict[str, bytes]:
    """series.toml and patches/, without series' temporary files (checked on their own)."""
    out = {"series.toml": (root / "series.toml").read_bytes()}
    for path in sorted((root / "patches").iterdir()):
        if not path.name.startswith(".series-tmp-"):
            out[f"patches/{path.name}"] = path.read_bytes()
    return out


def test_first_apply_killed_at_every_git_call(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    reference = tmp_path / "reference"
    assert project.run("apply", "--dir", str(reference))[0] == 0
    tip = git(reference, "rev-parse", "series")
    shutil.rmtree(tmp_path / "home/.cache")  # the kills also hit a cold cache
    for n in range(1, MAX_STEPS):
        status = killed_run(project.root, n, "apply")
        if status == 0:
            break
        # old (no checkout) or new (complete): never a half-made ./work
        if project.work.exists():
            assert git(project.work, "rev-parse", "series") == tip, n
            assert git(project.work, "status", "--porcelain") == "", n
        code, _, err = project.run("apply")
        assert code == 0, (n, err)
        assert git(project.work, "rev-parse", "series") == tip
        assert git(project.work, "status", "--porcelain") == ""
        assert not list(project.root.glob(".work.series-new-*")), n
        shutil.rmtree(project.work)
    else:
        raise AssertionError("apply never completed")
    assert n > 10  # it really was killed at every step of a cold apply


def _template(tmp_path: Path) -> tuple[Project, dict[str, bytes], dict[str, bytes]]:
    """An applied project with work to export: one amended patch, one new commit."""
    project = make_project(tmp_path / "t")
    assert project.run("apply")[0] == 0
    assert project.run("export")[0] == 0  # patch files in their canonical form
    work = project.work
    git(work, "rebase", "-q", "--exec", "true", "refs/series/base")
    (work / "pkg/core.py").write_text((work / "pkg/core.py").read_text() + "# amended\n")
    git(work, "commit", "-qa", "--fixup", git(work, "rev-parse", "series~2"))
    subprocess.run(
        ["git", "rebase", "-q", "-i", "--autosquash", "refs/series/base"],
        cwd=work,
        env={**os.environ, "GIT_SEQUENCE_EDITOR": ":"},
        check=True,
    )
    (work / "pkg/extra.py").write_text("EXTRA = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "extra: a new module")
    old = files(project.root)
    done = tmp_path / "done"
    shutil.copytree(project.root, done, symlinks=True)
    code, _, err = Project(done, project.upstream, project.commit).run("export")
    assert code == 0, err
    new = files(done)
    assert new != old and len(new) == len(old) + 1
    return project, old, new


def test_export_killed_at_every_git_call(tmp_path: Path) -> None:
    template, old, new = _template(tmp_path)
    for n in range(1, MAX_STEPS):
        root = tmp_path / f"run-{n}"
        shutil.copytree(template.root, root, symlinks=True)
        project = Project(root, template.upstream, template.commit)
        status = killed_run(root, n, "export")
        now = files(root)
        for name, data in now.items():
            assert data in (old.get(name), new.get(name)), (n, name)  # never half written
        assert not list((root / "patches").glob(".series-tmp-*")) or status != 0
        journal = (root / ".series/export-journal.json").exists()
        if now not in (old, new):
            assert journal, n  # a mixed state is always explained
        if journal:
            code, _, err = project.run("apply")
            assert code == 4 and "an export was interrupted" in err and "series export" in err
        code, _, err = project.run("export")
        assert code == 0, (n, err)
        assert files(root) == new, n
        assert not (root / ".series/export-journal.json").exists()
        assert not list(root.rglob(".series-tmp-*")), n  # the killed run's, removed
        if n % 10 == 0:  # the result is a checkout apply accepts (spot checks: each costs)
            assert project.run("apply")[0] == 0
        shutil.rmtree(root)
        if status == 0:
            break
    else:
        raise AssertionError("export never completed")
    assert n > 20


def test_reapply_over_a_checkout_killed_at_every_git_call(tmp_path: Path) -> None:
    template = make_project(tmp_path / "t")
    assert template.run("apply")[0] == 0
    old_tip = git(template.work, "rev-parse", "series")
    patch = template.root / "patches/perf-P2.patch"
    patch.write_text(patch.read_text().replace("VALUE_5 = 55", "VALUE_5 = 56"))
    done = tmp_path / "done"
    shutil.copytree(template.root, done, symlinks=True)
    assert Project(done, template.upstream, template.commit).run("apply")[0] == 0
    new_tip = git(done / "work", "rev-parse", "series")
    for n in range(1, MAX_STEPS):
        root = tmp_path / f"run-{n}"
        shutil.copytree(template.root, root, symlinks=True)
        project = Project(root, template.upstream, template.commit)
        status = killed_run(root, n, "apply")
        assert git(project.work, "rev-parse", "series") in (old_tip, new_tip), n
        code, _, err = project.run("apply")  # finishes an interrupted file move
        assert code == 0, (n, err)
        assert git(project.work, "rev-parse", "series") == new_tip
        assert git(project.work, "status", "--porcelain") == "", n
        assert "VALUE_5 = 56" in (project.work / "pkg/util.py").read_text()
        shutil.rmtree(root)
        if status == 0:
            break
    else:
        raise AssertionError("apply never completed")
    assert n > 10

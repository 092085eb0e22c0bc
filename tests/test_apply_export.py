from __future__ import annotations

from pathlib import Path

from helpers import git, make_project


def test_apply_then_export_round_trips(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    assert git(project.work, "rev-list", "--count", "series") == "4"
    code, _, err = project.run("export")
    assert code == 0, err
    first = project.patch_bytes()
    code, _, err = project.run("apply")
    assert code == 0, err
    code, _, err = project.run("export")
    assert project.patch_bytes() == first

"""Hostile project content: no write (or read) through a symlink out of the project,
and no half-resolved conflict taken as a resolution (issue 18, "Must never happen")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import (
    Project,
    git,
    make_project,
    replace_line,
)
from rebase_helpers import moving_project
from series.errors import Exit

TRACEBACK = "Traceback"


def rebase(project: Project) -> tuple[int, str, str]:
    return project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def assert_nothing_taken(project: Project, patches: dict[str, bytes], toml: bytes) -> None:
    assert project.patch_bytes() == patches
    assert (project.root / "series.toml").read_bytes() == toml
    assert not list((project.root / "resolutions").rglob("*.patch"))
    assert git(project.work, "rev-parse", "refs/series/rebase/state")  # still in progress
    assert git(project.work, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached


def _resolve_p1(project: Project) -> None:
    core = project.work / "pkg" / "core.py"
    text = core.read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>> P1\n") + len(">>>>>>> P1\n")
    core.write_text(text[:start] + "    return 1001\n" + text[end:])
    git(project.work, "add", "pkg/core.py")


# -- A. writes (and reads) through symlinks out of the project --------------------------


def test_resolution_directory_symlinked_out_is_not_written_through(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not series' file\n")
    before = tree(outside)
    (project.root / "resolutions").mkdir()
    (project.root / "resolutions" / "P1").symlink_to(outside, target_is_directory=True)
    _resolve_p1(project)
    patches, toml = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    code, _, err = project.run("rebase", "--continue")
    assert code == Exit.BAD_INPUT, err
    assert "resolutions/P1" in err and "symlink" in err and "outside the project" in err
    assert TRACEBACK not in err
    assert tree(outside) == before
    assert_nothing_taken(project, patches, toml)
    # The way on the message names works: remove the link, continue.
    (project.root / "resolutions" / "P1").unlink()
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert tree(outside) == before
    assert len(list((project.root / "resolutions" / "P1").glob("*.patch"))) == 1


def test_recorded_resolution_outside_the_project_is_not_replayed(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    project = moving_project(tmp_path / "a", conflict=True)
    shutil.copytree(project.root, pristine, ignore=shutil.ignore_patterns("work"))
    assert rebase(project)[0] == 3
    _resolve_p1(project)
    assert project.run("rebase", "--continue")[0] == 0
    # Another checkout of the project whose resolutions/P1 is a link to a directory
    # elsewhere holding the right resolution: it must not be imported into a commit.
    outside = tmp_path / "outside"
    shutil.copytree(project.root / "resolutions" / "P1", outside)
    other = Project(pristine, project.upstream, project.commit)
    (pristine / "resolutions").mkdir()
    (pristine / "resolutions" / "P1").symlink_to(outside, target_is_directory=True)
    assert other.run("apply")[0] == 0
    patches = other.patch_bytes()
    code, _, err = rebase(other)
    assert code == Exit.BAD_INPUT, err
    assert "resolutions/P1" in err and "outside the project" in err and TRACEBACK not in err
    assert other.patch_bytes() == patches
    assert git(other.work, "for-each-ref", "refs/series/rebase/state") == ""  # not started


def test_export_refuses_a_series_directory_linked_out_of_the_project(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (project.root / ".series").symlink_to(outside, target_is_directory=True)
    replace_line(project.work / "pkg" / "core.py", "return 2\n", "return 202\n")
    git(project.work, "commit", "-qa", "--amend", "--no-edit")
    patches, toml = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    code, _, err = project.run("export")
    assert code == Exit.BAD_INPUT, err
    assert ".series" in err and "symlink" in err and "outside the project" in err
    assert TRACEBACK not in err
    assert list(outside.iterdir()) == []  # no backup, no journal out there
    assert project.patch_bytes() == patches
    assert (project.root / "series.toml").read_bytes() == toml


def test_export_journal_naming_files_outside_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    journal = {
        "backup": ".series/backups/x",
        "files": ["../victim.txt"],
        "created": ["../victim.txt"],
    }
    (project.root / ".series").mkdir()
    (project.root / ".series" / "export-journal.json").write_text(json.dumps(journal))
    code, _, err = project.run("export")
    assert code == Exit.BAD_INPUT, err
    assert "outside the project" in err and TRACEBACK not in err
    assert victim.read_text() == "mine\n"


def test_a_resolution_directory_linked_inside_the_project_is_written_there(
    tmp_path: Path,
) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    kept = project.root / "kept" / "P1"
    kept.mkdir(parents=True)
    (project.root / "resolutions").mkdir()
    (project.root / "resolutions" / "P1").symlink_to(Path("..") / "kept" / "P1")
    _resolve_p1(project)
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert len(list(kept.glob("*.patch"))) == 1


def test_a_patch_file_that_is_a_link_inside_the_project_is_not_replaced(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    patch = project.root / "patches" / "perf-P2.patch"
    real = project.root / "shared.patch"
    patch.rename(real)
    patch.symlink_to(Path("..") / "shared.patch")
    replace_line(project.work / "pkg" / "util.py", "VALUE_6 = 6\n", "VALUE_6 = 66\n")
    git(project.work, "commit", "-qa", "--amend", "--no-edit")
    before = real.read_bytes()
    code, _, err = project.run("export")
    assert code == Exit.BAD_INPUT, err
    assert "perf-P2.patch" in err and "is a symlink" in err and TRACEBACK not in err
    assert patch.is_symlink() and real.read_bytes() == before

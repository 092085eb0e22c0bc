"""Hostile project content: no write (or read) through a symlink out of the project,
and no half-resolved conflict taken as a resolution (issue 18, "Must never happen")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import (
    UPSTREAM_FILES,
    PatchSpec,
    Project,
    git,
    make_patches,
    make_project,
    make_upstream,
    manifest_text,
    replace_line,
)
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from series.errors import Exit, SeriesError
from series.files import confined, confined_all
from series.stack.resolution_check import leftovers, markers, parse_error

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
    resolve_p1(project.work)
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
    resolve_p1(project.work)
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
    shutil.rmtree(project.root / ".series")  # apply made it (the project lock)
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
    (project.root / ".series").mkdir(exist_ok=True)
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
    resolve_p1(project.work)
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


def _linked_project(tmp_path: Path) -> Path:
    """A project with links: ``in`` to its ``dir``, ``away`` out of it, ``dir/link`` to a
    file beside it, ``loop`` to itself."""
    root, out = tmp_path / "project", tmp_path / "out"
    (root / "dir").mkdir(parents=True)
    out.mkdir()
    (root / "dir" / "file").write_text("x")
    (root / "in").symlink_to("dir")
    (root / "away").symlink_to(out)
    (root / "dir" / "link").symlink_to("file")
    (root / "loop").symlink_to("loop")
    return root


def _refused(root: Path) -> list[tuple[Path, bool]]:
    """Paths of :func:`_linked_project` that ``confined`` refuses (reading or not)."""
    return [
        (root / "away" / "new", False),  # a directory link out
        (root / "away" / "new", True),
        (root / "dir" / "link", False),  # the file itself a link: not replaced
        (root / "in" / "link", False),  # the same, through a link inside
        (root / "away" / ".." / "x", False),  # '..' through a link out
        (root / ".." / "x", False),
        (root / "loop" / "x", True),
    ]


def _refusal_alone(root: Path, path: Path, reading: bool) -> str:
    """What ``confined`` says of ``path`` alone (it must refuse it)."""
    try:
        confined(root, path, reading=reading)
    except SeriesError as exc:
        return exc.render()
    raise AssertionError(f"{path} was not refused")


def test_confined_follows_links_only_inside(tmp_path: Path) -> None:
    root = _linked_project(tmp_path)
    assert confined(root, root / "dir" / "new") == root / "dir" / "new"
    assert confined(root, root / "in" / "new") == root / "in" / "new"  # a link inside: followed
    assert confined(root, root / "dir" / "link", reading=True) == root / "dir" / "link"
    for path, reading in _refused(root):
        try:
            confined(root, path, reading=reading)
        except SeriesError as exc:
            assert exc.exit_code == Exit.BAD_INPUT
        else:
            raise AssertionError(f"{path} was not refused")


def test_confined_all_refuses_what_confined_refuses_after_paths_it_let_through(
    tmp_path: Path,
) -> None:
    """``confined_all`` (--abort's check of every file it puts back) looks at each
    directory once: a path through a directory seen already is still refused where
    ``confined`` refuses it, with the same words, and one let through is let through."""
    root = _linked_project(tmp_path)
    fine = [root / "dir" / "new", root / "in" / "new", root / "dir" / "file", root / "gone" / "x"]
    confined_all(root, fine)
    confined_all(root, [*fine, root / "dir" / "link"], reading=True)
    for path, reading in _refused(root):
        alone = _refusal_alone(root, path, reading)
        try:
            confined_all(root, [*fine, *fine, path, root / "dir" / "new"], reading=reading)
        except SeriesError as exc:
            assert exc.exit_code == Exit.BAD_INPUT
            assert exc.render() == alone
        else:
            raise AssertionError(f"{path} was let through after {fine}")


def test_confined_all_after_paths_with_no_link_refuses_as_confined(tmp_path: Path) -> None:
    """``confined_all`` tells paths with no link below the root without pathlib (the
    usual case, every patch file of an ``--abort``): after such paths, each path
    ``confined`` refuses is refused with the same words, and plain paths (missing
    ones too) are let through."""
    root = _linked_project(tmp_path)
    plain = [root / "dir" / "new", root / "dir" / "file", root / "gone" / "x", root / "top"]
    confined_all(root, plain)
    for path, reading in _refused(root):
        alone = _refusal_alone(root, path, reading)
        try:
            confined_all(root, [*plain, path], reading=reading)
        except SeriesError as exc:
            assert exc.render() == alone
        else:
            raise AssertionError(f"{path} was let through after {plain}")


# -- B. half-resolved conflicts ------------------------------------------------------------


def _stopped(tmp_path: Path) -> tuple[Project, dict[str, bytes], bytes, str]:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    text = (project.work / "pkg" / "core.py").read_text()
    return project, project.patch_bytes(), (project.root / "series.toml").read_bytes(), text


def _continue_refused(project: Project, patches: dict[str, bytes], toml: bytes) -> str:
    git(project.work, "add", "pkg/core.py")
    code, _, err = project.run("rebase", "--continue")
    assert code == Exit.CONFLICT, err
    assert "pkg/core.py" in err and "--continue" in err and "--abort" in err
    assert TRACEBACK not in err
    assert_nothing_taken(project, patches, toml)
    return err


def test_only_the_opening_marker_removed_is_refused(tmp_path: Path) -> None:
    project, patches, toml, text = _stopped(tmp_path)
    lines = text.splitlines(keepends=True)
    (project.work / "pkg" / "core.py").write_text(
        "".join(line for line in lines if not line.startswith("<<<<<<<"))
    )
    err = _continue_refused(project, patches, toml)
    line = [line.rstrip() for line in lines if not line.startswith("<<<<<<<")].index("=======")
    assert f"pkg/core.py:{line + 1}" in err and "=======" in err


def test_only_the_closing_marker_left_is_refused(tmp_path: Path) -> None:
    project, patches, toml, text = _stopped(tmp_path)
    kept = [x for x in text.splitlines(keepends=True) if not x.startswith(("<<<<<<<", "======="))]
    (project.work / "pkg" / "core.py").write_text("".join(kept))
    err = _continue_refused(project, patches, toml)
    assert ">>>>>>> P1" in err


def test_a_diff3_base_section_left_is_refused(tmp_path: Path) -> None:
    project, patches, toml, text = _stopped(tmp_path)
    start, end = text.index("<<<<<<<"), text.index(">>>>>>> P1\n") + len(">>>>>>> P1\n")
    left = "    return 1001\n||||||| old base\n    return 1\n"
    (project.work / "pkg" / "core.py").write_text(text[:start] + left + text[end:])
    err = _continue_refused(project, patches, toml)
    assert "||||||| old base" in err


def test_a_python_syntax_error_made_by_the_resolution_is_refused(tmp_path: Path) -> None:
    project, patches, toml, text = _stopped(tmp_path)
    start, end = text.index("<<<<<<<"), text.index(">>>>>>> P1\n") + len(">>>>>>> P1\n")
    (project.work / "pkg" / "core.py").write_text(text[:start] + "    return (1001\n" + text[end:])
    err = _continue_refused(project, patches, toml)
    assert "does not parse" in err or "syntax" in err


def test_a_resolution_with_changes_not_staged_is_refused_and_a_touched_file_is_not_one(
    tmp_path: Path,
) -> None:
    """A tracked file changed and not staged at --continue is refused (nothing taken);
    the same file put back as it was, only its times new (copied, restored), is no change:
    the resolution is taken."""
    project, patches, toml, _ = _stopped(tmp_path)
    resolve_p1(project.work)
    util = project.work / "pkg" / "util.py"
    before = util.read_bytes()
    util.write_bytes(before + b"# not staged\n")
    code, _, err = project.run("rebase", "--continue")
    assert code == Exit.REFUSED and "not staged" in err and "pkg/util.py" in err, err
    assert TRACEBACK not in err
    assert_nothing_taken(project, patches, toml)
    util.write_bytes(before)
    later = util.stat().st_mtime_ns + 5_000_000_000
    os.utime(util, ns=(later, later))
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert b"return 1001" in project.patch_bytes()["perf-P1.patch"]


def _markdown_project(tmp: Path) -> Project:
    """P1 edits a README whose heading is underlined with exactly 7 '='; upstream too."""
    readme = "Title\n=======\n\nIntro line.\n\nEnd.\n"
    up = tmp / "upstream"
    commit = make_upstream(up, {**UPSTREAM_FILES, "README.md": readme})
    specs = [PatchSpec("P1", "docs: intro", {"README.md": ("Intro line.\n", "Intro patched.\n")})]
    root = tmp / "project"
    make_patches(up, tmp / "author", specs, root / "patches")
    (root / "series.toml").write_text(manifest_text(str(up), commit, specs))
    commit_upstream(up, "README.md", "Intro line.\n", "Intro upstream.\n", "docs: upstream intro")
    project = Project(root, up, commit)
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def test_a_heading_underline_in_both_sides_is_not_a_marker(tmp_path: Path) -> None:
    project = _markdown_project(tmp_path)
    assert rebase(project)[0] == 3
    readme = project.work / "README.md"
    text = readme.read_text()
    assert text.count("=======\n") == 2  # the heading's and the conflict's
    # Half resolved (the heading stays, the conflict's separator too): refused.
    start = text.index("<<<<<<<")
    readme.write_text(text[:start] + "Intro upstream.\n=======\nIntro patched.\n\nEnd.\n")
    git(project.work, "add", "README.md")
    code, _, err = project.run("rebase", "--continue")
    assert code == Exit.CONFLICT and "README.md:5" in err, err
    # Resolved: the heading's own underline is no marker.
    readme.write_text("Title\n=======\n\nIntro from both.\n\nEnd.\n")
    git(project.work, "add", "README.md")
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert b"Intro from both." in project.patch_bytes()["perf-P1.patch"]


def test_what_looks_like_a_marker_and_what_parses() -> None:
    text = b"a\n<<<<<<< x\n=======\r\n========\n|||||||\n>>>>>>>\t\n>>>>>>>> y\n<<<<<<<x\n"
    assert [n for n, _ in markers(text)] == [2, 3, 5, 6]
    assert markers(b"\0=======\n") == []  # binary: git writes no markers there
    side = b"Title\n=======\n\nmore\n"
    assert leftovers(b"Title\n=======\n\nmore\n=======\n", [side]) == [(5, "=======")]
    assert parse_error("a.toml", b"x = [1,\n", [b"x = 1\n"]).startswith("a.toml: does not parse")
    assert parse_error("a.json", b'{"x": }', [b'{"x": 1}']).startswith("a.json:1: does not parse")
    assert parse_error("a.toml", b"x = [1,\n", [b"x = \n"]) == ""  # it did not parse before
    assert parse_error("a.txt", b"(", [b""]) == ""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from helpers import PatchSpec, Project, git, make_project, replace_line
from series.errors import Exit
from series.manifest import load

GOLDEN = Path(__file__).parent / "golden"


def applied(project: Project) -> Project:
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def commit_all(work: Path, message: str) -> None:
    git(work, "commit", "-qam", message)


def subjects(work: Path) -> list[str]:
    return git(work, "log", "--reverse", "--format=%s", "refs/series/base..series").splitlines()


def test_apply_makes_one_commit_per_patch_with_author_and_message(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    assert subjects(project.work) == [
        "core: f1 returns 101",
        "util: VALUE_5 is 55",
        "core: f9 returns 909",
    ]
    log = git(project.work, "log", "-1", "--format=%an|%ae|%aI|%cn|%cI|%B", "series~2")
    name, email, adate, cname, cdate, body = log.split("|", 5)
    assert (name, email, adate) == (
        "Series Test",
        "test@series.invalid",
        "2026-02-01T10:00:00+00:00",
    )
    assert (cname, cdate) == (name, adate)  # committer = author: ids depend on content only
    assert body.rstrip().endswith("Series-Id: P1")
    assert "return 101" in (project.work / "pkg/core.py").read_text()
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "status", "--porcelain") == ""


def test_same_inputs_same_commit_ids(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    code, _, err = project.run("apply", "--dir", str(tmp_path / "other"))
    assert code == 0, err
    assert git(project.work, "rev-parse", "series") == git(
        tmp_path / "other", "rev-parse", "series"
    )


def test_rerun_with_nothing_changed_touches_nothing(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    core = project.work / "pkg/core.py"
    before = (core.stat().st_ino, core.stat().st_mtime_ns, git(project.work, "rev-parse", "series"))
    code, out, _ = project.run("apply")
    assert code == 0
    assert out.startswith("up to date")
    assert (
        core.stat().st_ino,
        core.stat().st_mtime_ns,
        git(project.work, "rev-parse", "series"),
    ) == before


def test_apply_to_stops_after_the_named_patch(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("apply", "--to", "P2")
    assert code == 0, err
    assert subjects(project.work) == ["core: f1 returns 101", "util: VALUE_5 is 55"]
    code, _, err = project.run("apply", "--to", "P9")
    assert code == Exit.BAD_INPUT
    assert "no patch 'P9'" in err


def test_refuses_uncommitted_changes_and_force_stashes_them(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    readme = project.work / "README.md"
    readme.write_text("my precious edit\n")
    (project.work / "notes.txt").write_text("untracked work\n")
    code, _, err = project.run("apply")
    assert code == Exit.REFUSED
    assert "uncommitted changes" in err and "README.md" in err and "--force" in err
    assert readme.read_text() == "my precious edit\n"
    code, _, err = project.run("apply", "--force")
    assert code == 0, err
    assert "stash" in err
    stash = git(project.work, "stash", "show", "-p", "--include-untracked", "stash@{0}")
    assert "my precious edit" in stash and "untracked work" in stash


def test_refuses_unexported_commits_and_force_keeps_a_backup(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    (project.work / "README.md").write_text("new work\n")
    commit_all(project.work, "my unexported work")
    mine = git(project.work, "rev-parse", "HEAD")
    code, _, err = project.run("apply")
    assert code == Exit.REFUSED
    assert "never exported" in err and "my unexported work" in err
    assert git(project.work, "rev-parse", "series") == mine
    code, _, err = project.run("apply", "--force")
    assert code == 0, err
    backups = git(project.work, "for-each-ref", "--format=%(objectname)", "refs/series/backup/")
    assert backups.split() == [mine]
    assert git(project.work, "rev-parse", "series") != mine


def test_refuses_foreign_directories(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "file").write_text("not yours\n")
    code, _, err = project.run("apply", "--dir", str(stranger))
    assert code == Exit.REFUSED and "not empty" in err
    other_repo = tmp_path / "other-repo"
    other_repo.mkdir()
    git(other_repo, "init", "-q")
    code, _, err = project.run("apply", "--dir", str(other_repo))
    assert code == Exit.REFUSED and "did not make" in err
    assert (stranger / "file").read_text() == "not yours\n"


def test_refuses_when_not_on_the_series_branch(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    git(project.work, "switch", "-q", "-c", "elsewhere")
    code, _, err = project.run("apply")
    assert code == Exit.REFUSED and "not on branch series" in err


def test_patch_that_does_not_apply_leaves_the_stack_before_it(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    # Make P3's context disappear from upstream's point of view: edit its file.
    patch = project.root / "patches/perf-P3.patch"
    patch.write_text(patch.read_text().replace("-    return 9", "-    return 99"))
    code, _, err = project.run("apply")
    assert code == Exit.CONFLICT
    assert "patch P3 (patches/perf-P3.patch) does not apply" in err
    assert "pkg/core.py" in err
    assert subjects(project.work) == ["core: f1 returns 101", "util: VALUE_5 is 55"]
    assert git(project.work, "status", "--porcelain") == ""


def test_verbose_logs_git_commands(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("-v", "apply")
    assert code == 0
    assert "series.git: git commit-tree" in err


# -- export -----------------------------------------------------------------


def test_apply_then_export_is_byte_identical(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    assert project.run("export")[0] == 0
    first = project.patch_bytes()
    manifest = (project.root / "series.toml").read_text()
    shutil.rmtree(project.work)
    applied(project)
    code, out, _ = project.run("export")
    assert code == 0 and "0 file(s) changed" in out
    assert project.patch_bytes() == first
    assert (project.root / "series.toml").read_text() == manifest


def test_exported_patches_match_golden_files(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    assert project.run("export")[0] == 0
    got = project.patch_bytes()
    if os.environ.get("SERIES_REGEN_GOLDEN"):
        for name, data in got.items():
            (GOLDEN / name).write_bytes(data)
    want = {p.name: p.read_bytes() for p in sorted(GOLDEN.glob("*.patch"))}
    assert got == want, "regenerate deliberately with SERIES_REGEN_GOLDEN=1"


def test_export_amended_commit_updates_only_that_patch(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    project.run("export")
    before = project.patch_bytes()
    git(project.work, "checkout", "-q", "series~1")
    replace_line(project.work / "pkg/util.py", "VALUE_5 = 55\n", "VALUE_5 = 555\n")
    git(project.work, "commit", "-q", "--amend", "--no-edit", "-a")
    amended = git(project.work, "rev-parse", "HEAD")
    git(project.work, "checkout", "-q", "series")
    git(project.work, "rebase", "-q", "--onto", amended, "series~1")
    code, _, err = project.run("export")
    assert code == 0, err
    after = project.patch_bytes()
    assert after["perf-P1.patch"] == before["perf-P1.patch"]
    assert after["perf-P2.patch"] != before["perf-P2.patch"]
    assert b"+VALUE_5 = 555" in after["perf-P2.patch"]
    assert after["perf-P3.patch"] == before["perf-P3.patch"]
    backups = sorted((project.root / ".series/backups").glob("*/patches/perf-P2.patch"))
    assert backups and backups[-1].read_bytes() == before["perf-P2.patch"]  # the newest


def test_export_reworded_title_and_reordered_stack(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    project.run("export")
    base = git(project.work, "rev-parse", "refs/series/base")
    p1, p2, p3 = git(project.work, "rev-list", "--reverse", f"{base}..series").split()
    git(project.work, "reset", "-q", "--hard", base)
    for commit in (p3, p1, p2):
        git(project.work, "cherry-pick", commit)
    git(project.work, "commit", "-q", "--amend", "-m", "util: VALUE_5 becomes 55\n\nSeries-Id: P2")
    code, _, err = project.run("export")
    assert code == 0, err
    manifest = load(project.root / "series.toml")
    assert [p.id for p in manifest.patches] == ["P3", "P1", "P2"]
    assert manifest.by_id("P2").title == "util: VALUE_5 becomes 55"
    assert manifest.by_id("P2").pr == 1001  # metadata travels with the id
    assert b"Subject: [PATCH] util: VALUE_5 becomes 55" in project.patch_bytes()["perf-P2.patch"]
    shutil.rmtree(project.work)
    applied(project)
    assert subjects(project.work)[0] == "core: f9 returns 909"


def test_export_new_and_dropped_commits(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    project.run("export")
    git(project.work, "rebase", "-q", "--onto", "series~2", "series~1")  # drop P2
    replace_line(project.work / "README.md", "tiny upstream\n", "tiny upstream, patched\n")
    commit_all(project.work, "docs: say it is patched")
    code, _, err = project.run("export")
    assert code == 0, err
    manifest = load(project.root / "series.toml")
    assert [p.id for p in manifest.patches] == ["P1", "P3", "P4"]
    new = manifest.by_id("P4")
    assert (new.state, new.file) == ("unsubmitted", "patches/perf-P4-say-it-is-patched.patch")
    assert not (project.root / "patches/perf-P2.patch").exists()
    assert list((project.root / ".series/backups").glob("*/patches/perf-P2.patch"))
    assert "Series-Id: P4" in git(project.work, "log", "-1", "--format=%B", "series")
    assert project.run("apply")[1].startswith("up to date")


def test_export_after_partial_apply_keeps_unapplied_patches(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply", "--to", "P1")[0] == 0
    code, _, err = project.run("export")
    assert code == 0, err
    assert [p.id for p in load(project.root / "series.toml").patches] == ["P1", "P2", "P3"]
    assert (project.root / "patches/perf-P3.patch").exists()


def test_export_refuses_two_commits_with_one_id(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    replace_line(project.work / "README.md", "tiny upstream\n", "x\n")
    commit_all(project.work, "copy\n\nSeries-Id: P1")
    before = project.patch_bytes()
    code, _, err = project.run("export")
    assert code == Exit.REFUSED and "two commits carry P1" in err
    assert project.patch_bytes() == before


def test_export_without_a_checkout_says_how_to_make_one(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("export")
    assert code == Exit.FAILED
    assert "series apply" in err


def test_patch_file_without_trailer_gets_one(tmp_path: Path) -> None:
    spec = PatchSpec("P1", "core: f2", {"pkg/core.py": ("return 2\n", "return 22\n")})
    project = make_project(tmp_path, [spec])
    patch = project.root / "patches/perf-P1.patch"
    patch.write_text(patch.read_text().replace("\nSeries-Id: P1\n", "\n"))
    applied(project)
    assert "Series-Id: P1" in git(project.work, "log", "-1", "--format=%B", "series")


def test_a_corrupt_hunk_is_bad_input_not_a_conflict(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    text = patch.read_text()
    patch.write_text(text.replace("@@ -3,7 +3,7 @@", "@@ -3,7 +3,9 @@"))
    assert text != patch.read_text(), "the fixture's hunk header changed: update this test"
    code, _, err = project.run("apply")
    assert code == Exit.BAD_INPUT, err
    assert "perf-P2.patch is corrupt" in err and "hint:" in err
    assert not project.work.exists()

"""series rebase over upstream merges that took a patch in whole or in part (issue 19).

The series: P1 (f1), P2 (VALUE_5) and P3, whose PR (#1002) changes f9 in
pkg/core.py and VALUE_25 in pkg/util.py. Upstream ``main`` then merges all
of P3, part of it, the same or written otherwise, or only names its PR.
Nothing of a patch leaves the series unless upstream holds it (checked by
merges) or the maintainer says so (``--skip``); where git would not stop,
the trees are plain ``git rebase``'s.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import PatchSpec, Project, git, make_project, replace_line
from rebase_helpers import commit_upstream, git_rebase_trees, manifest, snapshot

CORE, UTIL = "pkg/core.py", "pkg/util.py"
SPECS = [
    PatchSpec("P1", "core: f1 returns 101", {CORE: ("return 1\n", "return 101\n")}),
    PatchSpec("P2", "util: VALUE_5 is 55", {UTIL: ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}),
    PatchSpec(
        "P3",
        "core, util: f9 and VALUE_25",
        {CORE: ("return 9\n", "return 909\n"), UTIL: ("VALUE_25 = 25\n", "VALUE_25 = 2525\n")},
    ),
]
OWN, OTHER = "return 909\n", "return 9 * 101\n"


def project_over(tmp: Path, how: str) -> Project:
    """An applied project whose upstream main took P3: ``how`` says what and how."""
    project = make_project(tmp, SPECS)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: VALUE_20")
    if how in ("own", "full-own", "full-other", "other"):
        core = OWN if how in ("own", "full-own") else OTHER
        if how.startswith("full"):
            util = "VALUE_25 = 2525\n" if how == "full-own" else "VALUE_25 = 25 * 101\n"
            (up / "README.md").write_text("more\n")  # another patch-id than P3's
            replace_line(up / UTIL, "VALUE_25 = 25\n", util)
        commit_upstream(up, CORE, "return 9\n", core, "core: f9 (#1002)")
    elif how == "pr-only":
        commit_upstream(up, CORE, "return 8\n", "return 88\n", "core: f8 (#1002)")
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def rebase(project: Project, *args: str) -> tuple[int, str, str]:
    return project.run("rebase", "--onto", "main", "--upstream", str(project.upstream), *args)


def trees(project: Project) -> list[str]:
    return git(project.work, "log", "--reverse", "--format=%T", "refs/series/base..series").split()


def p3_patch(project: Project) -> str:
    return (project.root / "patches" / "perf-P3.patch").read_text()


def changed_lines(patch: str) -> list[str]:
    body = patch.split("\ndiff --git", 1)[1].split("\n-- \n", 1)[0]
    return [
        line for line in body.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]


def test_fully_upstream_in_own_lines_is_dropped(tmp_path: Path) -> None:
    project = project_over(tmp_path, "full-own")
    oracle = git_rebase_trees(project, "main")
    took = git(project.upstream, "rev-parse", "main")
    code, _out, err = rebase(project, "--drop-merged")
    assert code == 0, err
    assert trees(project) == oracle
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P1", "P2"]
    (dropped,) = data["dropped"]
    assert dropped["id"] == "P3" and dropped["upstream_commit"] == took


def test_fully_upstream_in_another_form_is_dropped(tmp_path: Path) -> None:
    project = project_over(tmp_path, "full-other")
    code, _out, err = rebase(project, "--drop-merged")
    assert code == 0, err
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P1", "P2"]
    assert data["dropped"][0]["id"] == "P3"
    assert "another form" in data["dropped"][0]["reason"]


def test_pr_number_alone_drops_nothing(tmp_path: Path) -> None:
    project = project_over(tmp_path, "pr-only")
    oracle = git_rebase_trees(project, "main")
    before = p3_patch(project)
    code, _out, err = rebase(project, "--drop-merged")
    assert code == 0, err
    assert [p["id"] for p in manifest(project)["patch"]] == ["P1", "P2", "P3"]
    assert "dropped" not in manifest(project)
    assert trees(project) == oracle
    assert changed_lines(p3_patch(project)) == changed_lines(before)


def test_partly_upstream_in_own_lines_is_reduced_without_a_stop(tmp_path: Path) -> None:
    project = project_over(tmp_path, "own")
    oracle = git_rebase_trees(project, "main")
    took = git(project.upstream, "rev-parse", "main")
    code, out, err = rebase(project, "--drop-merged")
    assert code == 0, err
    assert trees(project) == oracle  # git's own merge is the remainder
    text = p3_patch(project)
    assert "VALUE_25 = 2525" in text and "return 909" not in text
    assert f"Partly-Upstream: {took}" in text
    (p3,) = [p for p in manifest(project)["patch"] if p["id"] == "P3"]
    (part,) = p3["partly_upstream"]
    assert part["commit"] == took and part["took"][0].startswith("pkg/core.py:")
    assert "upstream took" in out and "P3" in out
    code, out, err = project.run("range-diff")
    assert code == 0, err
    row = next(line for line in out.splitlines() if "P3" in line)
    assert "unchanged" not in row and "dropped" not in row


def stop_other(tmp: Path) -> tuple[Project, int, str]:
    project = project_over(tmp, "other")
    code, _out, err = rebase(project, "--drop-merged")
    return project, code, err


def test_partly_upstream_in_another_form_stops_with_the_proposed_remainder(
    tmp_path: Path,
) -> None:
    project, code, err = stop_other(tmp_path)
    took = git(project.upstream, "rev-parse", "main")
    assert code == 3, err
    assert "P3" in err and "partly upstream" in err
    assert "pkg/core.py:" in err and "in another form" in err and took[:12] in err
    assert "series test P3" in err
    core = (project.work / CORE).read_text()
    assert OTHER in core and "<<<<<<<" not in core
    assert "VALUE_25 = 2525\n" in (project.work / UTIL).read_text()
    assert git(project.work, "ls-files", "-u") == ""
    code, _out, err = project.run("rebase", "--continue")
    assert code == 0, err
    text = p3_patch(project)
    assert "VALUE_25 = 2525" in text and "return 909" not in text
    assert f"Partly-Upstream: {took}" in text
    assert list((project.root / "resolutions" / "P3").glob("*.patch"))
    (p3,) = [p for p in manifest(project)["patch"] if p["id"] == "P3"]
    assert p3["partly_upstream"][0]["commit"] == took


def test_remainder_recorded_and_replayed_on_a_fresh_clone(tmp_path: Path) -> None:
    project = project_over(tmp_path / "a", "other")
    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine, ignore=shutil.ignore_patterns("work"))
    assert rebase(project, "--drop-merged")[0] == 3
    assert project.run("rebase", "--continue")[0] == 0
    other = Project(pristine, project.upstream, project.commit)
    shutil.copytree(project.root / "resolutions", pristine / "resolutions")
    assert other.run("apply")[0] == 0
    code, _out, err = rebase(other, "--drop-merged")
    assert code == 0, err
    assert other.patch_bytes() == project.patch_bytes()
    assert (pristine / "series.toml").read_text() == (project.root / "series.toml").read_text()


def test_abort_at_the_proposal_is_byte_identical(tmp_path: Path) -> None:
    project = project_over(tmp_path, "other")
    before = snapshot(project)
    assert rebase(project, "--drop-merged")[0] == 3
    code, _out, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert snapshot(project) == before


def test_skip_at_the_proposal_drops_the_whole_patch(tmp_path: Path) -> None:
    project, code, _ = stop_other(tmp_path)
    assert code == 3
    code, _out, err = project.run("rebase", "--skip")
    assert code == 0, err
    data = manifest(project)
    assert [p["id"] for p in data["patch"]] == ["P1", "P2"]
    assert data["dropped"][0]["id"] == "P3"
    assert not (project.root / "patches" / "perf-P3.patch").exists()


@pytest.mark.parametrize("how", ["other", "full-other"])
def test_without_drop_merged_the_stop_says_what_upstream_has(tmp_path: Path, how: str) -> None:
    project = project_over(tmp_path, how)
    code, _out, err = rebase(project)
    assert code == 3, err
    said = "partly upstream" if how == "other" else "upstream holds all of P3"
    assert said in err
    assert "--skip" in err and "--drop-merged" in err
    assert "<<<<<<<" in (project.work / CORE).read_text()  # an ordinary conflict stop


def test_partly_upstream_records_round_trip_through_series_toml(tmp_path: Path) -> None:
    from series.builder.message import with_parts
    from series.manifest import UpstreamPart, load
    from series.manifest_write import write_parts

    project = make_project(tmp_path, SPECS)
    path = project.root / "series.toml"
    part = UpstreamPart("a" * 40, ("pkg/core.py:35-41 in another form",), "b" * 40)
    path.write_text(write_parts(path.read_text(), {"P3": [part]}))
    (p3,) = [p for p in load(path).patches if p.id == "P3"]
    assert p3.partly_upstream == (part,)
    path.write_text(path.read_text().replace('commit = "' + "a" * 40, 'commit = "abc'))
    with pytest.raises(Exception, match="partly_upstream"):
        load(path)
    message = "core: f9\n\nWhy: test.\n\nSeries-Id: P3\n"
    trailed = with_parts(message, [("a" * 40, "pkg/core.py:35-41 in another form")])
    assert trailed.endswith(
        f"Partly-Upstream: {'a' * 40} (pkg/core.py:35-41 in another form)\nSeries-Id: P3\n"
    )
    assert with_parts(trailed, [("a" * 40, "pkg/core.py:35-41 in another form")]) == trailed


@pytest.mark.parametrize("command", ["stop", "continue", "abort"])
def test_killed_at_every_git_call_of_the_proposal_then_continue_and_abort(
    tmp_path: Path, command: str
) -> None:
    """kill -9 at every step of the stop with a proposed remainder, its --continue and --abort.

    As tests/test_rebase_kill.py does for an ordinary conflict: after each
    kill, ``--continue`` reaches the result of the run never killed (a
    start killed before it began is started again), and ``--abort`` the
    state before the rebase, byte for byte.
    """
    from test_rebase_kill import _case, abort, check_status, go_on, restore, series

    project = project_over(tmp_path / "p", "other")
    before = snapshot(project)
    argv = ["rebase", "--onto", "main", "--upstream", str(project.upstream), "--drop-merged"]
    if command == "stop":
        case = _case(command, project, before, argv)
    else:
        assert series(project, *argv).returncode == 3
        case = _case(command, project, before, ["rebase", f"--{command}"])
    killed = tmp_path / "killed"
    for n in range(1, case.total + 1):
        restore(case.template, project.root)
        run = series(project, *case.argv, kill_at=n)
        assert run.returncode == -9, (n, run.stderr[-2000:])
        check_status(project, n)
        if command != "abort":
            shutil.copytree(project.root, killed, symlinks=True)
            go_on(case, n)
            restore(killed, project.root)
            shutil.rmtree(killed)
        abort(case, n)
    assert case.total > (3 if command == "abort" else 24)  # every call (no rev-parse now)

"""series edit on real tiny repositories: stop at a patch, insert, drop, move, squash.

The project is helpers.make_project's three patches (P1 f1 -> 101, P2
VALUE_5 -> 55, P3 f9 -> 909) plus P4, which builds on P2 (VALUE_5 55 ->
555): moving P4 before P2 conflicts. Every form ends exported (patches/ and
series.toml written as `series export` writes them: `series apply` then
says "up to date" and `series export` changes nothing), and the checkout is
back on its branch, clean, with no edit in progress.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from helpers import DEFAULT_SPECS, PatchSpec, Project, git, make_project
from rebase_helpers import manifest, snapshot

P4 = PatchSpec("P4", "util: VALUE_5 is 555", {"pkg/util.py": ("VALUE_5 = 55\n", "VALUE_5 = 555\n")})


def edit_project(tmp: Path) -> Project:
    project = make_project(tmp, [*DEFAULT_SPECS, P4])
    code, _, err = project.run("apply")
    assert code == 0, err
    code, _, err = project.run("export")  # patch files in series' own form
    assert code == 0, err
    return project


def ids(project: Project) -> list[str]:
    return [p["id"] for p in manifest(project)["patch"]]


def branch_ids(project: Project) -> list[str]:
    """The Series-Id of each commit on the branch, from the base up."""
    out = git(
        project.work,
        "log",
        "--reverse",
        "--format=%(trailers:key=Series-Id,valueonly)",
        "refs/series/base..series",
    )
    return [line.strip() for line in out.splitlines() if line.strip()]


def assert_exported(project: Project) -> None:
    """Back on the branch, clean, no edit in progress, and patches/ agrees with the checkout."""
    work = project.work
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "status", "--porcelain") == ""
    assert git(work, "for-each-ref", "refs/series/rebase/state", "refs/series/stop/") == ""
    assert branch_ids(project) == ids(project)
    code, out, err = project.run("apply")
    assert code == 0 and "up to date" in out, err
    code, out, err = project.run("export")
    assert code == 0 and "0 file(s) changed" in out, err


def test_edit_a_patch_in_the_middle_amend_continue(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    before = project.patch_bytes()
    code, out, err = project.run("edit", "P2")
    assert code == 0, err
    # HEAD is P2 (P1 and P2 applied, not P3 or P4), detached, and git status says why.
    assert "VALUE_5 = 55\n" in (work / "pkg/util.py").read_text()
    assert "return 909" not in (work / "pkg/core.py").read_text()
    assert git(work, "rev-parse", "HEAD") == git(work, "rev-parse", "series~2")
    assert "refs/series/stop/edit-P2" in git(work, "status")
    code, out, err = project.run("status")
    assert code == 0 and "P2" in out and "series edit --continue" in out, err
    # git's own sequencer has nothing to act on.
    done = subprocess.run(["git", "rebase", "--continue"], cwd=work, capture_output=True)
    assert done.returncode != 0
    (work / "pkg/util.py").write_text(
        (work / "pkg/util.py").read_text().replace("VALUE_9 = 9\n", "VALUE_9 = 99\n")
    )
    git(work, "commit", "-qa", "--amend", "--no-edit")
    code, out, err = project.run("edit", "--continue")
    assert code == 0, err
    assert ids(project) == ["P1", "P2", "P3", "P4"]
    after = project.patch_bytes()
    assert after["perf-P1.patch"] == before["perf-P1.patch"]
    assert after["perf-P2.patch"] != before["perf-P2.patch"]
    assert "+VALUE_9 = 99" in after["perf-P2.patch"].decode()
    text = (work / "pkg/util.py").read_text()
    assert "VALUE_9 = 99\n" in text and "VALUE_5 = 555\n" in text
    assert_exported(project)


def test_edit_after_a_patch_inserts_new_patches_there(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    code, _, err = project.run("edit", "--after", "P1")
    assert code == 0, err
    assert git(work, "rev-parse", "HEAD") == git(work, "rev-parse", "series~3")
    (work / "pkg/new.py").write_text("NEW = 1\n")
    git(work, "add", "pkg/new.py")
    git(work, "commit", "-qm", "new: a module of its own")
    code, _out, err = project.run("edit", "--continue")
    assert code == 0, err
    assert ids(project) == ["P1", "P5", "P2", "P3", "P4"]
    new = next(p for p in manifest(project)["patch"] if p["id"] == "P5")
    assert new["title"] == "new: a module of its own"
    assert "+NEW = 1" in (project.root / new["file"]).read_text()
    assert_exported(project)


def test_drop_removes_the_patch_and_its_file(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    code, _out, err = project.run("edit", "--drop", "P3")
    assert code == 0, err
    assert ids(project) == ["P1", "P2", "P4"]
    assert not (project.root / "patches" / "perf-P3.patch").exists()
    assert "return 909" not in (project.work / "pkg/core.py").read_text()
    assert_exported(project)


def test_move_reorders_two_independent_patches(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    before = (project.work / "pkg/core.py").read_text()
    code, _out, err = project.run("edit", "--move", "P3", "--before", "P2")
    assert code == 0, err
    assert ids(project) == ["P1", "P3", "P2", "P4"]
    assert (project.work / "pkg/core.py").read_text() == before  # same end result
    assert_exported(project)


def test_move_that_conflicts_stops_and_abort_puts_everything_back(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    pristine = snapshot(project)
    code, _, err = project.run("edit", "--move", "P4", "--before", "P2")
    assert code == 3, err
    assert "P4" in err and "pkg/util.py" in err
    assert git(project.work, "ls-files", "-u") != ""
    code, out, err = project.run("status")
    assert code == 0 and "P4" in out
    code, _, err = project.run("edit", "--abort")
    assert code == 0, err
    assert snapshot(project) == pristine


def test_squash_a_fixup_into_its_patch(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    p1 = git(work, "rev-parse", "series~3")
    (work / "pkg/core.py").write_text(
        (work / "pkg/core.py").read_text().replace("return 2\n", "return 202\n")
    )
    git(work, "commit", "-qa", f"--fixup={p1}")
    code, _, err = project.run("export")  # export alone refuses a fixup
    assert code == 4, err
    code, _out, err = project.run("edit", "--squash")
    assert code == 0, err
    assert ids(project) == ["P1", "P2", "P3", "P4"]
    p1_file = (project.root / "patches" / "perf-P1.patch").read_text()
    assert "+    return 202" in p1_file and "+    return 101" in p1_file
    assert "fixup!" not in p1_file
    assert_exported(project)


def test_abort_at_an_edit_stop_keeps_the_amend_under_a_backup_ref(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    pristine = snapshot(project)
    code, _, err = project.run("edit", "P2")
    assert code == 0, err
    (work / "pkg/util.py").write_text(
        (work / "pkg/util.py").read_text().replace("VALUE_9 = 9\n", "VALUE_9 = 99\n")
    )
    git(work, "commit", "-qa", "--amend", "--no-edit")
    amended = git(work, "rev-parse", "HEAD")
    code, _, err = project.run("edit", "--abort")
    assert code == 0, err
    assert snapshot(project) == pristine
    backups = git(work, "for-each-ref", "--format=%(objectname)", "refs/series/backup/").split()
    assert any(
        subprocess.run(["git", "merge-base", "--is-ancestor", amended, b], cwd=work).returncode == 0
        for b in backups
    )


def test_refusals(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    code, _, err = project.run("edit", "P9")
    assert code == 2 and "no patch P9" in err
    code, _, err = project.run("edit", "P2", "--drop", "P3")
    assert code == 2, err
    code, _, err = project.run("edit", "--move", "P2")
    assert code == 2 and "--before" in err
    code, _, err = project.run("edit", "--continue")
    assert code == 2 and "no edit in progress" in err
    (work / "pkg/core.py").write_text("dirty\n")
    code, _, err = project.run("edit", "P2")
    assert code == 4, err
    git(work, "checkout", "--", "pkg/core.py")
    code, out, err = project.run("edit", "P2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["command"] == "edit" and data["stopped_at"] == "P2" and data["stop"] == "edit"
    code, _, err = project.run("edit", "P3")
    assert code == 4 and "in progress" in err
    code, _, err = project.run("export")
    assert code == 4, err
    code, _, err = project.run("edit", "--abort")
    assert code == 0, err


def test_continue_refuses_uncommitted_changes_at_an_edit_stop(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    code, _, err = project.run("edit", "P2")
    assert code == 0, err
    (work / "pkg/util.py").write_text("changed but not committed\n")
    code, _, err = project.run("edit", "--continue")
    assert code == 4 and "commit --amend" in err
    git(work, "checkout", "--", "pkg/util.py")
    stop = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "series")  # git's own command at the stop: refused, not taken
    code, _, err = project.run("edit", "--continue")
    assert code == 4 and "checkout --detach" in err
    git(work, "checkout", "-q", "--detach", stop)
    code, _, err = project.run("edit", "--continue")
    assert code == 0, err
    assert_exported(project)


def _changed_lines(patch: bytes) -> list[str]:
    """The lines a patch adds and removes, without its headers."""
    lines = patch.decode().splitlines()
    return [ln for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


def test_walkthrough_on_the_real_series(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """The maintainer's day on the real series: apply, edit P5 in the middle, add a
    patch after P6, reorder two independent patches, drop one (each ends exported),
    check-conflicts and rebase onto the shared excerpt's master (they agree), and the
    PR branches pushed to a fork with upstream's history, each PR diff its patch."""
    from test_branches_upstream import _patches, patch_id
    from test_shallow import real_project

    project = real_project(tmp_path, project_copy)
    shutil.copytree(project_copy / "resolutions", project.root / "resolutions")
    work = project.work
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(shared_upstream))
    assert code == 0, err
    start = ids(project)
    n = len(start)
    assert start[:4] == ["P1", "P2", "P5", "P6"] and n >= 13
    before = project.patch_bytes()

    code, out, err = project.run("edit", "P5")
    assert code == 0 and "edit: stopped at P5" in out, err
    assert "HEAD detached at refs/series/stop/edit-P5" in git(work, "status")
    spec = work / "keras/src/layers/input_spec.py"
    spec.write_text(spec.read_text() + "# edited in the middle of the series\n")
    git(work, "commit", "-qa", "--amend", "--no-edit")
    code, out, err = project.run("edit", "--continue")
    assert code == 0 and f"exported {n} patches" in out, err
    after = project.patch_bytes()
    changed = {name for name in before if after[name] != before[name]}
    p5 = "perf-P5-input-spec.patch"
    assert p5 in changed
    assert "+# edited in the middle of the series" in after[p5].decode()
    # A later patch of the same file (P31) is re-exported on the edited P5: its
    # blob ids and context move, the lines it adds and removes do not.
    for name in sorted(changed - {p5}):
        assert "a/keras/src/layers/input_spec.py" in after[name].decode(), name
        assert _changed_lines(after[name]) == _changed_lines(before[name]), name

    code, out, err = project.run("edit", "--after", "P6")
    assert code == 0 and "edit: stopped at P6" in out, err
    (work / "keras/src/layers/core/series_note.py").write_text('NOTE = "added after P6"\n')
    git(work, "add", "-A")
    git(work, "commit", "-qm", "layers: a note of the series")
    code, out, err = project.run("edit", "--continue")
    assert code == 0 and f"exported {n + 1} patches" in out, err
    new = ids(project)[4]
    assert ids(project)[:5] == ["P1", "P2", "P5", "P6", new] and new not in start

    code, out, err = project.run("edit", "--move", "P15", "--before", "P13")
    assert code == 0 and f"exported {n + 1} patches" in out, err
    order = ids(project)
    assert order.index("P15") + 1 == order.index("P13")

    code, out, err = project.run("edit", "--drop", "P9")
    assert code == 0 and f"exported {n} patches" in out, err
    assert "P9" not in ids(project)
    assert not list((project.root / "patches").glob("perf-P9-*.patch"))

    assert_exported(project)
    code, out, err = project.run("status")
    assert code == 0 and "nothing to do" in out, err

    # The rest of the day: check before moving, move onto upstream's master, and
    # publish the PR branches to a fork that has upstream's history.
    up = str(shared_upstream)
    code, out, err = project.run("check-conflicts", "--onto", "master", "--upstream", up)
    assert code == 0, out + err
    code, out, err = project.run("rebase", "--onto", "master", "--upstream", up)
    assert code == 0, out + err  # as check-conflicts said: the recorded resolutions replay
    assert_exported(project)
    master = git(shared_upstream, "rev-parse", "master")
    assert git(work, "merge-base", "series", master) == master
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", "--no-local", up, str(fork))
    code, out, err = project.run("branches", "--push", str(fork), "--json")
    assert code == 0, err
    pushed = json.loads(out)["branches"]
    assert pushed[0]["patch"] is None and pushed[0]["new"] == master  # the first PR's base
    files = {p.id: p.file for p in _patches(project)}
    for b in pushed[1:]:
        branch, base = b["branch"], b["base"]
        assert git(fork, "merge-base", branch, "master") == master  # upstream's history
        assert len(git(fork, "rev-list", f"{base}..{branch}").split()) == 1
        diff = git(fork, "diff", base, branch) + "\n"
        patch = (project.root / files[b["patch"]]).read_text()
        assert patch_id(fork, diff) == patch_id(fork, patch), branch

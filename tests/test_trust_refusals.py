"""Refusals no test reached: each one's guard was turned off in turn (a mutation sweep of
every ``raise RefusedError``, 2026-12-04) and the suite still passed.

Each case here is the situation the refusal is for, on a real repository: the
command refuses (exit 4) naming what is wrong, and changes nothing, where without the
refusal it said "ok" over a result that was not the user's (docs/hardening.md rows
602-607).
"""

from __future__ import annotations

from pathlib import Path

from helpers import GitShim, Project, git, make_project
from rebase_helpers import moving_project, resolve_p1
from test_branches import amend_p2, colleague_pushes, heads, setup
from test_edit import edit_project
from test_trust_lock import run

REFUSED = 4


def _files(project_root: Path) -> dict[str, bytes]:
    """series.toml and the patch files."""
    found = {p.name: p.read_bytes() for p in sorted((project_root / "patches").glob("*.patch"))}
    found["series.toml"] = (project_root / "series.toml").read_bytes()
    return found


def snapshot(project: Project) -> tuple[object, ...]:
    """The project's files (not .series/), the checkout's refs, HEAD, index and files."""
    work = project.work
    files = {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and ".series" not in p.parts
    }
    refs = git(work, "for-each-ref", "--format=%(refname) %(objectname)")
    head = (work / ".git" / "HEAD").read_text()
    return files, refs, head, git(work, "ls-files", "-s"), git(work, "status", "--porcelain")


def refused(project: Project, *argv: str) -> str:
    """``series ARGV`` in ``project``: refused (exit 4), nothing changed; its stderr."""
    before = snapshot(project)
    code, _, err = project.run(*argv)
    assert code == REFUSED, err
    assert snapshot(project) == before
    return err


# -- export ------------------------------------------------------------------------------


def test_export_refuses_a_branch_with_a_merge_commit(tmp_path: Path) -> None:
    """A merge on the branch (a colleague's work merged with ``--no-ff``): without the
    refusal, export wrote the merge as a patch of its own (perf-P4-merge-branch-side.patch,
    "Merge branch 'side'") and series.toml, exit 0 (row 602)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert project.run("export")[0] == 0
    work = project.work
    git(work, "checkout", "-q", "-b", "side", "series~1")
    (work / "pkg" / "side.py").write_text("SIDE = 1\n")
    git(work, "add", "pkg/side.py")
    git(work, "commit", "-qm", "side: a module of a colleague's")
    git(work, "checkout", "-q", "series")
    git(work, "merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")
    before = _files(project.root)
    code, _, err = project.run("export")
    assert code == REFUSED, err
    assert "refusing to export: the branch has merge commits" in err, err
    assert "linearise" in err
    assert _files(project.root) == before


def test_export_refuses_a_branch_that_does_not_sit_on_the_base(tmp_path: Path) -> None:
    """The branch reset to a line of its own (an orphan commit, as a mistaken ``git
    checkout --orphan`` and commit leaves it): without the refusal, an internal error
    (a traceback, exit 70) (row 603)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert project.run("export")[0] == 0
    work = project.work
    git(work, "checkout", "-q", "--orphan", "elsewhere")
    git(work, "commit", "-qm", "a line of its own")
    git(work, "branch", "-f", "series", "elsewhere")
    git(work, "checkout", "-q", "series")
    before = _files(project.root)
    code, _, err = project.run("export")
    assert code == REFUSED, err
    assert "does not sit on the upstream base" in err, err
    assert _files(project.root) == before


# -- edit --continue -----------------------------------------------------------------------


def test_edit_continue_refuses_a_fixup_commit_made_at_the_stop(tmp_path: Path) -> None:
    """``git commit --fixup`` at an edit stop: without the refusal, --continue replayed
    the later patches over it, and only the edit's closing export refused the fixup
    (exit 4, "were never squashed"), naming no stop to go back to (row 604)."""
    project = edit_project(tmp_path)
    work = project.work
    assert project.run("edit", "P2")[0] == 0
    util = work / "pkg" / "util.py"
    util.write_text(util.read_text().replace("VALUE_9 = 9\n", "VALUE_9 = 99\n"))
    git(work, "commit", "-qa", "--fixup", "HEAD")
    stopped = snapshot(project)
    code, _, err = project.run("edit", "--continue")
    assert code == REFUSED, err
    assert "a fixup commit at the stop" in err and "commit --amend" in err, err
    assert snapshot(project) == stopped
    assert project.run("edit", "--abort")[0] == 0


def test_edit_continue_refuses_a_head_moved_off_the_patches_before_the_stop(
    tmp_path: Path,
) -> None:
    """At the stop, HEAD detached at the pin and a commit made there (the patch before
    the stop, P1, is no longer below it): without the refusal, --continue replayed the
    later patches onto that commit and stopped at P4's conflict with it, exit 3, as
    though the user had made the new series so (row 605)."""
    project = edit_project(tmp_path)
    work = project.work
    assert project.run("edit", "P2")[0] == 0
    git(work, "checkout", "-q", "--detach", "refs/series/base")
    (work / "pkg" / "new.py").write_text("NEW = 1\n")
    git(work, "add", "pkg/new.py")
    git(work, "commit", "-qm", "new: a module")
    stopped = snapshot(project)
    code, _, err = project.run("edit", "--continue")
    assert code == REFUSED, err
    assert "no longer stands on the patches before P2" in err, err
    assert snapshot(project) == stopped


def test_edit_refuses_to_start_over_an_interrupted_export(tmp_path: Path) -> None:
    """An export killed half way (its journal in .series/): the refusal names it and the
    way on (``series export`` finishes it); without it, edit was refused for the
    commits the export had not written yet, naming neither (row 606)."""
    project = edit_project(tmp_path)
    work = project.work
    util = work / "pkg" / "util.py"
    util.write_text(util.read_text().replace("VALUE_9 = 9\n", "VALUE_9 = 99\n"))
    git(work, "commit", "-qa", "--amend", "--no-edit")
    journal = project.root / ".series" / "export-journal.json"
    for n in range(1, 100):  # the first step at which a killed export leaves its journal
        killed = run(project, "export", SERIES_FAULT_KILL_AT=str(n))
        assert killed.returncode == -9, (n, killed.stderr)
        if journal.exists():
            break
    assert journal.exists()
    stopped = snapshot(project)
    code, _, err = project.run("edit", "P2")
    assert code == REFUSED, err
    assert "an export was interrupted" in err and "series export" in err, err
    assert snapshot(project) == stopped
    assert project.run("export")[0] == 0  # the way on
    assert project.run("edit", "P2")[0] == 0


# -- branches --push ----------------------------------------------------------------------

HOOK = "#!/bin/sh\necho 'branch protection: no pushes today' >&2\nexit 1\n"


def test_a_push_the_remote_declines_is_said_so_not_ok(tmp_path: Path) -> None:
    """The remote's pre-receive hook declines every push (a branch protection): without
    the refusal, ``branches --push`` said it was pushing 4 branches and ended with exit
    0, and the remote had none of them (row 607)."""
    project, remote = setup(tmp_path)
    hook = Path(remote) / "hooks" / "pre-receive"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    code, _, err = project.run("branches", "--push", remote)
    assert code == REFUSED, err
    assert f"{remote} refused the push: nothing was pushed" in err, err
    assert "pre-receive hook declined" in err, err
    assert heads(remote) == {}
    hook.unlink()
    assert project.run("branches", "--push", remote)[0] == 0  # the way on
    assert set(heads(remote)) == set(heads(project.work)) - {"series"}


def test_a_forced_push_whose_backup_cannot_be_fetched_changes_nothing(tmp_path: Path) -> None:
    """``--force`` over a colleague's commit on the remote keeps it first: when the fetch
    of it fails (a git shim fails that fetch alone), nothing is pushed, no branch moves
    here or there, and the refusal says how to go on (row 616; with the refusal off:
    exit 0, their commit replaced with no backup)."""
    project, remote = setup(tmp_path)
    assert project.run("branches", "--push", remote)[0] == 0
    theirs = colleague_pushes(tmp_path, remote, "perf-P2")
    amend_p2(project)
    before = snapshot(project)
    shim = GitShim(tmp_path, f'case "$*" in *fetch*" {remote} "*) echo down >&2; exit 128;; esac\n')
    code, _, err, calls = shim.said(project.root, "branches", "--push", remote, "--force")
    assert code == REFUSED, err
    assert any(c.startswith("fetch") and remote in c for c in calls), calls
    assert "cannot keep a backup of the remote branches" in err and "nothing was pushed" in err
    assert "perf-P2" in err and "--force` again" in err, err
    assert heads(remote)["perf-P2"] == theirs
    assert snapshot(project) == before
    assert project.run("branches", "--push", remote, "--force")[0] == 0  # the way on
    assert git(project.work, "rev-parse", "refs/series/backup/remote/perf-P2") == theirs


# -- rebase --onto ----------------------------------------------------------------------


def test_a_rebase_is_not_started_over_one_stopped_with_head_back_on_the_branch(
    tmp_path: Path,
) -> None:
    """A rebase stopped at P1's conflict, and the user back on the branch (``git switch
    series``, the conflict thrown away with ``--force``): another ``rebase --onto`` is
    refused, the stopped one named, its state kept for --abort (row 608). Refusal off:
    the state's compare-and-swap stopped it later, exit 1, "moved while series was
    working ... someone else changed it meanwhile", naming no rebase in progress."""
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    assert project.run("rebase", "--onto", "main")[0] == 3
    git(work, "switch", "-q", "--force", "series")
    state = git(work, "for-each-ref", "refs/series/rebase/")
    code, _, err = project.run("rebase", "--onto", "main")
    assert code == REFUSED, err
    assert "a rebase is already in progress in" in err and "--abort" in err, err
    assert git(work, "for-each-ref", "refs/series/rebase/") == state
    code, _, err = project.run("rebase", "--abort")
    assert code == 0, err


def test_a_rebase_is_not_started_with_head_off_the_branch(tmp_path: Path) -> None:
    """HEAD on a branch of the user's (``git switch -c mine``, a commit there): ``rebase
    --onto`` refuses, naming the branch it works on, and changes nothing (row 609).
    Refusal off: the series rebased with HEAD on ``mine``, exit 0."""
    project = moving_project(tmp_path)
    work = project.work
    git(work, "switch", "-q", "-c", "mine")
    (work / "pkg" / "mine.py").write_text("MINE = 1\n")
    git(work, "add", "pkg/mine.py")
    git(work, "commit", "-qm", "mine: a module")
    err = refused(project, "rebase", "--onto", "main")
    assert "is not on branch series" in err and "switch series" in err, err


def test_a_rebase_is_not_started_from_a_checkout_that_holds_part_of_the_series(
    tmp_path: Path,
) -> None:
    """P3 does not apply (its context edited in its file): the checkout holds P1 and P2.
    ``rebase --onto`` refuses, naming what is applied and what series.toml lists, and
    changes nothing: P3 and its file stay in the series (row 610). Refusal off: "2
    patches onto main", exit 0, and P3 gone from series.toml (its file left behind)."""
    project = moving_project(tmp_path)
    patch = project.root / "patches" / "perf-P3.patch"
    patch.write_text(patch.read_text().replace("-    return 9", "-    return 99"))
    assert project.run("apply")[0] == 3
    err = refused(project, "rebase", "--onto", "main")
    assert "does not hold the whole series" in err and "applied: P1, P2" in err, err


def test_a_rebase_is_not_started_over_patch_files_changed_since_the_apply(
    tmp_path: Path,
) -> None:
    """P2's patch file edited by hand after the apply (not taken into the checkout):
    ``rebase --onto`` refuses, saying so and the two ways on, and changes nothing: the
    edit is neither lost nor taken unseen (row 611). Refusal off: the checkout's P2,
    not the edited file, rebased and exported, exit 0."""
    project = moving_project(tmp_path)
    patch = project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().replace("+VALUE_5 = 55", "+VALUE_5 = 56"))
    err = refused(project, "rebase", "--onto", "main")
    assert "patches/ differ from the checkout" in err and "series apply" in err, err


# -- a rebase or an edit taken up again ----------------------------------------------------


def test_a_stopped_rebase_is_not_taken_up_once_its_branch_moved(tmp_path: Path) -> None:
    """At a stop, P1 resolved, the branch moved (``git branch -f series series~1``: a
    commit of the series gone from it): ``--continue`` refuses, saying where it was and
    is, and changes nothing (row 612). Refusal off: the resolution recorded, the replay
    made, then the branch's compare-and-swap failed at the end, exit 1, "someone else
    changed it meanwhile"."""
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    assert project.run("rebase", "--onto", "main")[0] == 3
    resolve_p1(work)
    git(work, "branch", "-f", "series", "series~1")
    err = refused(project, "rebase", "--continue")
    assert "branch series moved since the rebase began" in err and "--abort" in err, err


def test_an_edit_is_not_taken_up_by_the_rebase_command(tmp_path: Path) -> None:
    """An edit stopped at P2: ``series rebase --continue`` (or ``--skip``) refuses,
    naming the edit and its own command, and changes nothing (row 613). Refusal off: an
    internal error (a traceback, exit 70)."""
    project = edit_project(tmp_path)
    assert project.run("edit", "P2")[0] == 0
    before = snapshot(project)
    for action in ("--continue", "--skip"):
        code, _, err = project.run("rebase", action)
        assert code == REFUSED, err
        assert "a `series edit` is in progress" in err and "series edit --continue" in err
        assert snapshot(project) == before
    assert project.run("edit", "--continue")[0] == 0

"""No commit is lost: what HEAD and the series branch reach stays reachable from a printed ref.

The invariant (docs/workflow.md, "What is kept"): every commit reachable
from the checkout's HEAD (detached or on any branch) or from its series
branch before a command, and anything committed or left uncommitted at a
rebase stop, is reachable from a named ref after it, and the command
prints that ref. Commits series wrote itself (up to ``refs/series/synced``,
and a rebase's replayed commits) are rebuilt from patches/ and are not
kept. Each case below lost the commit (or the changes) before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import Project, git, make_project
from rebase_helpers import moving_project
from test_rebase import rebase

BACKUP = re.compile(r"refs/series/backup/[^\s^~`]+[0-9A-Za-z]")  # not REF~ or REF^2


def applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def users(refs: list[str]) -> set[str]:
    """Backup refs of the user's work: not the one a finished rebase keeps of the old series."""
    return {r for r in refs if not r.endswith("-rebase")}


def printed_backup(output: str) -> str:
    """The one backup ref of the user's work the command printed."""
    refs = users(BACKUP.findall(output))
    assert len(refs) == 1, output
    return refs.pop()


def reaches(work: Path, ref: str, commit: str) -> bool:
    return commit in git(work, "rev-list", ref).split()


def commit_file(work: Path, name: str, text: str, subject: str) -> str:
    (work / name).write_text(text)
    git(work, "add", name)
    git(work, "commit", "-qm", subject)
    return git(work, "rev-parse", "HEAD")


def test_detached_head_commit_survives_apply_force(tmp_path: Path) -> None:
    project = applied(tmp_path)
    work = project.work
    git(work, "checkout", "-q", "--detach")
    mine = commit_file(work, "mine.txt", "detached work\n", "work on a detached HEAD")
    code, _, err = project.run("apply")
    assert code == 4 and "--force" in err
    code, out, err = project.run("apply", "--force")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert reaches(work, ref, mine)
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert "mine.txt" in git(work, "show", "--name-only", "--format=", mine)


def test_head_on_a_user_branch_is_named_by_apply_force(tmp_path: Path) -> None:
    project = applied(tmp_path)
    work = project.work
    git(work, "switch", "-q", "-c", "mine")
    first = commit_file(work, "a.txt", "a\n", "mine: a")
    second = commit_file(work, "b.txt", "b\n", "mine: b")
    code, out, err = project.run("apply", "--force")
    assert code == 0, err
    assert git(work, "rev-parse", "refs/heads/mine") == second
    assert reaches(work, "refs/heads/mine", first)
    assert "branch mine" in out + err and second[:12] in out + err  # said where they are
    assert BACKUP.search(out + err) is None  # nothing to back up: the branch keeps them


def test_detached_head_and_unexported_branch_both_kept_under_one_ref(tmp_path: Path) -> None:
    project = applied(tmp_path)
    work = project.work
    ours = commit_file(work, "a.txt", "a\n", "unexported on the branch")
    git(work, "checkout", "-q", "--detach", "HEAD~1")
    detached = commit_file(work, "b.txt", "b\n", "on a detached HEAD")
    code, out, err = project.run("apply", "--force")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert reaches(work, ref, ours) and reaches(work, ref, detached)


def stopped(tmp_path: Path) -> Project:
    project = moving_project(tmp_path, conflict=True)
    code, _, err = rebase(project)
    assert code == 3, err
    return project


def commit_at_stop(project: Project) -> str:
    """A plain ``git commit`` of the conflicted file (markers and all) during the stop."""
    work = project.work
    (work / "pkg" / "core.py").write_text("resolved my way\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "resolved by hand at the stop")
    return git(work, "rev-parse", "HEAD")


def test_commit_at_a_rebase_stop_survives_abort(tmp_path: Path) -> None:
    project = stopped(tmp_path)
    mine = commit_at_stop(project)
    code, _, err = project.run("rebase", "--continue")
    assert code == 4 and "--abort" in err
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert reaches(project.work, ref, mine)
    assert git(project.work, "status", "--porcelain") == ""
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""


def test_commit_at_a_rebase_stop_survives_skip(tmp_path: Path) -> None:
    project = stopped(tmp_path)
    mine = commit_at_stop(project)
    code, out, err = project.run("rebase", "--skip")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert reaches(project.work, ref, mine)
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "status", "--porcelain") == ""
    subjects = git(project.work, "log", "--format=%s", "refs/series/base..series")
    assert "resolved by hand" not in subjects  # kept aside, not put into the series


def test_uncommitted_changes_at_a_rebase_stop_survive_abort(tmp_path: Path) -> None:
    project = stopped(tmp_path)
    work = project.work
    (work / "pkg" / "core.py").write_text("half resolved\n")
    (work / "notes.txt").write_text("my notes\n")
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert git(work, "show", f"{ref}:pkg/core.py") == "half resolved"
    assert git(work, "show", f"{ref}:notes.txt") == "my notes"
    assert "uncommitted" in out + err
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""
    code, out, _ = project.run("status", "--json")
    assert code == 0
    commit = git(work, "rev-parse", ref)
    assert json.loads(out)["backups"] == [{"ref": ref, "commit": commit}]
    code, out, _ = project.run("status")
    assert code == 0 and f"backups:    1 ref(s) of kept work, newest {ref}" in out


def test_uncommitted_changes_at_a_rebase_stop_survive_skip(tmp_path: Path) -> None:
    project = stopped(tmp_path)
    work = project.work
    (work / "pkg" / "util.py").write_text("an edit beside the conflict\n")
    code, out, err = project.run("rebase", "--skip")
    assert code == 0, err
    ref = printed_backup(out + err)
    assert git(work, "show", f"{ref}:pkg/util.py") == "an edit beside the conflict"


def test_changes_on_an_unborn_branch_at_a_rebase_stop_survive_abort_and_skip(
    tmp_path: Path,
) -> None:
    """HEAD on a branch with no commit yet (``git checkout --orphan`` at the stop): git
    status lists the files against no commit, and they were thrown away unkept."""
    for action in ("--abort", "--skip"):
        project = stopped(tmp_path / action.strip("-"))
        work = project.work
        git(work, "add", "-A")  # git checks out no branch over conflict stages
        git(work, "checkout", "-q", "--orphan", "elsewhere")
        (work / "pkg" / "util.py").write_text("precious, never committed\n")
        (work / "notes.txt").write_text("my notes\n")
        code, out, err = project.run("rebase", action)
        assert code == 0, err
        ref = printed_backup(out + err)
        assert git(work, "show", f"{ref}:pkg/util.py") == "precious, never committed"
        assert git(work, "show", f"{ref}:notes.txt") == "my notes"
        # on the commit the rebase had stopped at: its diff is what the user changed there
        changed = git(work, "diff", "--name-only", f"{ref}~", ref).split()
        assert "pkg/util.py" in changed and "notes.txt" in changed


def test_what_is_staged_apart_from_the_files_at_a_stop_survives_abort_and_skip(
    tmp_path: Path,
) -> None:
    """A resolution staged, then the file restored in the work tree: only the index held
    it, and the snapshot of the files did not keep it."""
    for action in ("--abort", "--skip"):
        project = stopped(tmp_path / action.strip("-"))
        work = project.work
        (work / "pkg" / "core.py").write_text("resolved my way, staged only\n")
        git(work, "add", "pkg/core.py")
        git(work, "restore", "--worktree", "--source=HEAD", "pkg/core.py")
        assert git(work, "status", "--porcelain", "pkg/core.py") == "MM pkg/core.py"
        code, out, err = project.run("rebase", action)
        assert code == 0, err
        ref = printed_backup(out + err)
        assert git(work, "show", f"{ref}^2:pkg/core.py") == "resolved my way, staged only"
        assert f"{ref}~ {ref}^2`" in out + err  # the command says where it is
        assert git(work, "rev-parse", f"{ref}~") == git(work, "rev-parse", f"{ref}^2~")


def test_project_files_edited_by_hand_at_a_stop_are_kept_by_abort(tmp_path: Path) -> None:
    """series.toml (its hand-kept keys) and a patch file edited during a rebase or an edit,
    then ``--abort``: they were put back from the snapshot and the edits were gone, with
    no copy and no word of it."""
    for kind in ("rebase", "edit"):
        if kind == "rebase":
            project = stopped(tmp_path / kind)
        else:
            project = applied(tmp_path / kind)
            code, _, err = project.run("edit", "P2")
            assert code == 0, err
        root = project.root
        patch = sorted((root / "patches").glob("*.patch"))[0]
        before = {p: p.read_bytes() for p in (root / "series.toml", patch)}
        with (root / "series.toml").open("a") as toml:
            toml.write("# a note kept by hand\n")
        with patch.open("a") as text:
            text.write("# edited by hand\n")
        code, out, err = project.run(kind, "--abort")
        assert code == 0, err
        assert {p: p.read_bytes() for p in before} == before  # put back, as abort promises
        found = re.search(rf"kept in (\.series/backups/{kind}-abort-\S+)", out + err)
        assert found, out + err
        copies = root / found.group(1)
        assert (copies / "series.toml").read_text().endswith("# a note kept by hand\n")
        copied = copies / patch.relative_to(root)
        assert copied.read_text().endswith("# edited by hand\n")


def test_a_plain_stop_aborted_or_skipped_keeps_nothing(tmp_path: Path) -> None:
    for action in ("--abort", "--skip"):
        project = stopped(tmp_path / action.strip("-"))
        code, out, err = project.run("rebase", action)
        assert code == 0, err
        assert not users(BACKUP.findall(out + err)), out + err
        refs = git(project.work, "for-each-ref", "--format=%(refname)", "refs/series/backup/")
        assert not users(refs.split())
        # a rebase that ends (--skip) keeps the series it replaced, as git's ORIG_HEAD
        assert len(refs.split()) == (1 if action == "--skip" else 0), refs
        assert "kept in .series/backups" not in out + err  # no project file was changed


def test_export_keeps_the_commits_it_rewrites(tmp_path: Path) -> None:
    project = applied(tmp_path)
    work = project.work
    mine = commit_file(work, "new.txt", "new\n", "a new patch, no trailer")
    code, out, err = project.run("export")
    assert code == 0, err
    assert git(work, "rev-parse", "series") != mine  # normalised: the trailer was added
    ref = printed_backup(out + err)
    assert reaches(work, ref, mine)
    code, out, err = project.run("export")  # nothing rewritten: nothing kept
    assert code == 0 and BACKUP.search(out + err) is None


def test_a_second_forced_branches_run_keeps_the_first_backup(tmp_path: Path) -> None:
    project = applied(tmp_path)
    work = project.work
    kept = []
    for n in (1, 2):  # someone else's commit on perf-P2, replaced with --force, twice
        tree = git(work, "rev-parse", "HEAD^{tree}")
        theirs = git(work, "commit-tree", tree, "-p", project.commit, "-m", f"theirs {n}")
        git(work, "branch", "-f", "perf-P2", theirs)
        code, out, err = project.run("branches", "--force")
        assert code == 0, err
        kept.append(theirs)
        for commit in kept:  # every earlier backup is still there
            refs = git(work, "for-each-ref", "--format=%(refname)", "--contains", commit)
            backups = [r for r in refs.split() if r.startswith("refs/series/backup/")]
            assert backups, (n, commit)
        assert any(r in out + err for r in backups)  # the new one is printed

"""A git command of the user's left in progress in the checkout at a series stop:
``--continue``, ``--skip`` and ``--abort`` of a rebase or an edit refuse, and lose nothing.

At a stop the checkout is the user's: they may run ``git merge``,
``git cherry-pick``, ``git revert``, ``git am`` or a plain ``git rebase``
there, and one that stops (a conflict, ``--no-commit``) leaves its marker
in the git directory (series.git.inprogress). main's ``--continue`` took
the half-made merge's files as the stop's resolution, and ``--abort`` reset
them away (docs/hardening.md). Each test makes the state with git itself on
a real stopped rebase or a real edit stop, then checks that every resume
refuses with its exit code and hint, that nothing moved (refs, HEAD, index,
files, the marker), and that once git's command is ended the resume works.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import Project, git, replace_line
from rebase_helpers import moving_project, resolve_p1
from series.errors import Exit
from series.git.inprogress import MARKERS, in_progress
from test_edit import edit_project
from test_trust_git_in_progress import STATES


def _rebase(project: Project) -> tuple[int, str, str]:
    return project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))


def _everything(project: Project) -> dict[str, object]:
    """The project's files, the checkout's refs, HEAD, index and files, and the git
    directory's markers of a command in progress (with what they hold)."""
    work, git_dir = project.work, project.work / ".git"
    return {
        "files": {
            str(p.relative_to(project.root)): p.read_bytes()
            for p in sorted(project.root.rglob("*"))
            if p.is_file() and ".git" not in p.parts
        },
        "refs": git(work, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": (git(work, "rev-parse", "HEAD"), (git_dir / "HEAD").read_text()),
        "index": git(work, "ls-files", "-s"),
        "status": git(work, "status", "--porcelain", "--untracked-files=all"),
        "markers": {
            str(p.relative_to(git_dir)): p.read_bytes()
            for marker, _, _ in MARKERS
            for p in [git_dir / marker, *sorted((git_dir / marker).rglob("*"))]
            if p.is_file()
        },
    }


def _refused(project: Project, kind: str, command: str) -> None:
    """Every resume of ``kind`` refuses, naming git's ``command``, and nothing moves."""
    before = _everything(project)
    for action in ("--continue", "--skip", "--abort"):
        code, out, err = project.run(kind, action)
        assert code == Exit.REFUSED, (action, code, err)
        assert f"a git {command} is in progress in {project.work.resolve()}" in err, err
        end = in_progress(str(project.work / ".git"))
        assert end is not None and f"({end[2]}, in" in err, err
        assert "then run the command again" in err, err
        assert "--force" not in err, err  # the resumes have no --force to speak of
        assert "Traceback" not in err and out == "", (action, out)
        assert _everything(project) == before, action


def _side_commit(work: Path, start: str, path: str, old: str, new: str) -> str:
    """A commit off ``start`` that changes ``old`` to ``new`` in ``path``; HEAD is left
    where it was."""
    head = git(work, "rev-parse", "HEAD")
    git(work, "switch", "-q", "--detach", start)
    replace_line(work / path, old, new)
    git(work, "commit", "-qam", f"side: {new.strip()}")
    side = git(work, "rev-parse", "HEAD")
    git(work, "switch", "-q", "--detach", head)
    return side


CORE = "pkg/core.py"


def test_a_git_merge_at_a_rebase_stop_refuses_every_resume(tmp_path: Path) -> None:
    """The stop's resolution taken by ``git merge --no-commit`` of a branch that has it:
    main's --continue recorded the merge's files and left MERGE_HEAD for the next commit."""
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    assert _rebase(project)[0] == Exit.CONFLICT
    git(work, "reset", "-q", "--hard")  # the conflict dropped: the stop's HEAD, clean
    side = _side_commit(work, "HEAD", CORE, "return -1\n", "return 1001\n")
    git(work, "merge", "-q", "--no-ff", "--no-commit", side)
    assert (work / ".git" / "MERGE_HEAD").is_file()
    _refused(project, "rebase", "merge")
    git(work, "merge", "--abort")
    resolve = git_status(work, "cherry-pick", "--no-commit", side)
    assert resolve == 0 and not (work / ".git" / "CHERRY_PICK_HEAD").exists()
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err


def test_a_cherry_pick_left_at_a_rebase_stop_refuses_every_resume(tmp_path: Path) -> None:
    """P1 cherry-picked at its own stop, its conflict resolved and added, not committed:
    CHERRY_PICK_HEAD stays until ``git cherry-pick --continue`` or ``--abort``."""
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    assert _rebase(project)[0] == Exit.CONFLICT
    git(work, "reset", "-q", "--hard")
    side = _side_commit(work, "HEAD~", CORE, "return 1\n", "return 101\n")
    assert git_status(work, "cherry-pick", side) != 0  # a conflict with the new base
    assert (work / ".git" / "CHERRY_PICK_HEAD").is_file()
    text = (work / CORE).read_text()
    start, end = text.index("<<<<<<< "), text.index(">>>>>>> ")
    end = text.index("\n", end) + 1
    (work / CORE).write_text(f"{text[:start]}    return 1001\n{text[end:]}")
    git(work, "add", CORE)
    _refused(project, "rebase", "cherry-pick")
    git(work, "cherry-pick", "--abort")
    replace_line(work / CORE, "return -1\n", "return 1001\n")
    git(work, "add", CORE)
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err


def test_a_git_rebase_left_at_an_edit_stop_refuses_every_resume(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    code, _, err = project.run("edit", "P1")
    assert code == 0, err
    side = _side_commit(work, "HEAD", CORE, "return 101\n", "return 5\n")
    replace_line(work / CORE, "return 101\n", "return 6\n")
    git(work, "commit", "-qam", "P1, changed at the stop")
    assert git_status(work, "rebase", side) != 0  # git's own rebase, stopped at a conflict
    assert (work / ".git" / "rebase-merge").is_dir()
    _refused(project, "edit", "rebase")
    git(work, "rebase", "--abort")
    code, _, err = project.run("edit", "--continue")
    assert code == 0, err
    assert "return 6" in (work / CORE).read_text()


def test_a_git_revert_left_at_an_edit_stop_refuses_every_resume(tmp_path: Path) -> None:
    project = edit_project(tmp_path)
    work = project.work
    code, _, err = project.run("edit", "P2")
    assert code == 0, err
    replace_line(work / "pkg" / "util.py", "VALUE_5 = 55\n", "VALUE_5 = 56\n")
    git(work, "commit", "-qam", "P2, changed at the stop")
    assert git_status(work, "revert", "HEAD~") != 0  # P2 taken back: a conflict with 56
    assert (work / ".git" / "REVERT_HEAD").is_file()
    _refused(project, "edit", "revert")
    git(work, "revert", "--abort")
    code, _, err = project.run("edit", "--abort")
    assert code == 0, err


@pytest.mark.parametrize("state", list(STATES))
def test_each_git_command_in_progress_at_a_rebase_stop_is_refused(
    tmp_path: Path, state: str
) -> None:
    """The markers as git leaves them (tests/test_trust_git_in_progress.py's STATES), on a
    real stop: every resume refuses, naming the command."""
    project = moving_project(tmp_path, conflict=True)
    assert _rebase(project)[0] == Exit.CONFLICT
    resolve_p1(project.work)
    marker, make, command = STATES[state]
    make(project.work / ".git" / marker, git(project.work, "rev-parse", "HEAD"))
    _refused(project, "rebase", command)


def git_status(cwd: Path, *args: str) -> int:
    """``git ARGS`` in ``cwd``: its exit code (a command expected to stop at a conflict)."""
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False).returncode

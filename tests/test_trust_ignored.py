"""A file git ignores is never overwritten by a move of the checkout's files.

git takes an ignored file (``.gitignore``, ``.git/info/exclude``) for one it
may throw away: ``read-tree -u`` (``-m`` and ``--reset``) writes over one at
a path the new tree tracks, silently, where it refuses to for any other
untracked file. series' snapshot of the user's work (``git status``) does not
list ignored files either. On main, a local ``pkg/settings.local`` (ignored)
was replaced by P3's file of that name when ``series apply`` took P3 in, or
``rebase --abort`` / ``--skip`` put back a series that holds it: its content
gone, nothing said. Every move now refuses first, naming the paths, and
changes nothing (or, where the branch moved already, leaves the move for the
command run again to finish, as after a kill).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import DEFAULT_SPECS, PatchSpec, Project, git, make_project
from rebase_helpers import commit_upstream
from series.errors import RefusedError
from series.git import Repo

LOCAL = "pkg/settings.local"
MINE = "my own settings, in no commit\n"
SPECS = [
    *DEFAULT_SPECS[:2],
    PatchSpec("P3", "settings: a local file", {}, new_files={LOCAL: "from P3\n"}),
]


def _project(tmp: Path, *, conflict: bool = False) -> Project:
    project = make_project(tmp, SPECS)
    if conflict:
        up = project.upstream
        commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def _ignored_in_the_way(project: Project) -> Path:
    """``*.local`` ignored (info/exclude), and a file of the user's at P3's path."""
    exclude = project.work / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("*.local\n")
    local = project.work / LOCAL
    local.write_text(MINE)
    assert LOCAL not in git(project.work, "status", "--porcelain")  # git shows nothing of it
    return local


def _refused(code: int, out: str, err: str) -> None:
    assert code == 4, (out, err)
    assert LOCAL in err and "ignore" in err, err


def test_apply_refuses_to_write_over_an_ignored_file_and_finishes_once_it_is_moved(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    code, _, err = project.run("apply", "--to", "P2")
    assert code == 0, err
    local = _ignored_in_the_way(project)
    _refused(*project.run("apply"))
    assert local.read_text() == MINE
    local.rename(tmp_path / "settings.local")
    code, _, err = project.run("apply")
    assert code == 0, err
    assert local.read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""
    code, out, _ = project.run("status")
    assert "applied:    3 of 3" in out and "interrupted" not in out


@pytest.mark.parametrize("how", ["--abort", "--skip"])
def test_abort_and_skip_refuse_to_write_over_an_ignored_file(tmp_path: Path, how: str) -> None:
    """Stopped at P1 (conflict): P3's file is not in the checkout; one of the user's,
    ignored, is there. ``--abort`` (back to the series, P3's file with it) and ``--skip``
    (P2 and P3 replayed, the branch moved, then the files) refuse; moved away, the same
    command ends as it would have (--skip's refusal came after the branch moved: run
    again, it finishes the move)."""
    project = _project(tmp_path, conflict=True)
    code, _, _ = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3  # stopped at P1's conflict
    assert not (project.work / LOCAL).exists()
    local = _ignored_in_the_way(project)
    _refused(*project.run("rebase", how))
    assert local.read_text() == MINE
    local.rename(tmp_path / "settings.local")
    code, _, err = project.run("rebase", how)  # --skip: the end's move finished
    assert code == 0, err
    assert local.read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""


@pytest.mark.parametrize("how", ["--abort", "--skip"])
def test_abort_and_skip_refuse_to_remove_a_repository_of_the_users(
    tmp_path: Path, how: str
) -> None:
    """Stopped at P1, a repository of the user's (``git init`` and a commit) at P3's path:
    ``--abort`` and ``--skip`` (``read-tree --reset -u``: git removes an untracked
    directory where the tree has a file) refuse. On main both removed it, its ``.git``
    and its files, and said the changes were kept (the snapshot held only its commit id,
    a gitlink: the commit is in no repository any more)."""
    project = _project(tmp_path, conflict=True)
    code, _, _ = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3
    nested = project.work / LOCAL
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "precious").write_text(MINE)
    git(nested, "add", "precious")
    git(nested, "commit", "-qm", "a repository of its own")
    head = git(nested, "rev-parse", "HEAD")
    code, out, err = project.run("rebase", how)
    assert code == 4, (out, err)
    assert LOCAL in err and "repositor" in err, err
    assert (nested / "precious").read_text() == MINE
    assert git(nested, "rev-parse", "HEAD") == head


def test_abort_goes_on_over_a_link_to_a_repository_elsewhere(tmp_path: Path) -> None:
    """A link at P3's path to a repository outside the checkout is no repository there:
    ``--abort`` replaces the link (the snapshot keeps it) and the repository it pointed
    to is as it was (the check of row 258 looks at the directory itself, not through a
    link)."""
    project = _project(tmp_path, conflict=True)
    code, _, _ = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    (elsewhere / "precious").write_text(MINE)
    (project.work / LOCAL).symlink_to(elsewhere)
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, (out, err)
    assert (project.work / LOCAL).read_text() == "from P3\n"
    assert (elsewhere / "precious").read_text() == MINE and (elsewhere / ".git").is_dir()
    assert "refs/series/backup/" in out + err  # the link, kept in the snapshot


def test_the_check_before_a_move_is_asked_again_once_the_index_changed(tmp_path: Path) -> None:
    """The paths a move adds (``diff-index``) are read once per tree and index file: a
    command's check before it writes anything and the one at its move share the answer
    (series.git.worktree ``_added_by``). Here the index is rewritten between the two (P3's
    file no longer staged, an ignored file of the user's there): the second check asks
    again and refuses; an answer kept for the tree alone let the move write over it."""
    project = _project(tmp_path)
    work = project.work
    tip = git(work, "rev-parse", "HEAD")
    worktree = Repo(work).worktree
    worktree.checkout_tree(None, tip, dry_run=True)  # P3's file is staged: nothing added
    git(work, "rm", "-q", "--cached", LOCAL)
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "exclude").write_text("*.local\n")
    local = work / LOCAL
    local.write_text(MINE)
    with pytest.raises(RefusedError) as refused:
        worktree.checkout_tree(None, tip, dry_run=True)
    assert LOCAL in (refused.value.why or "") and "ignore" in (refused.value.why or "")
    assert local.read_text() == MINE


def test_skip_after_a_commit_at_the_stop_asks_what_its_reset_adds(tmp_path: Path) -> None:
    """Stopped at P1, the user resolves, untracks README.md and commits (HEAD moves off
    the stop), then edits the file, which an ignore rule hides: ``--skip`` resets the
    checkout to the commit so far, which has README.md, and refuses to write over it.
    The status --skip reads says nothing of README.md (the index is HEAD's): it tells
    that the reset adds no path only where HEAD was the commit so far when it ran
    (series.git.worktree ``adds_nothing``); taken for any HEAD, the edit was lost."""
    project = _project(tmp_path, conflict=True)
    code, _, _ = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3  # stopped at P1's conflict
    work = project.work
    git(work, "add", "pkg/core.py")
    git(work, "rm", "-q", "--cached", "README.md")
    git(work, "commit", "-qm", "mine: no README")
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "exclude").write_text("README.md\n")
    readme = work / "README.md"
    readme.write_text(MINE)
    assert git(work, "status", "--porcelain") == ""  # git shows nothing of it
    code, out, err = project.run("rebase", "--skip")
    assert code == 4, (out, err)
    assert "README.md" in err and "ignore" in err, err
    assert readme.read_text() == MINE

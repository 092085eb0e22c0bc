"""A checkout recognised from its files says what git's ``rev-parse`` says (issue 23).

series.git.ref_files.own_repository answers ``Repo.is_repo`` without a
process for a repository of git's plain making; every other form (a
configuration line it does not know, a linked work tree, a ``HEAD`` git
would not take) is asked of git. Each case here is a real repository: the
answer from the files, when there is one, is git's own, and ``Repo`` says
the same as git whichever way it was told.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import git
from series.git import Repo, ref_files
from series.git.ref_files import own_repository


def made(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    (work / "f").write_text("x\n")
    git(work, "add", "f")
    git(work, "commit", "-q", "-m", "one")
    return work


def answer(work: Path) -> tuple[bool, bool, bool, Path | None, str | None]:
    """What ``Repo.is_repo`` says of ``work``, and what it learnt on the way."""
    repo = Repo(work)
    found = repo.is_repo()
    return found, repo.bare, repo.own_work_tree, repo.git_dir if found else None, repo.unopened


def same_as_git(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Repo.is_repo`` says of ``work`` what it says when it asks git's rev-parse."""
    told = answer(work)
    with monkeypatch.context() as patched:
        patched.setattr(ref_files, "own_repository", lambda work_tree: False)
        asked = answer(work)
    assert told == asked


def test_a_plain_repository_is_told_from_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = made(tmp_path)
    git(work, "remote", "add", "origin", "https://example.invalid/x.git")
    git(work, "checkout", "-q", "--detach")  # HEAD an object id
    assert own_repository(str(work))
    same_as_git(work, monkeypatch)
    git(work, "checkout", "-q", "-")  # HEAD a branch again
    assert own_repository(str(work))
    same_as_git(work, monkeypatch)


@pytest.mark.parametrize(
    "lines",
    [
        "[core]\n\tworktree = ../elsewhere\n",  # git's work tree is another directory
        "[core]\n\tbare = true\n",
        "[core] bare = false\n",  # a key on the header's line: valid for git, not plain here
        "[include]\n\tpath = other\n",  # another file may say anything
        '[includeIf "gitdir:/"]\n\tpath = other\n',
        "[extensions]\n\tworktreeConfig = true\n",
        "[core]\n\tbare\n",  # a key without a value (true)
        '[core]\n\tbare = "false"\n',
        "[core]\n\trepositoryformatversion = 1\n",
    ],
)
def test_any_other_configuration_is_asked_of_git(
    tmp_path: Path, lines: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = made(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (work / ".git" / "other").write_text("[core]\n\tbare = true\n")
    with (work / ".git" / "config").open("a") as config:
        config.write(lines)
    assert not own_repository(str(work))
    same_as_git(work, monkeypatch)


def test_other_forms_of_repository_are_asked_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = made(tmp_path)
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "--detach", str(linked))  # .git is a file there
    assert not own_repository(str(linked))
    same_as_git(linked, monkeypatch)

    moved = tmp_path / "moved"
    moved.mkdir()
    os.symlink(work / ".git", moved / ".git")  # .git a link: git follows it
    assert not own_repository(str(moved))
    same_as_git(moved, monkeypatch)

    (work / ".git" / "HEAD").write_text("not a ref\n")  # git takes no such repository
    assert not own_repository(str(work))
    same_as_git(work, monkeypatch)


def test_a_directory_inside_a_repository_is_none(tmp_path: Path) -> None:
    work = made(tmp_path)
    inner = work / "inner"
    inner.mkdir()
    assert not own_repository(str(inner))
    assert not Repo(inner).is_repo()


def test_under_sudo_git_judges_the_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as root by sudo, git takes the owner to be SUDO_UID's user: git's to say."""
    work = made(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("SUDO_UID", str(os.getuid() + 1))
    assert not own_repository(str(work))

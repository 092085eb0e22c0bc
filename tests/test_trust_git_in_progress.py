"""A git command of the user's in progress in the checkout: nothing answered from what was
kept, nothing written; apply, export, rebase and edit refuse, naming it.

One state per git command that stops for the user (series.git.inprogress):
its marker in the checkout's git directory, the files clean. main answered
a re-run of apply ("nothing changed ... its files clean", exit 0) during a
revert, a cherry-pick or revert of several commits, or a bisect, and its
full run went on during all of them but a git rebase; export refused only a
rebase or am (docs/hardening.md rows 188-195).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit
from series.git.inprogress import MARKERS, in_progress
from series.stack import verified_kept

HIT = "nothing changed since the last apply verified"


def _series(root: Path, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=os.environ,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _dir(*files: tuple[str, str]) -> Callable[[Path, str], None]:
    def make(path: Path, head: str) -> None:
        path.mkdir()
        for name, text in files:
            (path / name).write_text(text.replace("HEAD", head))

    return make


def _file(text: str) -> Callable[[Path, str], None]:
    def make(path: Path, head: str) -> None:
        path.write_text(text.replace("HEAD", head))

    return make


# (the marker, how git leaves it, the command named)
STATES = {
    "rebase": ("rebase-merge", _dir(("head-name", "refs/heads/series\n")), "rebase"),
    "rebase --apply": ("rebase-apply", _dir(("rebasing", "")), "rebase"),
    "am": ("rebase-apply", _dir(("applying", "")), "am"),
    "merge": ("MERGE_HEAD", _file("HEAD\n"), "merge"),
    "cherry-pick": ("CHERRY_PICK_HEAD", _file("HEAD\n"), "cherry-pick"),
    "revert": ("REVERT_HEAD", _file("HEAD\n"), "revert"),
    "cherry-pick A..B": ("sequencer", _dir(("todo", "pick HEAD x\n")), "cherry-pick"),
    "revert A..B": ("sequencer", _dir(("todo", "revert HEAD x\n")), "revert"),
    "bisect": ("BISECT_LOG", _file("git bisect start\n"), "bisect"),
}


@pytest.fixture
def settled(tmp_path: Path) -> Project:
    """Applied, exported, a re-run of apply answered before the CLI (its entry kept)."""
    project = make_project(tmp_path)
    for args in (("apply",), ("export",), ("apply",), ("apply",)):
        code, _, err = _series(project.root, *args)
        assert code == 0, (args, err)
    assert HIT in err
    return project


def test_every_marker_of_git_is_one_of_the_states() -> None:
    assert {marker for marker, _, _ in MARKERS} == {m for m, _, _ in STATES.values()}


@pytest.mark.parametrize("state", list(STATES))
def test_a_git_command_in_progress_is_refused_and_never_answered_from_a_kept_entry(
    settled: Project, state: str
) -> None:
    project = settled
    marker, make, command = STATES[state]
    git_dir = project.work / ".git"
    head = git(project.work, "rev-parse", "HEAD")
    refs = git(project.work, "for-each-ref")
    patches = project.patch_bytes()
    make(git_dir / marker, head)
    try:
        assert in_progress(str(git_dir)) is not None
        assert in_progress(str(git_dir))[1] == command  # type: ignore[index]
        env_root = str(project.root.resolve())
        entry = verified_kept.entry_path(env_root, os.environ["SERIES_CACHE_DIR"], "apply")
        assert os.path.isfile(entry)  # kept, and not taken
        said = f"a git {command} is in progress in {project.work.resolve()}"
        for args in (("apply",), ("apply", "--force"), ("export",), ("edit", "P1")):
            code, out, err = _series(project.root, *args)
            assert code == Exit.REFUSED and said in err, (args, err)
            assert HIT not in err and out == "" and "Traceback" not in err, (args, err)
            assert str(git_dir / marker) in err, err
        code, _, err = project.run("rebase", "--onto", "v1.0")
        assert code == Exit.REFUSED and said in err, err
        assert git(project.work, "for-each-ref") == refs and project.patch_bytes() == patches
        assert git(project.work, "status", "--porcelain") == ""
    finally:
        path = git_dir / marker
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink()
    code, _, err = _series(project.root, "apply")
    assert code == 0 and HIT in err, err  # the marker gone: answered again

"""series edit --squash with several fixups at once, against git's own autosquash.

Each case makes fixup commits for some patches of a four-patch project
(tests/test_edit.py's: P1 f1 -> 101, P2 VALUE_5 -> 55, P3 f9 -> 909, P4
VALUE_5 55 -> 555), in an order of its own: the first and the last patch,
adjacent patches, two fixups of one patch. ``series edit --squash`` must
leave what ``git rebase -i --autosquash`` and ``series export`` leave, byte
for byte, in patches/ and series.toml, and the branch's trees and messages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import Project, git
from test_edit import assert_exported, edit_project, ids

# What a fixup of each patch changes: a line the patch made (no later patch
# touches it), or a new file where a later patch builds on the patch's line.
FIXUPS = {
    "P1": ("pkg/core.py", "return 101\n", "return 1001\n"),
    "P2": ("pkg/p2_note.txt", "", "from a fixup of P2\n"),
    "P3": ("pkg/core.py", "return 909\n", "return 9009\n"),
    "P4": ("pkg/util.py", "VALUE_5 = 555\n", "VALUE_5 = 5555\n"),
}


def make_fixups(project: Project, targets: list[str]) -> None:
    """One ``git commit --fixup`` per target, in the order given."""
    work = project.work
    commits = dict(
        zip(
            ids(project),
            git(work, "rev-list", "--reverse", "refs/series/base..series").split(),
            strict=True,
        )
    )
    for n, pid in enumerate(targets):
        path, old, new = FIXUPS[pid]
        file = work / path
        if old:
            text = file.read_text()
            assert old in text
            file.write_text(text.replace(old, new, 1))
        else:
            file.write_text(f"{new}{n}\n")
            git(work, "add", path)
        git(work, "commit", "-qa", f"--fixup={commits[pid]}")


def autosquashed(project: Project, tmp: Path) -> Project:
    """A copy of the project where git's autosquash and ``series export`` did the squash."""
    copy = Project(tmp / "by-git", project.upstream, project.commit)
    shutil.copytree(project.root, copy.root, symlinks=True)
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "true"}
    subprocess.run(
        ["git", "rebase", "-q", "-i", "--autosquash", "refs/series/base"],
        cwd=copy.work,
        env=env,
        check=True,
        capture_output=True,
    )
    code, _, err = copy.run("export")
    assert code == 0, err
    return copy


def branch(project: Project) -> list[tuple[str, str]]:
    """(tree, message) of each commit on the branch, from the base up."""
    out = git(project.work, "log", "--reverse", "--format=%T%n%B%x00", "refs/series/base..series")
    commits = [c.strip("\n").split("\n", 1) for c in out.split("\0") if c.strip()]
    return [(tree, message) for tree, message in commits]


@pytest.mark.parametrize(
    "targets",
    [
        ["P1", "P2"],  # adjacent, the first patch
        ["P2", "P3"],  # adjacent, in the middle
        ["P4", "P1", "P3"],  # the last and the first, made out of order
        ["P1", "P2", "P3", "P4"],  # every patch
        ["P2", "P4", "P2"],  # two fixups of one patch
    ],
)
def test_several_fixups_squash_as_git_autosquash_does(tmp_path: Path, targets: list[str]) -> None:
    project = edit_project(tmp_path)
    make_fixups(project, targets)
    expected = autosquashed(project, tmp_path)
    code, _out, err = project.run("edit", "--squash")
    assert code == 0, err
    assert ids(project) == ["P1", "P2", "P3", "P4"]
    assert project.patch_bytes() == expected.patch_bytes()
    assert (project.root / "series.toml").read_bytes() == (
        expected.root / "series.toml"
    ).read_bytes()
    assert branch(project) == branch(expected)
    assert_exported(project)

"""The answers kept before the CLI, behind a ``git`` that is a wrapper script.

series.git.version keeps no verdict for a wrapper script (a version
manager's shim): the git behind it may change while the script's file does
not, so the full run asks it every run. The answers said again before the
CLI is imported (series.stack.branches_kept, series.stack.verified_kept)
know git by its file too: behind a script they ask it again, and a git
grown too old behind an unchanged script is refused as the full run
refuses it, never answered from what a newer git checked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import GitShim, make_project
from series.errors import Exit
from series.git.itself import parse

OLD = "git version 2.20.0"


class Shim(GitShim):
    """The test shim, which answers ``git version`` as an old git once ``old`` exists
    (the script's own file never changes)."""

    def __init__(self, tmp: Path) -> None:
        old = tmp / "old"
        super().__init__(
            tmp, prelude=f'if [ "$1" = version ] && [ -e "{old}" ]; then echo "{OLD}"; exit 0; fi\n'
        )
        self.old = old


@pytest.mark.parametrize("words", [("apply",), ("branches", "--dry-run")])
def test_a_git_grown_old_behind_an_unchanged_script_is_refused_not_answered(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    project = make_project(tmp_path)
    shim = Shim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, *words)
    first = shim.said(project.root, *words)  # kept by now: said again before the CLI
    assert first[0] == 0, first[2]
    again = shim.said(project.root, *words)
    assert again[:3] == first[:3]
    assert len(again[3]) <= 1, again[3]  # apply: its git status; branches: nothing
    shim.old.touch()
    code, out, err, _ = shim.said(project.root, *words)
    assert code == Exit.FAILED, (code, out, err)
    assert "git 2.20.0 is too old: series needs git 2.39 or later" in err, err
    assert out == ""
    shim.old.unlink()
    assert shim.said(project.root, *words)[:3] == first[:3]


@pytest.mark.parametrize(
    ("said", "version"),
    [
        ("git version 2.39.1\n", (2, 39, 1)),
        ("git version 2.39\n", (2, 39, 0)),
        ("git version 2.47.1.windows.2\n", (2, 47, 1)),
        ("git version 2.45.0-rc1\n", (2, 45, 0)),
        ("git version 2.39rc0\n", (2, 39, 0)),
        ("git version 2\n", None),
        ("git version 2x.39\n", None),
        ("git version .2.39\n", None),
        ("hub version 2.14.2\n", None),
        ("", None),
    ],
)
def test_the_version_is_read_as_git_prints_it(said: str, version: tuple[int, ...] | None) -> None:
    assert parse(said) == version


def named_git(path: Path, said: str) -> None:
    """A git at ``path`` (a script: asked each run) that says ``said`` to ``git version``
    and runs the real git for the rest."""
    real = shutil.which("git")
    path.unlink(missing_ok=True)
    path.write_text(f'#!/bin/sh\n[ "$1" = version ] && {{ echo "{said}"; exit 0; }}\n')
    path.write_text(path.read_text() + f'exec "{real}" "$@"\n')
    path.chmod(0o755)


@pytest.mark.parametrize("words", [("apply",), ("status",), ("branches", "--dry-run")])
def test_an_old_git_named_by_git_python_git_executable_is_refused_not_answered(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    """GitPython starts the git ``GIT_PYTHON_GIT_EXECUTABLE`` names (series.git.run), the
    kept answers only the git on PATH. main: with that variable naming an old git, the
    kept answers (apply's and the dry run's before the CLI, status's kept report, apply's
    verified record) said what they kept, exit 0, where the full run refused the git when
    it first used GitPython, and called it "the git first on PATH". Now the check up
    front looks at it too, and no kept answer is taken while the variable is set: the
    same refusal either way, naming the variable; a git named new enough answers as
    before, and one grown old behind the same name is refused."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, *words)
    first = shim.said(project.root, *words)  # kept by now: said again from what was kept
    assert first[0] == 0, first[2]
    named = tmp_path / "named-git"
    named_git(named, OLD)
    shim.env["GIT_PYTHON_GIT_EXECUTABLE"] = str(named)

    def refused() -> None:
        code, out, err, _ = shim.said(project.root, *words)
        assert code == Exit.FAILED, (code, out, err)
        assert "git 2.20.0 is too old: series needs git 2.39 or later" in err, err
        assert f"{named} (the git GIT_PYTHON_GIT_EXECUTABLE names) says: {OLD}" in err, err
        assert "hint: set GIT_PYTHON_GIT_EXECUTABLE to git 2.39 or later (or unset it)" in err
        assert out == ""

    refused()
    named_git(named, "git version 2.39.5")
    for _ in range(2):  # the second would be kept, were it taken
        assert shim.said(project.root, *words)[:3] == first[:3]
    named_git(named, OLD)  # grown old behind the same name
    refused()

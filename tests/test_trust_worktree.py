"""A checkout that git does not take as its own work tree is refused, by every command.

``core.bare true`` in the checkout's ``.git/config``: git sees no work tree
(main ended apply, export, status and rebase as an internal error, exit 70:
``git status`` "must be run in a work tree"). ``core.worktree`` naming another
directory: git reads and writes the files there (main's apply, re-run, said
"its files clean" and status "uncommitted: 0" of a checkout with a changed
file, from a clean copy elsewhere; a moving apply would write there). Each
is refused before anything is read or written, naming the key and how to
remove it, also where the last answer was kept (docs/hardening.md rows
201, 186, 187).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit

REFUSED = "git does not take it as its work tree"
# Every command that reads or writes the checkout (`branches` writes its branches there).
COMMANDS = [
    ("apply",),
    ("apply", "--force"),
    ("export",),
    ("status",),
    ("status", "--json"),
    ("branches",),
    ("branches", "--dry-run"),
    ("range-diff",),
    ("rebase", "--onto", "v1.0"),
    ("rebase", "--continue"),
    ("rebase", "--skip"),
    ("rebase", "--abort"),
    ("edit", "P1"),
    ("edit", "--abort"),
]


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


def _settled(tmp_path: Path) -> Project:
    """Applied, exported, and everything that can be kept kept: apply's and status's
    answers, the dry run of branches."""
    project = make_project(tmp_path)
    for args in (("apply",), ("export",), ("apply",), ("apply",), ("status",), ("status",)):
        code, _, err = _series(project.root, *args)
        assert code == 0, (args, err)
    for _ in range(2):
        code, _, err = _series(project.root, "branches", "--dry-run")
        assert code == 0, err
    return project


def _state(project: Project) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bytes]]:
    """The project's files, the checkout's refs, HEAD and index, the checkout's files."""
    files = {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and p.relative_to(project.root).parts[0] not in ("work", ".series")
    }
    dot_git = project.work / ".git"  # read as files: git cannot open it with a bad worktree
    refs = {
        str(p.relative_to(dot_git)): p.read_bytes()
        for p in sorted([dot_git / "HEAD", dot_git / "index", *(dot_git / "refs").rglob("*")])
        if p.is_file()
    }
    work = {
        str(p.relative_to(project.work)): p.read_bytes()
        for p in sorted(project.work.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(project.work).parts
    }
    return files, refs, work


def _refused_by_all(project: Project, why: str, hint: str, refused: str = REFUSED) -> None:
    before = _state(project)
    for args in COMMANDS:
        code, _, err = _series(project.root, *args)
        assert code == Exit.REFUSED, (args, code, err)
        assert refused in err and why in err and hint in err, (args, err)
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        assert _state(project) == before, args


def test_a_checkout_whose_git_config_says_bare_is_refused_by_every_command(
    tmp_path: Path,
) -> None:
    project = _settled(tmp_path)
    git(project.work, "config", "core.bare", "true")
    _refused_by_all(
        project,
        "core.bare is true",
        f"git -C {project.work.resolve()} config --unset core.bare",
    )
    git(project.work, "config", "--unset", "core.bare")  # the hint's command
    code, _, err = _series(project.root, "apply")
    assert code == 0, err


@pytest.mark.parametrize("where", ["elsewhere", "missing"])
def test_a_checkout_whose_work_tree_is_elsewhere_is_refused_by_every_command(
    tmp_path: Path, where: str
) -> None:
    project = _settled(tmp_path)
    # a clean copy of the checkout's files; or a directory that is not there, named
    # relative to the git directory (git cannot open the repository then)
    elsewhere = tmp_path / "elsewhere"
    if where == "elsewhere":
        for path in project.work.rglob("*"):
            rel = path.relative_to(project.work)
            if path.is_file() and ".git" not in rel.parts:
                (elsewhere / rel).parent.mkdir(parents=True, exist_ok=True)
                (elsewhere / rel).write_bytes(path.read_bytes())
    copy = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()}
    config = project.work / ".git" / "config"
    named = str(elsewhere) if where == "elsewhere" else "../nowhere"
    git(project.root, "config", "--file", str(config), "core.worktree", named)
    core = project.work / "pkg" / "core.py"
    core.write_bytes(core.read_bytes() + b"# changed in the checkout\n")
    why = f"git's work tree is {elsewhere}" if where == "elsewhere" else "cannot chdir"
    hint = f"git -C / config --file {config.resolve()} --unset core.worktree"
    refused = REFUSED if where == "elsewhere" else "git cannot open its repository"
    _refused_by_all(project, why, hint, refused)
    assert {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} == copy
    git(Path("/"), "config", "--file", str(config.resolve()), "--unset", "core.worktree")
    code, _, err = _series(project.root, "apply")
    assert code == Exit.REFUSED and "uncommitted changes" in err, err


def test_a_work_tree_named_by_core_worktree_that_is_the_checkout_is_taken(
    tmp_path: Path,
) -> None:
    project = _settled(tmp_path)
    git(project.work, "config", "core.worktree", "..")  # relative to .git: the checkout
    for args in (("apply",), ("status",), ("export",)):
        code, _, err = _series(project.root, *args)
        assert code == 0, (args, err)

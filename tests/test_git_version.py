"""An older git than series needs is refused up front, before anything is written
(docs/hardening.md, "Faults outside series"; series.git.version).

A fake ``git`` first on PATH says an old version to ``git version`` and runs the
real git for everything else: without the check, series went on with it (and the
real git underneath did the work), so the refusal is series' own. What is known to
be new enough is remembered in the per-user cache and costs no ``git version``
on the next command (counted with the fake's log, never timed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import Project, make_project, said_with_git
from series.errors import Exit
from test_hardening import snapshot

REAL = shutil.which("git")


class FakeGit:
    """A ``git`` first on PATH that says ``said`` to ``git version`` and runs the real
    git for the rest; every argv it gets is logged."""

    def __init__(self, tmp: Path, said: str) -> None:
        self.dir = tmp / "fake-bin"
        self.dir.mkdir(exist_ok=True)
        self.log = tmp / "fake-git.log"
        self.cache = tmp / "cache"
        self.say(said)
        self.env = {
            **os.environ,
            "PATH": f"{self.dir}{os.pathsep}{os.environ['PATH']}",
            "SERIES_CACHE_DIR": str(self.cache),
            "HOME": str(tmp / "home"),
        }

    def say(self, said: str) -> None:
        """What ``git version`` says from now on (the file is rewritten: a new git)."""
        script = (
            "#!/bin/sh\n"
            f'echo "$*" >> "{self.log}"\n'
            f'if [ "$1" = version ]; then echo "{said}"; exit 0; fi\n'
            f'exec "{REAL}" "$@"\n'
        )
        path = self.dir / "git"
        path.unlink(missing_ok=True)
        path.write_text(script)
        path.chmod(0o755)

    def run(self, root: Path, *args: str) -> tuple[int, str, list[str]]:
        """(exit code, stderr, argv of each git process) of ``series -C root ARGS``."""
        code, _, err, calls = said_with_git(self.log, self.env, 120, root, *args)
        return code, err, calls


def _refused(code: int, err: str, calls: list[str], version: str) -> None:
    assert code == Exit.FAILED, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert f"series: git {version} is too old: series needs git 2.39 or later" in err, err
    assert "merge-tree --write-tree --stdin" in err and "nothing was changed" in err, err
    assert "hint: install git 2.39 or later" in err, err
    assert calls == ["version"], calls  # no other git process started


def test_an_old_git_is_refused_before_a_first_apply_writes_anything(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    before = snapshot(project.root)
    fake = FakeGit(tmp_path, "git version 2.38.1")
    code, err, calls = fake.run(project.root, "apply")
    _refused(code, err, calls, "2.38.1")
    assert snapshot(project.root) == before
    assert not (project.root / ".series").exists() and not (project.root / "work").exists()
    assert not fake.cache.exists() or not any(fake.cache.iterdir())


def _applied(tmp_path: Path) -> tuple[Project, FakeGit]:
    """A project applied and exported with a git that says it is new enough."""
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "git version 2.39.5")
    for command in ("apply", "export"):
        code, err, _ = fake.run(project.root, command)
        assert code == 0, err
    return project, fake


@pytest.mark.parametrize(
    "argv",
    [
        ["apply"],  # a re-run answered from what was verified: one git status, no GitPython
        ["export"],
        ["status"],
        ["list"],
        ["branches", "--dry-run"],  # git started without GitPython (light_processes)
        ["check-conflicts"],
        ["rebase", "--onto", "v1.0"],
    ],
    ids=lambda argv: "-".join(argv),
)
def test_an_old_git_is_refused_by_every_command_and_nothing_changes(
    tmp_path: Path, argv: list[str]
) -> None:
    project, fake = _applied(tmp_path)
    before = snapshot(project.root)
    head = (project.work / ".git" / "HEAD").read_bytes()
    fake.say("git version 2.30.2")  # the same path, another file: asked again
    code, err, calls = fake.run(project.root, *argv)
    _refused(code, err, calls, "2.30.2")
    assert snapshot(project.root) == before
    assert (project.work / ".git" / "HEAD").read_bytes() == head


def test_a_git_whose_version_cannot_be_read_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "hello")
    code, err, calls = fake.run(project.root, "apply")
    assert code == Exit.FAILED, err
    assert "cannot tell which version git is: series needs git 2.39 or later" in err, err
    assert "says: hello" in err and calls == ["version"], (err, calls)
    assert not (project.root / "work").exists()


def _asked(trace: Path) -> int:
    """How many ``git version`` the git binary ran (its own GIT_TRACE), and the trace
    emptied for the next command."""
    text = trace.read_text() if trace.exists() else ""
    trace.unlink(missing_ok=True)
    return sum(line.endswith("trace: built-in: git version") for line in text.splitlines())


def test_a_git_known_new_enough_is_not_asked_again_until_it_changes(tmp_path: Path) -> None:
    """git itself (a binary named git: here a copy of the real one) first on PATH: its
    verdict is kept and no command asks again until the file changes. Counted by git's
    own trace (a logging script in front of it would be a wrapper, asked each run)."""
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "unused")
    binary = fake.dir / "git"
    binary.unlink()
    assert REAL is not None
    shutil.copy2(os.path.realpath(REAL), binary)
    trace = tmp_path / "trace"
    fake.env["GIT_TRACE"] = str(trace)
    code, err, _ = fake.run(project.root, "apply")
    assert code == 0, err
    assert _asked(trace) == 1  # the first command asks once
    for command in ("apply", "status", "export", "list"):
        code, err, _ = fake.run(project.root, command)
        assert code == 0, err
        assert _asked(trace) == 0, command
    binary.unlink()  # upgraded: another file at the same path
    shutil.copy2(os.path.realpath(REAL), binary)
    code, err, _ = fake.run(project.root, "apply")
    assert code == 0 and _asked(trace) == 1, err
    code, err, _ = fake.run(project.root, "apply")
    assert code == 0 and _asked(trace) == 0, err


def test_a_wrapper_script_is_asked_each_run_as_the_git_behind_it_may_change(
    tmp_path: Path,
) -> None:
    """A wrapper script first on PATH (a version manager's shim) runs a git its own file
    does not name: the verdict was kept by the script's file, so a git behind it that
    changed (here: what the shim's configuration names) was not asked again, and an old
    git went on. Now a script is asked each run, and the old git is refused."""
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "unused")
    chosen = tmp_path / "chosen-version"  # the shim's configuration: which git it runs
    chosen.write_text("git version 2.39.5\n")
    script = (
        "#!/bin/sh\n"
        f'echo "$*" >> "{fake.log}"\n'
        f'if [ "$1" = version ]; then cat "{chosen}"; exit 0; fi\n'
        f'exec "{REAL}" "$@"\n'
    )
    (fake.dir / "git").write_text(script)
    for command in ("apply", "status"):
        code, err, calls = fake.run(project.root, command)
        assert code == 0, err
        assert calls.count("version") == 1, (command, calls)  # asked each run, once
    chosen.write_text("git version 2.30.2\n")  # the shim now runs an old git
    before = snapshot(project.root)
    code, err, calls = fake.run(project.root, "apply")
    _refused(code, err, calls, "2.30.2")
    assert snapshot(project.root) == before


def test_a_refusal_is_not_remembered(tmp_path: Path) -> None:
    """Only a new-enough verdict is kept: the old git is asked (and refused) each time."""
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "git version 2.20.0")
    for _ in range(2):
        code, err, calls = fake.run(project.root, "apply")
        _refused(code, err, calls, "2.20.0")


def test_the_git_first_on_path_is_the_one_checked(tmp_path: Path) -> None:
    """A new git known, then an old one put first on PATH: refused, though the new one is
    remembered."""
    project = make_project(tmp_path)
    fake = FakeGit(tmp_path, "git version 2.39.5")
    code, err, _ = fake.run(project.root, "apply")
    assert code == 0, err
    old = tmp_path / "old-bin"
    old.mkdir()
    said = 'if [ "$1" = version ]; then echo "git version 2.1.4"; fi'
    (old / "git").write_text(f"#!/bin/sh\n{said}\n")
    (old / "git").chmod(0o755)
    fake.env["PATH"] = f"{old}{os.pathsep}{fake.env['PATH']}"
    code, err, _ = fake.run(project.root, "status")
    assert code == Exit.FAILED and "git 2.1.4 is too old" in err, err

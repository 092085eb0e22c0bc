"""Builders for the rebase tests: a tiny project whose upstream moves on.

The project is helpers.make_project's (P1 f1 -> 101, P2 VALUE_5 -> 55, P3
f9 -> 909 on upstream v1.0); the upstream's ``main`` then gets commits that
leave the series alone, conflict with P1, or carry P3 (same change, or only
its PR number in the subject).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from helpers import Project, git, make_project, replace_line


def commit_upstream(up: Path, path: str, old: str, new: str, subject: str) -> str:
    replace_line(up / path, old, new)
    git(up, "commit", "-qam", subject, date="2026-03-01T10:00:00+00:00")
    return git(up, "rev-parse", "HEAD")


def moving_project(
    tmp: Path, *, conflict: bool = False, carries_p3: bool = False, names_p3: bool = False
) -> Project:
    """An applied project whose upstream ``main`` moved past the pin."""
    project = make_project(tmp)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: VALUE_20")
    if conflict:
        commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    if carries_p3:
        commit_upstream(up, "pkg/core.py", "return 9\n", "return 909\n", "core: f9 is 909")
    if names_p3:
        commit_upstream(up, "pkg/core.py", "return 8\n", "return 88\n", "core: f8 (#1002)")
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def resolve_p1(work: Path, line: str = "return 1001") -> None:
    """P1's conflict in pkg/core.py (a rebase onto moving_project's conflicting
    upstream) resolved by hand in the work tree ``work``: everything from its first
    marker to its last replaced by ``line``, and staged."""
    core = work / "pkg" / "core.py"
    text = core.read_text()
    start, end = text.index("<<<<<<< new base"), text.index(">>>>>>> P1\n") + len(">>>>>>> P1\n")
    core.write_text(f"{text[:start]}    {line}\n{text[end:]}")
    git(work, "add", "pkg/core.py")


def manifest(project: Project) -> dict[str, Any]:
    return tomllib.loads((project.root / "series.toml").read_text())


BACKUP = "refs/series/backup/"


def abort_copy(path: Path, kept: Path) -> bool:
    """Whether ``path`` is in a copy ``--abort`` kept (``.series/backups/<kind>-abort-*``)."""
    return path.is_relative_to(kept) and path.relative_to(kept).parts[0].split("-")[1] == "abort"


def snapshot(project: Project) -> dict[str, Any]:
    """Everything a rebase may touch: project files, checkout refs, HEAD, index, files.

    Backup refs are left out: ``--abort`` adds one when the checkout held
    work of the user's; so are the copies it keeps under ``.series/backups/``
    of project files that differed from the rebase's snapshot, the user's
    edits or what a rebase's end cut short had written (tests/test_trust_commits.py
    checks both).
    """
    work = project.work
    kept = project.root / ".series" / "backups"
    files = {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file()
        and ".git" not in p.parts
        and "resolutions" not in p.parts
        and not (abort_copy(p, kept))
    }
    return {
        "files": files,
        "refs": "\n".join(  # not the backups of the user's work that --abort keeps
            line
            for line in git(work, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith(BACKUP)
        ),
        "head": git(work, "symbolic-ref", "-q", "HEAD"),
        "index": git(work, "ls-files", "-s"),
        "status": git(work, "status", "--porcelain", "--untracked-files=all"),
    }


def git_rebase_trees(project: Project, onto: str) -> list[str]:
    """The trees plain ``git rebase --onto ONTO PIN`` gives, patch by patch (oracle)."""
    clone = project.root.parent / "oracle"
    git(project.root.parent, "clone", "-q", str(project.work), str(clone))
    git(clone, "fetch", "-q", str(project.upstream), f"+{onto}:refs/oracle/onto")
    base = git(project.work, "rev-parse", "refs/series/base")
    git(clone, "checkout", "-q", "series")
    git(clone, "rebase", "-q", "--onto", "refs/oracle/onto", base)
    out = git(clone, "log", "--reverse", "--format=%T", "refs/oracle/onto..HEAD")
    return out.split()

"""series range-diff: per patch, between two versions of the series."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers import Project, git, make_project, replace_line
from rebase_helpers import moving_project, resolve_p1
from test_rebase import rebase


def range_diff(project: Project, *args: str) -> dict[str, Any]:
    code, out, err = project.run("range-diff", "--json", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def kinds(data: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["kind"] for p in data["patches"]}


def test_after_a_rebase_it_compares_with_the_series_before(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    data = range_diff(project)
    assert "before the last `series rebase`" in data["old"]
    assert kinds(data) == {"P1": "content changed", "P2": "unchanged", "P3": "unchanged"}
    p1 = data["patches"][0]
    assert " ! " in p1["range_diff"].splitlines()[0] and "return 1001" in p1["range_diff"]
    assert " = " in data["patches"][1]["range_diff"]
    code, out, _ = project.run("range-diff", "P2")
    assert code == 0 and "P2   unchanged" in out and "P1" not in out


def test_since_a_commit_of_the_project_and_the_default(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    root = project.root
    git(root, "init", "-q")
    (root / ".gitignore").write_text("work/\n.series/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    first = git(root, "rev-parse", "HEAD")
    assert project.run("apply")[0] == 0
    # Change P2's content in the checkout, as a maintainer would, and export it.
    git(project.work, "checkout", "-q", "HEAD~1")
    replace_line(project.work / "pkg" / "util.py", "VALUE_5 = 55\n", "VALUE_5 = 56\n")
    git(project.work, "commit", "-q", "--amend", "-a", "--no-edit")
    git(project.work, "cherry-pick", "series")
    git(project.work, "branch", "-f", "series", "HEAD")
    git(project.work, "checkout", "-q", "series")
    code, _, err = project.run("export")
    assert code == 0, err
    data = range_diff(project)  # patches/ differ from the last commit: compared with it
    assert first[:12] in data["old"]
    assert kinds(data) == {"P1": "unchanged", "P2": "content changed", "P3": "unchanged"}
    git(root, "commit", "-qam", "P2: 56")
    data = range_diff(project)  # committed: compared with the commit before
    assert kinds(data)["P2"] == "content changed"
    data = range_diff(project, "--since", "HEAD")
    assert set(kinds(data).values()) == {"unchanged"}
    code, _, err = project.run("range-diff", "--since", "no-such-commit")
    assert code == 2 and "not a commit" in err


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_a_project_repository_git_cannot_open_is_refused(tmp_path: Path) -> None:
    """The project's directory given to another user: git refuses its repository ("dubious
    ownership"). Taken for no repository, the range-diff compared with the series before
    the last rebase, exit 0, where the project's last commit that changed patches/ is the
    version to compare with: it says why it cannot, as it does of such a checkout."""
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    root = project.root
    git(root, "init", "-q")
    (root / ".gitignore").write_text("work/\n.series/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    replace_line(root / "patches" / "perf-P3.patch", "+    return 909", "+    return 919")
    assert "(the last commit that changed patches/)" in range_diff(project)["old"]
    os.chown(root, 65534, -1)
    try:
        for args in ((), ("--since", "HEAD")):
            code, out, err = project.run("range-diff", *args)
            assert code == 4 and out == "", (args, out, err)
            assert f"refusing to use the project repository {root}" in err
            assert "dubious ownership" in err
    finally:
        os.chown(root, os.getuid(), -1)

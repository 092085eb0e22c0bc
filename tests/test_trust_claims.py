"""Success claims, each check turned off: the cases no test reached.

A mutation sweep (2026-12-04) turned off, one at a time, the checks behind what a command
says when it succeeds (apply's "up to date" and what it compares before it answers from a
kept record, export's "0 file(s) changed" and its verification, status's report and its
kept record, check-conflicts' verdicts, the end of a rebase, range-diff's classes, the
plan of ``branches --dry-run``, the pass or fail of prove, lint and test), and ran the
tests of its command. The cases here are those where the suite still passed: each is the
situation the check is for, on a real repository, and fails with that check turned off
(docs/hardening.md rows 830-869).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import git, make_project


@pytest.mark.parametrize("away", ["branch", "detached"])
def test_apply_force_with_head_off_the_branch_at_its_tip_moves_head_there(
    tmp_path: Path, away: str
) -> None:
    """HEAD on another branch, or detached, at the series branch's own tip, then
    ``apply --force``: it says HEAD moves to the branch, and it must, though the stack
    it builds is the branch's tip already (row 830)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    tip = git(project.work, "rev-parse", "series")
    if away == "branch":
        git(project.work, "switch", "-q", "-c", "mine")
    else:
        git(project.work, "switch", "-q", "--detach")
    code, out, err = project.run("apply", "--force")
    assert code == 0, err
    assert git(project.work, "symbolic-ref", "-q", "HEAD") == "refs/heads/series", out + err
    assert git(project.work, "rev-parse", "series") == tip
    assert "up to date" not in out, out
    if away == "branch":
        assert git(project.work, "rev-parse", "mine") == tip  # the user's branch stays
    code, out, err = project.run("apply")  # and a plain re-run is up to date
    assert code == 0 and "up to date" in out, err

"""``series status`` names a git command of the user's in progress in the checkout, and
what to do: finish it or abort it.

apply, export, rebase and edit (and every resume) refuse while git's merge,
cherry-pick, revert, am, rebase or bisect is in progress
(series.git.inprogress); main's status said nothing of it ("next: nothing to
do"), also when it answered from the report it had kept
(series.status_memo): a marker file changes no ref and no index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, git, make_project, replace_line
from rebase_helpers import moving_project
from series.errors import Exit
from series.git.inprogress import in_progress
from test_trust_git_in_progress import STATES


def _status(project: Project) -> tuple[str, dict[str, object]]:
    code, out, err = project.run("status")
    assert code == Exit.OK, err
    code, js, err = project.run("status", "--json")
    assert code == Exit.OK, err
    return out, json.loads(js)


@pytest.fixture
def applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


@pytest.mark.parametrize("state", list(STATES))
def test_status_names_each_git_command_in_progress_also_from_its_kept_report(
    applied: Project, state: str
) -> None:
    project = applied
    out, report = _status(project)
    _status(project)  # the quiet report is kept: the next run answers from it
    assert report["git_in_progress"] is None and "nothing to do" in out
    marker, make, command = STATES[state]
    path = project.work / ".git" / marker
    make(path, git(project.work, "rev-parse", "HEAD"))
    out, report = _status(project)
    said = report["git_in_progress"]
    assert isinstance(said, dict), report
    assert said["command"] == command and said["marker"] == str(path), said
    assert f"git {command} is in progress" in out and str(path) in out, out
    assert f"a git {command} is in progress" in str(report["next"]), report["next"]
    assert "finish it or abandon it" in str(report["next"]) and said["end"] in str(report["next"])
    assert "nothing to do" not in out


def test_status_names_a_real_git_merge_and_forgets_it_once_aborted(applied: Project) -> None:
    project, work = applied, applied.work
    git(work, "switch", "-q", "-c", "side")
    replace_line(work / "pkg" / "core.py", "return 2\n", "return 22\n")
    git(work, "commit", "-qam", "side: f2")
    git(work, "switch", "-q", "series")
    git(work, "merge", "-q", "--no-ff", "--no-commit", "side")
    out, report = _status(project)
    assert report["git_in_progress"] == {
        "command": "merge",
        "marker": str(work.resolve() / ".git" / "MERGE_HEAD"),
        "end": "git merge --continue (or git commit), or git merge --abort",
    }
    assert "git merge --abort" in out and "next:" in out
    git(work, "merge", "--abort")
    out, report = _status(project)
    assert report["git_in_progress"] is None
    assert report["next"] == "nothing to do: the checkout and patches/ agree"


def test_status_at_a_rebase_stop_puts_the_git_command_first(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == Exit.CONFLICT, err
    (work / ".git" / "CHERRY_PICK_HEAD").write_text(git(work, "rev-parse", "HEAD") + "\n")
    out, report = _status(project)
    rebase = report["rebase"]
    assert isinstance(rebase, dict) and rebase["stopped_at"] == "P1"  # still reported
    assert str(report["next"]).startswith("a git cherry-pick is in progress"), report["next"]
    assert "`series rebase --continue`" in str(report["next"])  # what comes after
    assert "rebase:" in out and "git cherry-pick --continue, or --abort" in out


def _bounded(root: Path, *args: str) -> tuple[int, str, str]:
    """``series -C root ARGS`` as its own process, which must end within a minute."""
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=os.environ,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_a_fifo_as_the_sequencer_s_todo_blocks_nothing(applied: Project) -> None:
    """series.git.inprogress reads the sequencer's first line (cherry-pick or revert); a
    FIFO there made every writing command wait for a writer for ever. (``git status``
    itself waits on it too: ``series status`` refuses it, tests/test_trust_plain.py.)"""
    project = applied
    sequencer = project.work / ".git" / "sequencer"
    sequencer.mkdir()
    os.mkfifo(sequencer / "todo")
    code, _, err = _bounded(project.root, "apply")
    assert code == Exit.REFUSED and "a git cherry-pick is in progress" in err, err
    found = in_progress(str(project.work / ".git"))  # in this process: after the bound
    assert found is not None and found[1] == "cherry-pick"


def test_a_fifo_in_place_of_the_kept_status_report_blocks_nothing(applied: Project) -> None:
    project = applied
    assert _bounded(project.root, "status")[0] == 0  # worked out, and kept
    code, said, _ = _bounded(project.root, "status")
    (kept,) = (Path(os.environ["SERIES_CACHE_DIR"]) / "status").iterdir()
    kept.unlink()
    os.mkfifo(kept)
    assert _bounded(project.root, "status") == (code, said, "")

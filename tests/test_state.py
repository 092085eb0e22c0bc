"""The checkout state: one transaction per command, validated on load, and errors by kind.

apply and export change the branch, refs/series/base, refs/series/synced
and refs/series/state in one compare-and-swap transaction; these tests
move a ref underneath a running command, damage the state, kill apply at
every git call, and check the internal-error path of the CLI.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers import Project, git, make_project
from series import cli
from series.backup import Kept
from series.checkout import Checkout
from series.commands import apply
from series.commands import list as list_cmd
from series.errors import Exit, InternalError
from series.git import GitFailed, RefMoved
from series.git.refs import Refs
from series.project import Series
from series.ui import Ui


def refs(work: Path) -> str:
    return git(work, "for-each-ref", "--format=%(refname) %(objectname)")


def reword(project: Project, patch_id: str) -> None:
    """Change a patch's message, so apply has a new tip to write."""
    path = project.root / "patches" / f"perf-{patch_id}.patch"
    path.write_text(path.read_text().replace("Why: test.", "Why: a reworded test."))


class _MovesTheBranch(Ui):
    """Moves the branch with plain git once the stack is being built (after the checks)."""

    def __init__(self, work: Path, target: str) -> None:
        super().__init__(io.StringIO(), io.StringIO())
        self.work, self.target = work, target

    def status(self, text: str) -> None:
        super().status(text)
        if text.startswith("upstream:"):
            git(self.work, "update-ref", "refs/heads/series", self.target)


def test_a_ref_moved_underneath_apply_fails_the_whole_transaction(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    work = project.work
    other = git(work, "rev-parse", "HEAD~1")
    reword(project, "P2")
    before = refs(work)
    series = Series.load(project.root)
    with pytest.raises(RefMoved) as raised:
        apply.run(series, _MovesTheBranch(work, other))
    error = raised.value
    assert error.message == "refs/heads/series moved while series was working"
    assert error.exit_code == Exit.FAILED and "nothing was changed" in error.why
    assert "git -C" in error.hint
    # nothing of the transaction happened: only the other party's move is there
    tip = git(work, "rev-parse", "refs/series/synced")
    assert refs(work) == before.replace(f"refs/heads/series {tip}", f"refs/heads/series {other}")
    # through the CLI it is an ordinary failure with a hint, not a traceback
    git(work, "update-ref", "refs/heads/series", tip)
    code = cli.main(["-C", str(project.root), "apply"], out=io.StringIO(), err=io.StringIO())
    assert code == 0  # without the race it works


def _damage(work: Path, text: str) -> None:
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=work,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(work, "update-ref", "refs/series/state", blob)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"format": 99, "applied": [], "source": "git"}', "written by another version"),
        ('{"format": 2, "applied": ["P1"], "so', "damaged"),  # truncated
        ("not json at all", "damaged"),
        ('{"format": 2, "source": "git"}', "'applied' is not a list"),
        ('{"format": 2, "applied": [], "source": "ftp"}', "'source'"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_bad_state_is_a_clear_error_and_changes_nothing(
    tmp_path: Path, text: str, says: str
) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    _damage(project.work, text)
    before = refs(project.work)
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == Exit.FAILED, err
        assert says in err and "hint:" in err and "Traceback" not in err
    assert refs(project.work) == before


def test_a_format_1_state_file_is_read_and_replaced(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    work = project.work
    git(work, "update-ref", "-d", "refs/series/state")
    legacy = work / ".git" / "series" / "state.json"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text(json.dumps({"format": 1, "applied": ["P1", "P2", "P3"], "source": "git"}))
    code, out, err = project.run("apply")
    assert code == 0, err and "up to date" in out
    reword(project, "P1")
    assert project.run("apply")[0] == 0
    assert not legacy.exists()
    state = json.loads(git(work, "cat-file", "blob", "refs/series/state"))
    assert state["format"] == 2 and state["applied"] == ["P1", "P2", "P3"]


def _apply_subprocess(project: Project, kill_at: int | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("SERIES_FAULT_KILL_AT", None)
    if kill_at is not None:
        env["SERIES_FAULT_KILL_AT"] = str(kill_at)
    return subprocess.run(
        [sys.executable, "-m", "series", "-C", str(project.root), "apply"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_apply_killed_at_any_git_call_leaves_old_or_new_and_recovers(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert _apply_subprocess(project, None).returncode == 0
    work = project.work
    old = (git(work, "rev-parse", "HEAD"), git(work, "cat-file", "blob", "refs/series/state"))
    path = project.root / "patches" / "perf-P2.patch"  # a new tree, so files must move
    path.write_text(path.read_text().replace("+VALUE_5 = 55", "+VALUE_5 = 56"))
    # the new state, from a clean run in a copy
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(project.root), str(copy)], check=True)
    done = Project(copy, project.upstream, project.commit)
    assert _apply_subprocess(done, None).returncode == 0
    new_tip = git(copy / "work", "rev-parse", "HEAD")
    kills = 0
    for n in range(1, 200):
        trial = tmp_path / f"trial-{n}"
        subprocess.run(["cp", "-a", str(project.root), str(trial)], check=True)
        attempt = Project(trial, project.upstream, project.commit)
        proc = _apply_subprocess(attempt, n)
        if proc.returncode == 0:
            break  # fewer than n git calls: the run completed
        assert proc.returncode == -9, proc.stderr
        kills += 1
        tw = trial / "work"
        tip = git(tw, "rev-parse", "refs/heads/series")
        state = git(tw, "cat-file", "blob", "refs/series/state")
        synced = git(tw, "rev-parse", "refs/series/synced")
        assert (tip, synced) in ((old[0], old[0]), (new_tip, new_tip)), n
        assert (tip == old[0]) == (state == old[1]), n  # the state moved with the refs
        again = _apply_subprocess(attempt, None)
        assert again.returncode == 0, (n, again.stderr)
        assert git(tw, "rev-parse", "HEAD") == new_tip
        assert git(tw, "status", "--porcelain") == "", n
        assert "VALUE_5 = 56" in (tw / "pkg" / "util.py").read_text(), n
        subprocess.run(["rm", "-rf", str(trial)], check=True)
    assert kills > 5  # the hook really stopped apply at its git calls


def test_an_internal_error_exits_70_and_says_it_is_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)

    def broken(series: Series, ui: Ui, *, as_json: bool = False) -> Exit:
        raise GitFailed(["rev-parse", "HEAD"], 128, "fatal: bad object HEAD")

    monkeypatch.setattr(list_cmd, "run", broken)
    err = io.StringIO()
    code = cli.main(["-C", str(project.root), "list"], out=io.StringIO(), err=err)
    assert code == Exit.INTERNAL and int(code) == 70
    text = err.getvalue()
    assert text.startswith("series: internal error: git rev-parse HEAD failed unexpectedly")
    assert "fatal: bad object HEAD" in text and "bug in series" in text
    assert "Traceback" not in text
    err = io.StringIO()
    assert cli.main(["-C", str(project.root), "-v", "list"], err=err) == 70
    assert "Traceback" in err.getvalue()
    assert issubclass(GitFailed, InternalError)


def test_an_unexpected_exception_is_an_internal_error_with_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)

    def broken(series: Series, ui: Ui, *, as_json: bool = False) -> Exit:
        raise KeyError("applied")

    monkeypatch.setattr(list_cmd, "run", broken)
    err = io.StringIO()
    assert cli.main(["-C", str(project.root), "list"], err=err) == Exit.INTERNAL
    assert "internal error" in err.getvalue() and "KeyError" in err.getvalue()


def _end_like_a_rebase(
    project: Project, line: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Kept | None, list[list[str]]]:
    """The checkout's write as a rebase's end makes it (the branch moved one commit back,
    the files and HEAD with it, the old series replaced), told that ``line`` is what the
    new tip is made of; what it kept, and the commits rev-list was asked about."""
    checkout = Checkout(project.work, "series")
    state = checkout.require()
    tip = git(project.work, "rev-parse", "series")
    asked: list[list[str]] = []
    original = Refs.unreachable

    def unreachable(self: Refs, tips: Sequence[str], *args: Any, **kwargs: Any) -> list[str]:
        asked.append(list(tips))
        return original(self, tips, *args, **kwargs)

    monkeypatch.setattr(Refs, "unreachable", unreachable)
    kept = checkout.prepare_write(
        "rebase",
        prior=state,
        tip=(tip, line[-1]),
        base=state.base,
        applied=list(state.applied[:-1]),
        source=state.source,
        move_files=True,
        replaces_series=True,
        listed=checkout.repo.refs.under("refs/"),
        line=line,
    ).commit()
    return kept, asked


def test_head_on_the_new_line_is_not_asked_about_and_one_off_it_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HEAD detached at a commit of the new tip's line (as a rebase stop leaves it) is
    reached once the branch moves there: seen from the running cat-file (that many first
    parents below the tip), no rev-list. A HEAD the caller names on the line but git finds
    elsewhere (a commit of the user's) is asked about and kept under the backup ref."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    work = project.work
    old, new, below = (git(work, "rev-parse", f"series~{k}") for k in range(3))
    git(work, "checkout", "-q", "--detach", below)
    kept, asked = _end_like_a_rebase(project, [below, new], monkeypatch)
    assert asked == [[old]]  # the old tip only: HEAD was seen on the line
    assert kept is not None and kept.tips == (("branch series", old),)
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"

    project2 = make_project(tmp_path / "second")
    assert project2.run("apply")[0] == 0
    work = project2.work
    old, new = (git(work, "rev-parse", f"series~{k}") for k in range(2))
    git(work, "checkout", "-q", "--detach", new)
    git(work, "commit", "-q", "--allow-empty", "-m", "mine")
    mine = git(work, "rev-parse", "HEAD")
    kept, asked = _end_like_a_rebase(project2, [mine, new], monkeypatch)  # not below it
    assert [mine] in asked
    assert kept is not None and ("HEAD (detached)", mine) in kept.tips
    git(work, "merge-base", "--is-ancestor", mine, kept.ref)  # fails unless the ref keeps it

"""kill -9 at every step of a rebase, then --continue and --abort: nothing is lost.

``SERIES_FAULT_KILL_AT=N`` (series.faults) SIGKILLs series at its Nth
step: each git call and each point between them where series writes a
file. Each command below is first run uninterrupted (its result, and how
many steps it takes: ``total``), then, from the same starting state each
time, killed at each of its steps in turn, N = 1 .. total:

* ``series rebase --onto`` that replays a recorded resolution (``start``);
* ``series rebase --onto`` that stops at a conflict (``stop``);
* ``series rebase --continue`` after that conflict was resolved by hand;
* ``series rebase --skip`` at that conflict;
* ``series rebase --abort`` at that conflict.

After each kill, ``series status`` exits 0 without a traceback and names
the rebase in progress exactly when its state exists. Then, each from a
copy of the killed state:

* ``--continue`` reaches exactly the result of the run never killed
  (patches/, series.toml, resolutions/, every ref of the checkout, HEAD,
  index, work tree): finished, or stopped at the same conflict written the
  same way. Where the killed command had not reached its first
  transaction, the old state is what is left and the way on is the one
  for it: a start killed before it began is started again; a ``--skip``
  killed before its end leaves the rebase stopped at the conflict (its
  markers perhaps already thrown away), which ``--continue`` refuses,
  naming ``--skip``, so ``--skip`` is run again.
* ``--abort`` restores the state before the rebase byte for byte (project
  files, checkout refs, HEAD, index, work tree: rebase_helpers.snapshot),
  or, killed after the rebase's last transaction, says that it had
  finished and leaves its result; ``--abort`` killed is aborted again.

A kill between two file writes (the end's writes of patches/ and then
series.toml, ``--abort``'s restore of them, the resolution ``--continue``
records) leaves a temporary file, removed by the next command, and each
file old or new; a kill of the whole process group, git in the middle of
its work included, is tests/test_trust_recover.py's. After the last step
of a finished rebase (the summary's diffs), only the summary is printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import series as series_package
from helpers import Project, git
from rebase_helpers import moving_project, resolve_p1, snapshot
from series.code import RACY_NS


def series(
    project: Project, *args: str, kill_at: int | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SERIES_DEBUG": "1"}
    env.pop("SERIES_FAULT_KILL_AT", None)
    if kill_at is not None:
        env["SERIES_FAULT_KILL_AT"] = str(kill_at)
    argv = [sys.executable, "-m", "series", "-C", str(project.root), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


def steps(proc: subprocess.CompletedProcess[str]) -> int:
    """How many steps (git calls and file writes: series.faults) a debug run logged."""
    return len(step_names(proc))


def step_names(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The steps a debug run logged, by name (``git status``, ``write NAME: staged``)."""
    prefix = "series.faults: step "
    return [line.split(": ", 2)[2] for line in proc.stderr.splitlines() if line.startswith(prefix)]


def start_args(project: Project) -> list[str]:
    return ["rebase", "--onto", "main", "--upstream", str(project.upstream)]


def result(project: Project) -> tuple[object, ...]:
    """What a rebase leaves: project files, resolutions/, checkout refs, HEAD, index, files."""
    work, resolved = project.work, project.root / "resolutions"
    head = subprocess.run(
        ["git", "symbolic-ref", "-q", "HEAD"], cwd=work, capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        project.patch_bytes(),
        (project.root / "series.toml").read_bytes(),
        {str(p.relative_to(resolved)): p.read_bytes() for p in sorted(resolved.rglob("*.patch"))},
        # a backup ref's name holds the time it was made: compare what it keeps
        re.sub(
            r"^(refs/series/backup/)\d{8}T\d{6}Z(-\d+)?-",
            r"\1<time>-",
            git(work, "for-each-ref", "--format=%(refname) %(objectname)"),
            flags=re.M,
        ),
        head or git(work, "rev-parse", "HEAD"),
        git(work, "ls-files", "-s"),
        git(work, "status", "--porcelain", "--untracked-files=all"),
        {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.glob("pkg/*.py"))},
    )


def restore(pristine: Path, root: Path) -> None:
    """``root`` as ``pristine`` holds it; and the cache, when ``keep_template`` kept it too."""
    shutil.rmtree(root)
    shutil.copytree(pristine, root, symlinks=True)
    cache = _cache_beside(pristine)
    if cache.is_dir():
        live = Path(os.environ["SERIES_CACHE_DIR"])
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(cache, live, symlinks=True)


def keep_template(root: Path, template: Path) -> None:
    """The state every killed run starts from: the project and the per-user cache.

    What a run finds in the cache (the new pin kept already, the patch-ids of
    upstream commits) spares it git calls, so every run starts from the cache
    the counted run had: each has the same steps. And every run, the counted
    one first, reads the cache with the same digest of series' own code
    (:func:`settle_code`).
    """
    settle_code()
    shutil.copytree(root, template, symlinks=True)
    live = Path(os.environ["SERIES_CACHE_DIR"])
    if live.is_dir():
        shutil.copytree(live, _cache_beside(template), symlinks=True)


def settle_code() -> None:
    """Wait until no module of series changed within series.code.RACY_NS of now.

    Records in the cache are kept under a digest of series' code (series.code), in
    which a module changed within RACY_NS of a run counts by its bytes and, once
    settled, by its identity: a run in that window and a run after it find different
    records for the same code. A module written just before the test (an edit, a
    checkout or a stash in the clone) so gave the counted run a record (``known/``)
    that every later run missed and wrote again, two steps more, and the run meant
    to finish (``kill_at=total + 1``) was killed. Waited for once, before the counted
    run: none of the runs after it is in that window (unless series' code changes
    while the test runs).
    """
    package = Path(series_package.__file__).parent
    newest = max(
        path.stat().st_ctime_ns for path in package.rglob("*.py") if "__pycache__" not in path.parts
    )
    left = newest + RACY_NS - time.time_ns()
    if left >= 0:
        time.sleep(left / 1e9 + 0.05)


def _cache_beside(template: Path) -> Path:
    return template.with_name(template.name + "-cache")


@dataclass
class Case:
    """A command to kill: where it starts from, what it gives, how many git calls it makes."""

    command: str
    project: Project
    template: Path  # the state every killed run starts from
    argv: list[str]
    before: dict[str, Any]  # snapshot() before the rebase began
    code: int  # the exit status of the run never killed
    wanted: tuple[object, ...]  # and its result()
    names: list[str]  # its steps, in order

    @property
    def total(self) -> int:
        return len(self.names)


def _case(command: str, project: Project, before: dict[str, Any], argv: list[str]) -> Case:
    template = project.root.parent / "template"
    keep_template(project.root, template)
    # Counted from a copy, as every killed run starts: a copied checkout's index has the
    # stat data of the files it was copied from, so checking them takes a refresh of the
    # index that a run in the original does not (series.git.worktree.files_match_index).
    restore(template, project.root)
    clean = series(project, *argv)
    code = 3 if command == "stop" else 0
    assert clean.returncode == code, clean.stderr
    return Case(command, project, template, argv, before, code, result(project), step_names(clean))


def make_case(tmp_path: Path, command: str) -> Case:
    project = moving_project(tmp_path / "p", conflict=True)
    before = snapshot(project)
    if command == "stop":
        return _case(command, project, before, start_args(project))
    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine, symlinks=True)
    assert series(project, *start_args(project)).returncode == 3  # stopped at P1
    if command == "start":  # record P1's resolution, then start again from before
        resolve_p1(project.work)
        assert series(project, "rebase", "--continue").returncode == 0
        shutil.copytree(project.root / "resolutions", pristine / "resolutions")
        restore(pristine, project.root)
        return _case(command, project, before, start_args(project))
    if command == "continue":
        resolve_p1(project.work)
    return _case(command, project, before, ["rebase", f"--{command}"])


def in_progress(project: Project) -> bool:
    return git(project.work, "for-each-ref", "refs/series/rebase/state") != ""


def check_status(project: Project, n: int) -> None:
    code, out, err = project.run("status")
    assert code == 0, (n, err)
    assert "Traceback" not in out + err and "internal error" not in err, (n, err)
    rebase = [line for line in out.splitlines() if line.startswith("rebase:")]
    if in_progress(project):
        assert len(rebase) == 1 and " onto main" in rebase[0], (n, out)
    else:
        assert rebase == [], (n, out)
    assert "\nnext:       " in out, (n, out)


def go_on(case: Case, n: int) -> None:
    """``--continue`` from the killed state (then what it says): the result of a clean run."""
    project = case.project
    code, _, err = project.run("rebase", "--continue")
    if "no rebase in progress" in err:
        if result(project) == case.wanted:
            return  # killed after the last transaction and after moving the files
        assert case.command in ("start", "stop"), (n, err)  # killed before it began
        code, _, err = project.run(*case.argv)
    elif case.command == "skip" and code in (2, 3):  # killed before the skip's end
        assert "P1" in err and "--skip" in err and in_progress(project), (n, err)
        code, _, err = project.run(*case.argv)
    assert code == case.code, (n, err)
    assert result(project) == case.wanted, n


def abort(case: Case, n: int) -> None:
    """``--abort`` from the killed state: the state before the rebase, or its finished result."""
    project = case.project
    code, out, err = project.run("rebase", "--abort")
    if "had finished" in out:  # killed after its last transaction, before the files moved
        assert case.command in ("start", "continue", "skip") and code == 0, (n, out)
        assert result(project) == case.wanted, n
    elif "no rebase in progress" in err:  # killed before it began, or after it ended
        if case.command in ("start", "stop") and snapshot(project) == case.before:
            return
        assert case.command in ("start", "continue", "skip"), (n, err)
        assert result(project) == case.wanted, n
    else:
        assert code == 0, (n, err)
        assert snapshot(project) == case.before, n


@pytest.mark.parametrize("command", ["start", "stop", "continue", "skip", "abort"])
def test_killed_at_every_git_call_then_continue_and_abort(tmp_path: Path, command: str) -> None:
    case = make_case(tmp_path, command)
    project, killed = case.project, tmp_path / "killed"
    for n in range(1, case.total + 1):
        restore(case.template, project.root)
        run = series(project, *case.argv, kill_at=n)
        assert run.returncode == -9, (n, run.stderr[-2000:])
        # the same steps as the run counted, up to the kill: none depends on timing (a
        # merge-tree stream taken for idle on a loaded machine once added one, flakily)
        assert step_names(run) == case.names[:n], (n, step_names(run), case.names)
        check_status(project, n)
        assert not list(project.root.rglob(".series-tmp-*")), n  # the killed run's, removed
        if command != "abort":  # --abort killed is only aborted again
            shutil.copytree(project.root, killed, symlinks=True)
            go_on(case, n)
            restore(killed, project.root)
            shutil.rmtree(killed)
        abort(case, n)
    restore(case.template, project.root)
    assert series(project, *case.argv, kill_at=case.total + 1).returncode == case.code
    # every call (no rev-parse now; the end reads HEAD from its file, one rev-list less)
    assert case.total > (3 if command == "abort" else 22)


def test_a_merge_stream_waits_for_a_git_at_work_however_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why ``start`` once counted 38 steps, not 37, under load: the merge-tree stream
    (series.git.mergetree.MergeStream) took a git that had shown no CPU time nor I/O for
    ``IDLE`` seconds for one whose answer sat in stdio's buffer, ended it and went back
    to batches, one git call more. A git given no CPU by a loaded machine, or waiting for
    a busy disk, is at work (series.git.child.own_activity: state R or D). Here every
    look finds "no change" at once (IDLE and TICK 0, the most loaded machine there is):
    the stream still waits for each answer, stays live, and answers as the batch does."""
    from series.git.mergetree import Merge, MergeStream
    from series.git.run import Runner

    monkeypatch.setattr(MergeStream, "IDLE", 0.0)
    monkeypatch.setattr(MergeStream, "TICK", 0.0)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for name in "abcdef":
        (repo / name).write_text("".join(f"{name} line {i}\n" for i in range(200)))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    lines = []
    for name in "abcdef":
        git(repo, "checkout", "-q", "-B", f"one-{name}", base)
        (repo / name).write_text((repo / name).read_text().replace("line 10\n", "line ten\n"))
        git(repo, "commit", "-qam", f"one {name}")
        one = git(repo, "rev-parse", "HEAD")
        git(repo, "checkout", "-q", "-B", f"two-{name}", base)
        (repo / name).write_text((repo / name).read_text().replace("line 150\n", "line 150!\n"))
        git(repo, "commit", "-qam", f"two {name}")
        lines.append(f"{one} {git(repo, 'rev-parse', 'HEAD')}")  # (git 2.39: no "base --")
    merges = Merge(Runner(repo))
    stream = merges.stream()
    assert stream.live, "stdbuf (coreutils) is on PATH: the stream is what is tested"
    try:
        answers = [stream.merge(line) for line in lines]
        assert stream.live, "a git at work was taken for one whose answer was buffered"
    finally:
        stream.close()
    assert answers == merges.trees(lines)

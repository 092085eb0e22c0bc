"""A FIFO at a loose ref other than the one HEAD names: no command waits for ever.

git opens a loose ref file (``.git/refs/heads/NAME``, ``refs/series/...``, a tag) when
it is asked for that ref, and every one of them when it lists refs (``for-each-ref``, a
fetch's negotiation): a FIFO there makes it wait for a writer for ever. main looked
only at the ref HEAD names (tests/test_trust_plain.py); with a FIFO at another,
``branches --dry-run`` (the branches), ``status`` (the backups), ``export`` (a memo ref
of the cache), and at a rebase's stop (HEAD detached) ``status``, ``apply`` and each of
``rebase --abort``, ``--skip``, ``--continue`` (the series branch, ``refs/series/base``,
the rebase's own refs) waited for ever; ``rebase --onto`` waited 30 s for its fetch
(SERIES_NET_TIMEOUT) and then said "cannot find main" in the upstream, wrongly.

series.git.run now looks before git reads them: the loose ref a name resolves to when
series asks for one (series.git.inprogress.ref_blocking, once per name), the loose refs
under the patterns of a ``for-each-ref`` or under ``refs/`` for a fetch or a repack
(refs_blocking: the directories git walks for that list anyway, once per process), and
refuses, naming the file, with the way on (``rm``), which works.

Each command runs as its own process in its own session, bounded: one that waits is
killed with everything it started, and the test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, git
from rebase_helpers import moving_project
from series.errors import Exit

BOUND = 60  # seconds: a run that waits on a FIFO never ends


def bounded(project: Project, *args: str) -> tuple[int, str]:
    """``series -C ROOT ARGS`` in its own session: exit code and stderr; on the bound, it
    and every git it started (its process group) are killed and the test fails."""
    argv = [sys.executable, "-m", "series", "-C", str(project.root), *args]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"series {' '.join(args)} still waited after {BOUND} s")
    return proc.returncode, err


def _fifo_at(git_dir: Path, ref: str) -> tuple[Path, str | None]:
    """A FIFO put in the place of the loose ref ``ref``, and what the ref held."""
    path = git_dir / ref
    held = path.read_text().strip() if path.is_file() else None
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path, held


def _put_back(path: Path, held: str | None) -> None:
    """The user's way on, as the refusal says (``rm``), and the ref as it was."""
    path.unlink()
    if held is not None:
        path.write_text(held + "\n")


def _refused(code: int, err: str, path: Path, args: tuple[str, ...]) -> None:
    """Refused before git waited (``git``, or ``git status``), naming ``path``."""
    assert code == Exit.REFUSED, (args, err)
    assert "refusing to run git" in err and f"{path} is not a plain file" in err, (args, err)
    assert f"rm '{path}'" in err and "Traceback" not in err, (args, err)


def _rebase(project: Project) -> tuple[str, ...]:
    return ("rebase", "--onto", "main", "--upstream", str(project.upstream))


# (where the FIFO is, the commands that waited for ever on it in main, or failed wrongly)
APPLIED = (
    ("refs/heads/other", ("branches", "--dry-run")),
    ("refs/heads/other", "rebase"),  # main: 30 s, then "cannot find main" (exit 2)
    ("refs/tags/v1", "rebase"),
    ("refs/series/backup/manual", ("status",)),
    ("cache", ("apply", "--force")),  # a ref of the memo of the cache repository
)


@pytest.mark.parametrize(
    ("where", "args"), APPLIED, ids=[f"{w} {a if isinstance(a, str) else a[0]}" for w, a in APPLIED]
)
def test_a_fifo_at_another_loose_ref_is_refused_naming_it(
    tmp_path: Path, where: str, args: tuple[str, ...] | str
) -> None:
    project = moving_project(tmp_path, conflict=True)
    work = project.work
    git(work, "branch", "other")
    git(work, "tag", "v1")
    git(work, "update-ref", "refs/series/backup/manual", "HEAD")
    argv = _rebase(project) if args == "rebase" else tuple(args)
    if where == "cache":
        cache_repo = Path(os.environ["SERIES_CACHE_DIR"]) / "upstream.git"
        memo = git(cache_repo, "for-each-ref", "--format=%(refname)", "refs/series/stack/")
        assert memo, "the memo of the built stack"
        path, held = _fifo_at(cache_repo, memo.splitlines()[-1])
    else:
        path, held = _fifo_at(work / ".git", where)
    code, err = bounded(project, *argv)
    _refused(code, err, path, argv)
    for other in (("status",), ("list",)) if where != "refs/series/backup/manual" else ():
        assert bounded(project, *other)[0] == 0, other  # what reads no such ref answers
    _put_back(path, held)
    code, err = bounded(project, *argv)
    assert code == (3 if args == "rebase" else 0), err  # (P1 conflicts with main)


# At a rebase's stop (HEAD detached at P1's conflict): the series branch, series' own refs,
# the stop git status names, another branch; and the commands that waited for ever on
# each in main (``refs/series/stop/...``: git status, to say where HEAD is detached at).
STOPPED = (
    ("refs/heads/series", ("status", "apply", "--abort", "--skip", "--continue")),
    ("refs/series/base", ("status", "--abort", "--skip")),
    ("refs/series/rebase/current", ("--abort", "--skip")),
    ("refs/series/stop/conflict-P1", ("status", "--skip")),
    ("refs/heads/other", ("--abort", "--skip")),
)
RESUMES = ("status", "apply", "--abort", "--skip", "--continue")


@pytest.mark.parametrize(("where", "waited"), STOPPED, ids=[w for w, _ in STOPPED])
def test_a_fifo_at_a_ref_of_a_stopped_rebase_is_refused_naming_it(
    tmp_path: Path, where: str, waited: tuple[str, ...]
) -> None:
    """Each command at the stop ends: those that waited are refused naming the FIFO (a
    ``--skip`` may have skipped P1 first: it is refused at its first git that reads the
    ref); the others answer as at any stop. Then the way on: the FIFO removed, the ref put
    back, ``--abort`` restores the series as it was before the rebase."""
    project = moving_project(tmp_path, conflict=True)
    git(project.work, "branch", "other")
    tip = git(project.work, "rev-parse", "series")
    assert bounded(project, *_rebase(project))[0] == Exit.CONFLICT
    path, held = _fifo_at(project.work / ".git", where)
    for word in RESUMES:
        args = (word,) if word in ("status", "apply") else ("rebase", word)
        code, err = bounded(project, *args)
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        if word in waited:
            _refused(code, err, path, args)
        else:
            assert 0 <= code <= Exit.REFUSED, (args, err)  # (--continue after a --skip
            # refused once P1 was skipped: "nothing of P1 is left", exit 2)
    _put_back(path, held)
    code, err = bounded(project, "rebase", "--abort")
    assert code == 0, err
    assert git(project.work, "rev-parse", "series") == tip
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "status", "--porcelain") == ""

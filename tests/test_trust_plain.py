"""Files series or git keeps, replaced by what no one writes there: nothing waits for ever.

Every record series keeps (the per-user cache's ``patchinfo/``, ``known/``,
``commitfiles/``, ``patchids/``, ``manifests/``, ``status/``, ``verified/``, and
``series/verified.json`` in the checkout's git directory) is read through one
reader, series.plain.read_plain: a plain file only, no link followed, a FIFO
opened without waiting. main opened the first four plainly: a FIFO there made
the command wait for a writer for ever. git status itself waits on a FIFO in
the place of its own files (``sequencer/todo``, ``index``...): series refuses
before starting it, naming the file. And a git killed by a file size limit
(SIGXFSZ, ``ulimit -f``), which says nothing, is named as that, not taken for an
unreachable URL or a bug in series.

Each command runs as its own process, bounded (helpers.series_process): a test
that fails fails within the bound, it does not hang the suite.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Project, make_project, series_process
from rebase_helpers import moving_project, resolve_p1
from series import known, manifest_kept, patchinfo, status_memo
from series.errors import Exit
from series.evidence import patchids
from series.stack import verified, verified_kept
from series.upstream import rangelog

BOUND = 60  # seconds: a run that waits on a FIFO never ends

# the commands that read each record, their answers compared before and after
COMMANDS = (
    ("list",),
    ("show", "P1"),
    ("status",),
    ("apply",),
    ("check-conflicts", "--onto", "main"),  # last: see below
)
KEPT = (
    patchinfo.DIR,
    known.DIR,
    rangelog.KIND,
    patchids.KIND,
    manifest_kept.DIR,
    status_memo.DIR,
    verified_kept.DIR,  # apply's kept answer: so its full run reads known/
)


def _cache() -> Path:
    return Path(os.environ["SERIES_CACHE_DIR"])


def _records(project: Project) -> list[Path]:
    """Every record kept for ``project``: in the cache's directories, and in its checkout."""
    found = [p for d in KEPT for p in sorted((_cache() / d).glob("*")) if p.is_file()]
    return [*found, project.work / ".git" / verified.NAME]


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link_to_fifo(path: Path) -> None:
    fifo = path.parent / f"fifo-{path.name}"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)


@pytest.mark.parametrize("make", [_fifo, _link_to_fifo], ids=["fifo", "link to a fifo"])
def test_records_replaced_by_a_fifo_block_no_command(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    project = moving_project(tmp_path)
    for args in COMMANDS:
        assert series_process(project.root, *args, timeout=BOUND)[0] == 0, args  # kept
    # check-conflicts first: show says when it last ran (conflicts/alone.py, not replaced)
    order = (COMMANDS[-1], *COMMANDS[:-1])
    said = {args: series_process(project.root, *args, timeout=BOUND)[:2] for args in order}
    records = _records(project)
    kinds = {p.parent.name for p in records}
    assert set(KEPT) | {verified.NAME.parent.name} == kinds, kinds  # each was kept
    for path in records:
        make(path)
    for args in COMMANDS:
        code, out, err = series_process(project.root, *args, timeout=BOUND)  # ends
        assert (code, out) == said[args], (args, err)  # the answer worked out again
        assert "Traceback" not in err, err
    for path in records[:-1]:  # kept again as files
        if make is _link_to_fifo and path.parent.name == verified_kept.DIR:
            continue  # kept with the checkout's record only, which stays a link (below)
        assert path.is_file() and not path.is_symlink(), path
    # the checkout's record: a link there is not replaced (series.files.confined: series
    # writes no file of the project through a link), nor followed
    assert records[-1].is_symlink() if make is _link_to_fifo else records[-1].is_file()


@pytest.fixture
def applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    return project


@pytest.mark.parametrize(
    "name",
    ["sequencer/todo", "CHERRY_PICK_HEAD", "rebase-merge/head-name", "index", "logs/HEAD"],
)
def test_a_fifo_git_status_would_wait_on_is_refused_naming_it(applied: Project, name: str) -> None:
    """main: ``series status`` (and every command that asks ``git status``) waited for ever
    with git on a FIFO at ``.git/sequencer/todo``; also with its report kept."""
    project = applied
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # the report kept
    path = project.work / ".git" / name
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for args in (("status",), ("status", "--json")):
        code, _, err = series_process(project.root, *args, timeout=BOUND)
        assert code == Exit.REFUSED, (args, err)
        assert f"{path} is not a plain file" in err and f"rm '{path}'" in err, err
    path.unlink()
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # the way on works


LIMIT = 200  # bytes a process may write to a file: git's first object is larger


def test_a_file_size_limit_is_named_for_every_command(applied: Project) -> None:
    """Under ``ulimit -f``, git is killed by SIGXFSZ and says nothing. main: an internal
    error "git init failed unexpectedly (exit -25)" (status, check-conflicts), and for a
    write of series' own a file operation that failed "on a file" (list)."""
    project = applied
    shutil.rmtree(_cache())  # a fresh cache: its repository is made, objects are written
    for args in (("status",), ("check-conflicts",), ("list",), ("apply", "--force")):
        code, _, err = series_process(project.root, *args, limit=LIMIT, timeout=BOUND)
        assert code == Exit.FAILED, (args, err)
        assert "file size limit exceeded (ulimit -f)" in err, (args, err)
        assert "internal error" not in err, err
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # without the limit


def test_range_diff_under_a_file_size_limit_names_it_not_the_url(tmp_path: Path) -> None:
    """main: an internal error (git init killed, exit -25) on a fresh cache; with a cache
    that lacked the pin, "cannot fetch ... check the URL, or use --source sdist"
    (docs/hardening.md, row 217's note): its fetch killed by SIGXFSZ."""
    project = moving_project(tmp_path, conflict=True)
    assert project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    shutil.rmtree(_cache())
    code, _, err = series_process(project.root, "range-diff", limit=LIMIT, timeout=BOUND)
    assert code == Exit.FAILED, err
    assert "file size limit exceeded (ulimit -f)" in err and "check the URL" not in err, err
    assert series_process(project.root, "range-diff", timeout=BOUND)[0] == 0

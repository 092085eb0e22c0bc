"""An empty file where a move cut short writes content: git's, or the user's since.

A move of the checkout's files cut short (a full disk, a kill) is finished by the next
command that writes the checkout (``Worktree.finish_move``). git creates a file before
it fills it: on a full disk (or killed between the two) it leaves the file empty, and
the finish removes such files first, for git to write them again. main took every empty
file at a path the move changes where content was due for one of those: an empty file
the user put there after the cut was removed and replaced, and ``series status`` did not
list it. The finish now tells them apart by the file's change time against the times of
the move's record (series.git.leftovers: when it began, and when its failure was
written, git ended): made in between, git's; before or since, the user's, refused,
naming it. A move killed has no time it ended: an empty file there is kept under
``.series/backups/`` (and said), then the move finishes.

A move that wrote over every tracked file (``read-tree --reset -u``: the end of a rebase,
``--abort``, ``--skip``) is run again whole: a file changed since the cut is kept there
first, told by its bytes (not the target's, the index's, or those of a tree the move's
record names: what the command kept or wrote itself).

Each cut is made by a ``git`` shim standing in for git's ``read-tree -u``: it makes the
file empty, or nothing, and fails (as on a full disk), or kills series (as a kill does).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import GitShim, Project, git
from series.git import leftovers
from test_trust_ignored import LOCAL, _project
from test_trust_untracked import _resolve, _stopped

EDITED = "pkg/util.py"  # a file no patch up to the stop changes
FAIL = 'echo "error: unable to write file" >&2; exit 1'


def _cut(tmp: Path, project: Project, cut: str, also: str = "", code: int = 1) -> None:
    """``series apply`` (from P2 to P3, which adds ``LOCAL``) whose move the shell
    commands ``cut`` (run by the git shim in git's place) cut short; ``also``: more
    ``case`` arms of the shim."""
    shim = GitShim(tmp, f'case "$*" in *read-tree*-u*) {cut};; {also} esac\n')
    said, _, err, _ = shim.said(project.root, "apply")
    assert said == code, err


def _cut_from_p2(tmp: Path, cut: str, code: int = 1) -> Project:
    project = _project(tmp)
    code_to, _, err = project.run("apply", "--to", "P2")
    assert code_to == 0, err
    assert not (project.work / LOCAL).exists()
    _cut(tmp, project, cut, code=code)
    return project


def _past(made: Path, tmp: Path) -> None:
    """Until the file system's clock is past ``made``'s last change: what is made from then
    on is later, as a file of a user who reads a failure is. The tests act within one tick
    of that clock (a file made in it may have the same change time). A probe file in
    ``tmp`` (the same file system) tells."""
    probe = tmp / "probe"
    for _ in range(100_000):
        probe.touch()
        if probe.stat().st_ctime_ns > made.stat().st_mtime_ns:
            probe.unlink()
            return
    raise AssertionError("the file system's clock did not move")


def _record(project: Project) -> Path:
    """The record of the cut move (series.git.leftovers)."""
    (record,) = (project.work / ".git").glob("series-git-*")
    return record


def _uncommitted(project: Project) -> list[str]:
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["interrupted_move"] is True, out
    found = data["uncommitted"]
    assert isinstance(found, list)
    return found


def _finished(project: Project) -> None:
    code, _, err = project.run("apply")
    assert code == 0, err
    assert "finished moving the files" in err, err
    assert (project.work / LOCAL).read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""


def test_an_empty_file_of_the_users_made_after_a_failed_move_is_refused(tmp_path: Path) -> None:
    """The move failed before it wrote ``LOCAL``; the user then makes an empty file there
    (main: status listed nothing, and ``apply`` removed it and wrote P3's, exit 0). It is
    the user's: status lists it, ``apply`` refuses (exit 4) naming it, the file kept;
    moved away, ``apply`` finishes the move."""
    project = _cut_from_p2(tmp_path, FAIL)
    local = project.work / LOCAL
    _past(_record(project), tmp_path)
    local.touch()
    assert _uncommitted(project) == [LOCAL]
    code, out, err = project.run("apply")
    assert code == 4, (out, err)
    assert "refusing to finish moving the files" in err and LOCAL in err, err
    assert "made since the move was cut short" in err, err
    assert local.exists() and local.read_bytes() == b""
    assert not (project.root / ".series" / "backups").exists()
    local.rename(tmp_path / "mine")
    _finished(project)


def test_an_empty_file_git_left_as_its_move_failed_is_written_again(tmp_path: Path) -> None:
    """git made ``LOCAL`` and could not fill it (a full disk): made while the move ran,
    it is git's, so status does not count it and ``apply`` writes it again, keeping
    nothing aside (main did the same; with the time the move failed not read, this
    failed: kept aside as a file nothing tells)."""
    project = _cut_from_p2(tmp_path, f": > {LOCAL}; {FAIL}")
    assert (project.work / LOCAL).read_bytes() == b""
    assert _uncommitted(project) == []
    _finished(project)
    assert not (project.root / ".series" / "backups").exists()


def test_an_empty_file_after_a_kill_in_the_move_is_kept_aside(tmp_path: Path) -> None:
    """series killed while git had made ``LOCAL`` and not filled it: no note, so the
    empty file there may be git's or one the user made since (main: removed either way).
    It is kept under ``.series/backups/`` and said, and the move finishes."""
    project = _cut_from_p2(tmp_path, f': > {LOCAL}; kill -9 "$PPID"; exit 1', -9)
    assert (project.work / LOCAL).read_bytes() == b""
    code, _, err = project.run("apply")
    assert code == 0, err
    (kept,) = (project.root / ".series" / "backups").iterdir()
    assert (kept / LOCAL).read_bytes() == b"", list(kept.rglob("*"))
    assert f".series/backups/{kept.name}" in err and LOCAL in err, err
    assert (project.work / LOCAL).read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""


def test_an_empty_file_there_before_the_move_began_is_not_taken_for_git_s(
    tmp_path: Path,
) -> None:
    """An empty file of the user's, ignored, at ``LOCAL`` before ``apply`` moves from P2;
    the check before the move turned off (a shim answers its ``diff-index`` with nothing),
    then the move fails before writing. git makes the files it writes: one older than the
    move is not git's (main: removed by the next ``apply`` and P3's written, exit 0)."""
    project = _project(tmp_path)
    code, _, err = project.run("apply", "--to", "P2")
    assert code == 0, err
    (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
    local = project.work / LOCAL
    local.touch()
    _past(local, tmp_path)
    _cut(tmp_path, project, FAIL, "*--diff-filter=D*) exit 0;;")
    code, out, err = project.run("apply")
    assert code == 4, (out, err)
    assert "refusing to finish moving the files" in err and LOCAL in err, err
    assert local.exists() and local.read_bytes() == b""
    local.rename(tmp_path / "mine")
    _finished(project)


def _reset_failed(tmp: Path, how: str) -> Project:
    """Stopped at P1's conflict (its markers in ``pkg/core.py``; resolved for
    ``--continue``), then ``rebase HOW`` whose ``read-tree --reset -u`` fails (as on a full
    disk: the shim fails it before git writes anything)."""
    project = _stopped(tmp)
    assert b"<<<<<<<" in (project.work / "pkg" / "core.py").read_bytes()
    if how == "--continue":
        _resolve(project)
    shim = GitShim(tmp, f'case "$*" in *read-tree*--reset*) {FAIL};; esac\n')
    code, _, err, _ = shim.said(project.root, "rebase", how)
    assert code == 1 and "could not move the files" in err, err
    return project


def test_a_file_changed_since_a_cut_reset_is_kept_before_the_move_runs_again(
    tmp_path: Path,
) -> None:
    """The end of ``rebase --continue`` (a ``read-tree --reset -u`` from the detached HEAD)
    fails in its move (as on a full disk: the shim fails it); the user then edits a
    tracked file; ``rebase --continue`` again finishes the move, which runs again whole
    and writes over every tracked file (main: "the rebase had finished", exit 0, the edit
    gone, nothing kept). The edit is kept under ``.series/backups/cut-move-*/`` first,
    and said; the move then finishes."""
    project = _reset_failed(tmp_path, "--continue")
    mine = "def f1():\n    return 'mine, since the cut'\n"
    (project.work / "pkg" / "core.py").write_text(mine)
    code, _, err = project.run("rebase", "--continue")
    assert code == 0 and "changed since a move of its files was cut short" in err, err
    (backup,) = (project.root / ".series" / "backups").glob("cut-move-*")
    kept = sorted(p.relative_to(backup) for p in backup.rglob("*") if p.is_file())
    assert kept == [Path("pkg/core.py")], kept  # the files the move had not reached: not
    assert (backup / "pkg" / "core.py").read_text() == mine
    assert (project.work / "pkg" / "core.py").read_text() != mine  # the move's, written
    assert not git(project.work, "status", "--porcelain")


def test_a_file_changed_and_staged_since_a_cut_reset_is_kept_too(tmp_path: Path) -> None:
    """As above, and the user stages the edit (``git add``: the index is git's again once
    the failed move is over). The index then holds the edit's bytes: the finish does not
    take the index as what the command checked the files against once it was written
    since the move began (main: the staged edit gone, exit 0)."""
    project = _reset_failed(tmp_path, "--continue")
    mine = "def f1():\n    return 'mine, staged since the cut'\n"
    _past(_record(project), tmp_path)
    (project.work / "pkg" / "core.py").write_text(mine)
    git(project.work, "add", "pkg/core.py")
    code, _, err = project.run("rebase", "--continue")
    assert code == 0 and "changed since a move of its files was cut short" in err, err
    (kept,) = (project.root / ".series" / "backups").glob("cut-move-*/pkg/core.py")
    assert kept.read_text() == mine


@pytest.mark.parametrize("how", ["--abort", "--skip"])
def test_a_cut_reset_of_abort_or_skip_keeps_only_what_changed_since(
    tmp_path: Path, how: str
) -> None:
    """``--abort`` and ``--skip`` move the files from a stop with ``read-tree --reset -u``
    after keeping what the stop held (the stop's files with their markers, the user's
    changes: a snapshot). Their move fails (as on a full disk); run again, the finish
    keeps a copy of a file changed since (``EDITED``), and of nothing that the command had
    kept or written itself (the stop's marked-up file: its record names those trees, no
    second copy of it); then it moves the files."""
    project = _reset_failed(tmp_path, how)
    edited = project.work / EDITED
    mine = edited.read_text() + "# mine, since the cut\n"
    _past(_record(project), tmp_path)
    edited.write_text(mine)
    code, _, err = project.run("rebase", how)
    assert code in (0, 3), err
    (backup,) = (project.root / ".series" / "backups").glob("cut-move-*")
    kept = sorted(p.relative_to(backup) for p in backup.rglob("*") if p.is_file())
    assert kept == [Path(EDITED)], kept
    assert (backup / EDITED).read_text() == mine


def test_a_record_names_trees_by_full_object_id_only(tmp_path: Path) -> None:
    """The trees a move's record names (``held``) reach ``git ls-tree`` when the move is
    finished: an entry that is not a full object id (an option, a revision expression,
    written into the record by someone else) is left out, the valid one kept (with none,
    the finish keeps more, never less)."""
    project = _reset_failed(tmp_path, "--abort")
    record = _record(project)
    data = json.loads(record.read_text())
    tree = data["held"][0]
    assert len(tree) == 40, data
    data["held"] = ["--output=../escape", "HEAD~1", tree.upper(), tree + "0", tree]
    record.write_text(json.dumps(data))
    (found,) = leftovers.dead_records(project.work / ".git")
    assert found.held == (tree,)

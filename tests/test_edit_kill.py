"""kill -9 at every step of `series edit`, then --continue and --abort: nothing is lost.

As tests/test_rebase_kill.py does for the rebase (and with its tools):
each command is first run uninterrupted (its result, and how many steps it
takes), then, from the same starting state each time, killed at each step
N = 1 .. total (``SERIES_FAULT_KILL_AT=N``):

* ``series edit --move P3 --before P2``: a plan replayed to its end, exported;
* ``series edit --squash`` with fixups of P1 and P2 (made after the export);
* ``series edit P2``: a plan that stops for the user;
* ``series edit --continue`` after P2 was amended at that stop;
* ``series edit --abort`` at that stop (then aborted again).

After each kill ``series status`` exits 0 without a traceback, naming the
edit exactly when its state exists. Then, each from a copy of the killed
state, ``series edit --continue`` (or, when the kill came before the edit
began, the command again) reaches exactly the result of the run never
killed (patches/, series.toml, every ref, HEAD, index, files), and
``series edit --abort`` the state before the edit, byte for byte (or, killed
after the last transaction, says it had finished and leaves its result).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import test_edit_squash
from helpers import Project, git
from rebase_helpers import BACKUP, snapshot
from test_edit import edit_project
from test_rebase_kill import in_progress, keep_template, restore, result, series, steps

COMMANDS = {
    "move": ["edit", "--move", "P3", "--before", "P2"],
    "squash": ["edit", "--squash"],
    "stop": ["edit", "P2"],
    "continue": ["edit", "--continue"],
    "abort": ["edit", "--abort"],
}
BEGIN = ("move", "stop", "squash")  # the commands that begin an edit
ENDS = ("move", "continue", "squash")  # the commands that end one, exported


def amend_p2(project: Project) -> None:
    util = project.work / "pkg/util.py"
    util.write_text(util.read_text().replace("VALUE_9 = 9\n", "VALUE_9 = 99\n"))
    git(project.work, "commit", "-qa", "--amend", "--no-edit")


def stable(project: Project) -> tuple[object, ...]:
    """result(), where a backup ref counts by its tree and parents: a backup of two tips
    is a commit made with the time it was made (series.backup), so its id differs."""
    found = list(result(project))
    refs = []
    for line in str(found[3]).splitlines():
        name, oid = line.split()
        if name.startswith(BACKUP):
            oid = git(project.work, "log", "-1", "--format=%T %P", oid)
        refs.append(f"{name} {oid}")
    found[3] = "\n".join(refs)
    return tuple(found)


def before_edit(project: Project) -> dict[str, Any]:
    """snapshot(), less the copies export keeps in .series/backups/ (never deleted)."""
    found = snapshot(project)
    found["files"] = {k: v for k, v in found["files"].items() if not k.startswith(".series/")}
    return found


def check_status(project: Project, n: int) -> None:
    code, out, err = project.run("status")
    assert code == 0, (n, err)
    assert "Traceback" not in out + err and "internal error" not in err, (n, err)
    edit = [line for line in out.splitlines() if line.startswith("edit:")]
    assert len(edit) == (1 if in_progress(project) else 0), (n, out)


def go_on(project: Project, command: str, argv: list[str], wanted: Any, n: int) -> None:
    code, _, err = project.run("edit", "--continue")
    if "no edit in progress" in err:
        if stable(project) == wanted:
            return  # killed after the last transaction and after moving the files
        assert command in BEGIN, (n, err)  # killed before it began
        code, _, err = project.run(*argv)
    assert code == 0, (n, err)
    assert stable(project) == wanted, n


def abort(project: Project, command: str, before: dict[str, Any], wanted: Any, n: int) -> None:
    code, out, err = project.run("edit", "--abort")
    if "had finished" in out:  # killed after its last transaction, before the files moved
        assert command in ENDS and code == 0, (n, out)
        assert stable(project) == wanted, n
    elif "no edit in progress" in err:  # killed before it began, or after it ended
        if command in BEGIN and before_edit(project) == before:
            return
        assert command in ENDS, (n, err)
        assert stable(project) == wanted, n
    else:
        assert code == 0, (n, err)
        assert before_edit(project) == before, n


@pytest.mark.parametrize("command", list(COMMANDS))
def test_edit_killed_at_every_step_then_continue_and_abort(tmp_path: Path, command: str) -> None:
    project = edit_project(tmp_path / "p")
    before = before_edit(project)
    if command in ("continue", "abort"):
        assert series(project, "edit", "P2").returncode == 0
        amend_p2(project)
    if command == "squash":
        test_edit_squash.make_fixups(project, ["P2", "P1"])
        before = before_edit(project)
    assert project.run("status")[0] == 0  # the stack built once in the cache: same steps each run
    argv = COMMANDS[command]
    template = tmp_path / "template"
    keep_template(project.root, template)
    clean = series(project, *argv)
    assert clean.returncode == 0, clean.stderr
    wanted, total = stable(project), steps(clean)
    killed = tmp_path / "killed"
    for n in range(1, total + 1):
        restore(template, project.root)
        run = series(project, *argv, kill_at=n)
        assert run.returncode == -9, (n, run.stderr[-2000:])
        check_status(project, n)
        assert not list(project.root.rglob(".series-tmp-*")), n
        if command != "abort":  # --abort killed is only aborted again
            shutil.copytree(project.root, killed, symlinks=True)
            go_on(project, command, argv, wanted, n)
            restore(killed, project.root)
            shutil.rmtree(killed)
        abort(project, command, before, wanted, n)
    restore(template, project.root)
    assert series(project, *argv, kill_at=total + 1).returncode == 0
    assert total > (4 if command == "abort" else 13)  # every call of a real run (no rev-parse now)

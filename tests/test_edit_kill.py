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

The end killed between its refs' transaction and the removal of its export's
journal is tried further: from a copy of each such state, every command that
reads the journal finishes the end (the edit's resumes) or refuses before it
writes, naming ``series edit --continue``; nothing is left half done after
(docs/hardening.md, rows 877-879).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import test_edit_squash
from helpers import Project, git
from rebase_helpers import BACKUP, snapshot
from series.errors import Exit
from test_edit import edit_project
from test_rebase_kill import (
    in_progress,
    keep_template,
    restore,
    result,
    series,
    step_names,
    steps,
)

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


JOURNAL = Path(".series") / "export-journal.json"
# What is run after the end is killed in its window, and how it must end: finished (the
# edit's end done, the journal gone), or refused (exit 4) naming `series edit --continue`.
AFTER_THE_END = {
    "edit --continue": ("finished", ["edit", "--continue"]),
    "edit --abort": ("finished", ["edit", "--abort"]),
    "apply": ("refused", ["apply"]),
    "export": ("refused", ["export"]),
    "edit P3": ("refused", ["edit", "P3"]),
    "rebase --continue": ("refused", ["rebase", "--continue"]),
    "rebase --abort": ("refused", ["rebase", "--abort"]),
}


def window(names: list[str]) -> range:
    """The steps at which a kill leaves the edit's end between its refs' transaction (its
    last ``update-ref``) and the removal of its export's journal (a kill at a step comes
    before that step, and just after a file operation it names)."""
    transaction = max(k for k, name in enumerate(names, 1) if name == "git update-ref")
    removed = names.index("export: journal removed") + 1
    return range(transaction + 1, removed)


def project_files(project: Project) -> dict[str, bytes]:
    """Every file of the project and the checkout, its git directory but the objects."""
    objects = project.work / ".git" / "objects"
    return {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and p.name != "lock" and not p.is_relative_to(objects)
    }


def whole(project: Project, wanted: Any, n: int) -> None:
    """The result of the end never killed, and nothing of it left half done: no journal,
    `series apply` up to date, `series status` with nothing to do."""
    assert stable(project) == wanted, n
    assert not (project.root / JOURNAL).exists(), n
    code, out, err = project.run("apply")
    assert code == 0 and "up to date" in out, (n, err)
    code, out, err = project.run("status")
    assert code == 0 and "next:       nothing to do" in out, (n, out)


@pytest.mark.parametrize("outcome", ["finished", "refused"])
def test_an_edit_end_killed_before_its_journal_is_removed_is_finished_or_named(
    tmp_path: Path, outcome: str
) -> None:
    """``edit --continue`` (after P2 was amended at the stop) killed at each step between
    its refs' transaction (the branch at the edited series, the edit's state deleted) and
    the removal of its export's journal: moving the files, HEAD to the branch. main:
    ``edit --continue`` and ``--abort`` said "the edit had finished", exit 0, and left the
    journal, so that ``series apply`` then refused "an export was interrupted" and named
    ``series export``, which put back the old patch files and exported again, HEAD left
    detached at the stop; ``rebase --continue`` said "the rebase had finished" where the
    kill cut the move; ``series status`` named only ``series rebase --continue``, which
    said "no rebase in progress". Now the edit's resumes finish the end (the journal last,
    as the end does): the result of the end never killed, nothing half done; every other
    command refuses before it writes, naming ``series edit --continue``, which then
    finishes it. Each command runs from a copy of the state the kill left."""
    project = edit_project(tmp_path / "p")
    assert series(project, "edit", "P2").returncode == 0
    amend_p2(project)
    assert project.run("status")[0] == 0  # the stack built once in the cache
    template = tmp_path / "template"
    keep_template(project.root, template)
    clean = series(project, "edit", "--continue")
    assert clean.returncode == 0, clean.stderr
    wanted, names = stable(project), step_names(clean)
    tip = git(project.work, "rev-parse", "series")
    steps_in = window(names)
    assert len(steps_in) >= 2, names  # the move of the files, HEAD's move
    killed = tmp_path / "killed"
    for n in steps_in:
        restore(template, project.root)
        run = series(project, "edit", "--continue", kill_at=n)
        assert run.returncode == -9, (n, run.stderr[-2000:])
        # the half state: the edit over, the branch moved, the journal still there
        assert (project.root / JOURNAL).is_file() and not in_progress(project), n
        assert git(project.work, "rev-parse", "series") == tip, n
        code, out, err = project.run("status")
        assert code == 0 and "`series edit --continue`" in out, (n, out, err)
        shutil.rmtree(killed, ignore_errors=True)
        shutil.copytree(project.root, killed, symlinks=True)
        for then, (ends, argv) in AFTER_THE_END.items():
            if ends != outcome:
                continue
            restore(killed, project.root)
            before = project_files(project)
            code, out, err = project.run(*argv)
            if outcome == "finished":
                assert code == 0 and "the edit had finished" in out, (n, then, out, err)
            else:
                assert code == Exit.REFUSED, (n, then, out, err)
                assert "the end of a `series edit` was cut short" in err, (n, then, err)
                assert "`series edit --continue`" in err, (n, then, err)
                assert project_files(project) == before, (n, then)  # refused before writing
                code, out, err = project.run("edit", "--continue")
                assert code == 0 and "the edit had finished" in out, (n, then, out, err)
            whole(project, wanted, n)


def test_an_edit_end_cut_short_is_not_finished_over_a_commit_made_since(tmp_path: Path) -> None:
    """The same kill (the first step after the transaction: HEAD still detached at the
    stop), then a commit of the user's on that HEAD: ``edit --continue`` does not move HEAD
    over it, nor say the edit finished (main: "no edit in progress", exit 2, while apply
    named ``series export``); it refuses, naming the way on, which ends the edit with the
    commit kept."""
    project = edit_project(tmp_path / "p")
    work = project.work
    assert series(project, "edit", "P2").returncode == 0
    amend_p2(project)
    assert project.run("status")[0] == 0
    template = tmp_path / "template"
    keep_template(project.root, template)
    clean = series(project, "edit", "--continue")
    wanted, names = stable(project), step_names(clean)
    restore(template, project.root)
    assert series(project, "edit", "--continue", kill_at=window(names)[0]).returncode == -9
    assert (project.root / JOURNAL).is_file() and not in_progress(project)
    (work / "later.txt").write_text("made after the kill\n")
    git(work, "add", "later.txt")
    git(work, "commit", "-qm", "work on the detached HEAD")
    mine = git(work, "rev-parse", "HEAD")
    code, out, err = project.run("edit", "--continue")
    assert code == Exit.REFUSED and "HEAD moved since it was cut short" in err, (out, err)
    assert "git -C" in err and "switch series" in err and "edit --continue" in err, err
    assert git(work, "rev-parse", "HEAD") == mine and (project.root / JOURNAL).is_file()
    git(work, "branch", "mine")
    git(work, "switch", "-q", "series")
    code, out, err = project.run("edit", "--continue")
    assert code == 0 and "the edit had finished" in out, (out, err)
    assert git(work, "rev-parse", "mine") == mine
    found = list(stable(project))
    found[3] = "\n".join(
        line for line in str(found[3]).splitlines() if not line.startswith("refs/heads/mine ")
    )
    assert tuple(found) == wanted
    assert not (project.root / JOURNAL).exists()

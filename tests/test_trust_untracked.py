"""A file of the user's where a move of the checkout writes one is never written over.

``git read-tree --reset -u`` (git 2.39) writes over an untracked file at a path the
new tree tracks and the index does not, and removes an untracked directory where the
new tree has a file, with what it holds; ``read-tree -m -u`` refuses those. series
ends a rebase (``--continue``, ``--skip``) from a detached HEAD with ``--reset``: on
main, a file made at a rebase stop where a later patch adds one was replaced by the
patch's, exit 0, nothing said (``--skip`` had kept it in its snapshot; docs/hardening.md
listed the case as "Not covered"). ``git rebase --continue`` refuses there. Now every
move refuses first, naming the paths, and the end of a rebase refuses before it writes
patches/, series.toml or a ref. ``--abort`` keeps such a file in its snapshot of the
stop (as ``--skip`` does), but not an ignored file inside such a directory: both refuse
that.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import DEFAULT_SPECS, GitShim, PatchSpec, Project, files_commit, git, make_project
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from test_edit import edit_project
from test_edit_kill import amend_p2
from test_json import SCHEMA, errors
from test_rebase_kill import keep_template, restore, series, step_names
from test_trust_ignored import LOCAL, SPECS, _project
from test_trust_lock import run

MINE = "mine, in no commit\n"
STATE = "refs/series/rebase/state"
UNWRITTEN = "refs/series/rebase/unwritten"


def _stopped(tmp: Path) -> Project:
    """Stopped at P1's conflict: P3's file (``LOCAL``) is not in the checkout yet."""
    project = _project(tmp, conflict=True)
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 3, err
    assert not (project.work / LOCAL).exists()
    return project


def _resolve(project: Project) -> None:
    (project.work / "pkg" / "core.py").write_text("def f1():\n    return -1\n")
    git(project.work, "add", "pkg/core.py")


def _before_the_move(tmp: Path, how: str) -> tuple[Project, list[str]]:
    """The project where ``how`` (``apply``, ``--continue``, ``--abort``...) moves the files
    to P3's: applied to P2, else stopped at P1 (resolved for ``--continue``); the argv
    that makes that move."""
    if how == "apply":
        project = _project(tmp)
        code, _, err = project.run("apply", "--to", "P2")
        assert code == 0, err
        return project, ["apply"]
    project = _stopped(tmp)
    if how == "--continue":
        _resolve(project)
    return project, ["rebase", how]


def _written(project: Project) -> dict[str, bytes]:
    """What a refused end must not have changed: series.toml, patches/, the refs (a
    backup ref apart: ``--skip`` keeps what the stop held before it walks on)."""
    files = {"series.toml": (project.root / "series.toml").read_bytes()}
    for patch in sorted((project.root / "patches").iterdir()):
        files[patch.name] = patch.read_bytes()
    refs = git(project.work, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    files["refs"] = "\n".join(r for r in refs if "/backup/" not in r).encode()
    return files


def _ends_the_rebase(
    project: Project, how: str, path: str = LOCAL, holds: str = "from P3\n"
) -> None:
    """``series rebase HOW`` ends the rebase: exit 0, ``path`` holding ``holds``, the
    checkout clean, the rebase's state gone."""
    code, _, err = project.run("rebase", how)
    assert code == 0, err
    assert (project.work / path).read_text() == holds
    assert git(project.work, "status", "--porcelain") == ""
    assert git(project.work, "for-each-ref", STATE) == ""


def _refused(result: tuple[int, str, str], path: str = LOCAL) -> None:
    code, out, err = result
    assert code == 4, (out, err)
    assert "refusing to move the files" in err and path in err, err
    assert "untracked" in err or "ignore" in err, err


@pytest.mark.parametrize("how", ["--continue", "--skip"])
def test_the_end_of_a_rebase_refuses_to_write_over_a_file_made_at_the_stop(
    tmp_path: Path, how: str
) -> None:
    """The file refused before the end writes anything (the rebase still stopped, patches/,
    series.toml and the refs as they were); moved away, the same command ends the rebase."""
    project = _stopped(tmp_path)
    if how == "--continue":
        _resolve(project)
    local = project.work / LOCAL
    local.write_text(MINE)
    before = _written(project)
    _refused(project.run("rebase", how))
    assert local.read_text() == MINE
    assert _written(project) == before
    local.rename(tmp_path / "mine")
    _ends_the_rebase(project, how)


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_a_directory_or_a_link_where_the_end_writes_a_file_is_refused(
    tmp_path: Path, kind: str
) -> None:
    """An untracked directory holding a file, or a link to a file outside the checkout,
    at P3's path (main: the directory removed with its file; the link replaced)."""
    project = _stopped(tmp_path)
    _resolve(project)
    local = project.work / LOCAL
    outside = tmp_path / "outside.txt"
    outside.write_text(MINE)
    if kind == "directory":
        local.mkdir()
        (local / "notes.txt").write_text(MINE)
    else:
        local.symlink_to(outside)
    _refused(project.run("rebase", "--continue"))
    if kind == "directory":
        assert (local / "notes.txt").read_text() == MINE
    else:
        assert local.is_symlink() and local.read_text() == MINE
    assert outside.read_text() == MINE
    assert git(project.work, "for-each-ref", STATE) != ""


def test_a_file_holding_what_the_patch_adds_is_no_refusal(tmp_path: Path) -> None:
    """Nothing would be lost: the end goes on (as a move finished after a kill does)."""
    project = _stopped(tmp_path)
    _resolve(project)
    (project.work / LOCAL).write_text("from P3\n")
    _ends_the_rebase(project, "--continue")


@pytest.mark.parametrize("how", ["--abort", "--skip"])
def test_an_ignored_file_inside_a_directory_in_the_way_is_refused_by_abort_and_skip(
    tmp_path: Path, how: str
) -> None:
    """``--abort`` and ``--skip`` keep the stop's untracked files in a snapshot, which
    holds no ignored file: one inside a directory where P3 writes a file (the directory
    itself not ignored) was removed with it on main, the command saying what it kept."""
    project = _stopped(tmp_path)
    exclude = project.work / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("*.bak\n")
    local = project.work / LOCAL
    local.mkdir()
    (local / "notes.bak").write_text(MINE)
    assert "notes.bak" not in git(project.work, "status", "--porcelain", "-uall")
    _refused(project.run("rebase", how), "notes.bak")
    assert (local / "notes.bak").read_text() == MINE
    (local / "notes.bak").rename(tmp_path / "notes.bak")
    local.rmdir()
    code, _, err = project.run("rebase", how)
    assert code == 0, err
    assert local.read_text() == "from P3\n"


def test_abort_keeps_a_plain_file_in_the_way_in_its_snapshot_and_goes_on(tmp_path: Path) -> None:
    """``--abort`` keeps the stop's untracked files under a backup ref before it moves
    (row 123): a file at P3's path is no refusal there, and is in what it kept."""
    project = _stopped(tmp_path)
    (project.work / LOCAL).write_text(MINE)
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert (project.work / LOCAL).read_text() == "from P3\n"
    (ref,) = git(project.work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    assert ref in out + err
    assert git(project.work, "show", f"{ref}:{LOCAL}") == MINE.rstrip("\n")


def test_the_check_before_the_end_moves_nothing(tmp_path: Path) -> None:
    """The end's check of what is in the way (before it writes anything) is no move: an
    end that fails after it (here git's ``format-patch``, failing) leaves the files as
    the stop had them, P3's file not written, the rebase stopped."""
    project = _stopped(tmp_path)
    _resolve(project)
    shim = GitShim(tmp_path, 'case "$*" in *format-patch*) echo failing >&2; exit 1;; esac\n')
    code, _, err, calls = shim.said(project.root, "rebase", "--continue")
    assert code != 0 and any("format-patch" in c for c in calls), err
    assert not (project.work / LOCAL).exists()
    assert git(project.work, "for-each-ref", STATE) != ""
    assert git(project.work, "status", "--porcelain") == "M  pkg/core.py"


def test_a_repository_deep_in_a_directory_in_the_way_is_refused_by_abort(tmp_path: Path) -> None:
    """``--abort`` keeps the stop's untracked files in its snapshot, which holds only the
    commit id of a repository of the user's: one two levels down in a directory at P3's
    path was removed with its history on main (exit 0, the command saying what it kept).
    Only a ``.git`` right at that path was refused."""
    project = _stopped(tmp_path)
    nested = project.work / LOCAL / "d" / "sub"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x").write_text(MINE)
    git(nested, "add", "x")
    git(nested, "commit", "-qm", "mine")
    code, out, err = project.run("rebase", "--abort")
    assert code == 4, (out, err)
    assert "refusing to move the files" in err and "repositor" in err, err
    assert f"{LOCAL}/d/sub" in err, err
    assert git(nested, "log", "--format=%s") == "mine"
    (project.work / LOCAL).rename(tmp_path / "mine")
    code, _, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert (project.work / LOCAL).read_text() == "from P3\n"


def _fifo_at(project: Project, kind: str) -> Path:
    """A FIFO of the user's at P3's path, or in a directory there (nothing else in it)."""
    local = project.work / LOCAL
    if kind == "in a directory":
        local.mkdir()
        os.mkfifo(local / "pipe")
        return local / "pipe"
    os.mkfifo(local)
    return local


@pytest.mark.parametrize("kind", ["at the path", "in a directory"])
@pytest.mark.parametrize("how", ["apply", "--continue", "--abort"])
def test_a_fifo_where_a_move_writes_a_file_is_refused(tmp_path: Path, how: str, kind: str) -> None:
    """git status lists no FIFO (no snapshot holds one), and ``read-tree --reset -u``
    writes over one, or removes the directory holding it; ``-m`` removes such a directory
    too, and refuses a FIFO at the path itself, after series had moved the branch (main:
    "the files are partly moved", exit 1, a failed move recorded). Refused first, naming
    it; moved away, the same command finishes."""
    project, argv = _before_the_move(tmp_path, how)
    fifo = _fifo_at(project, kind)
    code, out, err = project.run(*argv)
    assert code == 4, (out, err)
    assert "refusing to move the files" in err and "FIFO" in err, err
    assert str(fifo.relative_to(project.work)) in err and "partly moved" not in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    (project.work / LOCAL).rename(tmp_path / "mine")
    code, _, err = project.run(*argv)
    assert code == 0, err
    assert (project.work / LOCAL).read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""


def _stop_refused(result: tuple[int, str, str], command: str, sid: str) -> None:
    """Refused at a stop saved already: it names the stop and the command that writes it
    (main: "run the command again", which is refused, one being in progress)."""
    code, out, err = result
    assert code == 4, (out, err)
    assert f"stopped at {sid}" in err and f"`{command} --continue` writes the stop" in err, err
    assert "run the command again" not in err, err


def _upstream_adds_what_the_user_ignores(project: Project) -> Path:
    """Upstream's next commit adds ``pkg/upstream.local``; the user has a file there,
    ignored (``*.local`` in info/exclude), holding ``MINE``."""
    up = project.upstream
    (up / "pkg" / "upstream.local").write_text("upstream's\n")
    git(up, "add", "pkg/upstream.local")
    git(up, "commit", "-qm", "settings: upstream's")
    (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
    local = project.work / "pkg" / "upstream.local"
    local.write_text(MINE)
    return local


def test_a_first_stop_refused_names_continue_which_writes_it(tmp_path: Path) -> None:
    """Upstream adds ``pkg/upstream.local``, which the user has, ignored: ``--onto`` stops
    at P1's conflict and saves the stop, then the move to it refuses. ``--onto`` again
    is refused (a rebase in progress); once the file is moved away, ``--continue`` writes
    the stop's conflict."""
    project = _project(tmp_path)
    up = project.upstream
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    local = _upstream_adds_what_the_user_ignores(project)
    onto = ["rebase", "--onto", "main", "--upstream", str(up)]
    _stop_refused(project.run(*onto), "series rebase", "P1")
    assert local.read_text() == MINE
    code, _, err = project.run(*onto)
    assert code == 4 and "already in progress" in err, err
    local.rename(tmp_path / "mine")
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict: pkg/core.py" in err, err
    assert "<<<<<<<" in (project.work / "pkg" / "core.py").read_text()
    assert local.read_text() == "upstream's\n"


@pytest.mark.parametrize("kind", ["rebase", "edit"])
def test_status_at_a_stop_never_written_counts_nothing_of_it_as_yours(
    tmp_path: Path, kind: str
) -> None:
    """The stop saved, then its move refused (rows 815, 817): HEAD is at the stop, the
    index and files still the series'. main's ``series status`` counted their differences
    from HEAD as uncommitted (four paths after the rebase, one after the edit) and advised
    "resolve the conflicts" (or, at the edit, `git commit --amend`, which would fold P4's
    change into P3). Now: nothing uncommitted, ``rebase.written`` false, and ``next``
    names ``--continue``, which writes the stop once the file is out of the way."""
    project = _project(tmp_path)
    if kind == "rebase":
        up = project.upstream
        commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
        local = _upstream_adds_what_the_user_ignores(project)
        argv, sid = ["rebase", "--onto", "main", "--upstream", str(up)], "P1"
    else:
        git(project.work, "rm", "-q", LOCAL)
        git(project.work, "commit", "-qm", "settings: no local file")
        assert project.run("export")[0] == 0
        (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
        local = project.work / LOCAL
        local.write_text(MINE)
        argv, sid = ["edit", "P3"], "P3"
    _stop_refused(project.run(*argv), f"series {kind}", sid)
    data = _status(project)
    assert data["uncommitted"] == [] and data["rebase"]["written"] is False, data
    said = data["next"]
    assert "nothing of it is in the checkout" in said, said
    assert f"`series {kind} --continue` writes" in said, said
    assert "resolve the conflicts" not in said and "--amend" not in said, said
    local.rename(tmp_path / "mine")
    code, out, err = project.run(kind, "--continue")
    assert code == (3 if kind == "rebase" else 0), (out, err)
    data = _status(project)
    assert data["rebase"]["written"] is True, data
    assert ("resolve the conflicts" if kind == "rebase" else "--amend") in data["next"], data


def _status(project: Project) -> dict[str, Any]:
    """``series status --json``, checked against docs/json-schema.json."""
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert not errors(SCHEMA, data), errors(SCHEMA, data)
    assert isinstance(data, dict)
    return data


def _two_conflicts(tmp: Path) -> Project:
    """Stopped at P1's conflict; P2 conflicts too, and adds ``pkg/added.py``."""
    specs = [
        *SPECS[:1],
        PatchSpec(
            "P2",
            "util: VALUE_5 is 55, and a new module",
            {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")},
            new_files={"pkg/added.py": "from P2\n"},
        ),
    ]
    project = make_project(tmp, specs)
    up = project.upstream
    code, _, err = project.run("apply")
    assert code == 0, err
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5")
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(up))
    assert code == 3, err
    return project


def test_a_later_stop_refused_by_continue_names_continue_which_writes_it(tmp_path: Path) -> None:
    """At P1's stop the user makes ``pkg/added.py``, which P2 (conflicting too) adds:
    ``--continue`` records P1, saves P2's stop, and the move to it refuses."""
    project = _two_conflicts(tmp_path)
    _resolve(project)
    added = project.work / "pkg" / "added.py"
    added.write_text(MINE)
    _stop_refused(project.run("rebase", "--continue"), "series rebase", "P2")
    assert added.read_text() == MINE
    added.rename(tmp_path / "mine")
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict: pkg/util.py" in err, err
    assert added.read_text() == "from P2\n"


def _edit_stop_refused(tmp: Path, also: str = "") -> tuple[Project, Path]:
    """P4 drops P3's ``LOCAL`` (and adds ``also`` to ``pkg/util.py``); the user keeps an
    own one there, ignored; ``series edit P3`` saves its stop, then its move refuses."""
    project = _project(tmp)
    git(project.work, "rm", "-q", LOCAL)
    util = project.work / "pkg" / "util.py"
    util.write_text(util.read_text() + also)
    git(project.work, "commit", "-qam", "settings: no local file")
    code, _, err = project.run("export")
    assert code == 0, err
    (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
    local = project.work / LOCAL
    local.write_text(MINE)
    _stop_refused(project.run("edit", "P3"), "series edit", "P3")
    return project, local


def test_an_edit_stop_refused_names_continue_which_moves_the_files(tmp_path: Path) -> None:
    """P4 drops P3's ``pkg/settings.local``; the user keeps an own one there, ignored.
    ``series edit P3`` saves its stop, then the move back to P3 (which writes the file)
    refuses; once it is moved away, ``edit --continue`` moves the files to the stop."""
    project, local = _edit_stop_refused(tmp_path)
    assert local.read_text() == MINE
    local.rename(tmp_path / "mine")
    code, out, err = project.run("edit", "--continue")
    assert code == 0 and "now moved" in out + err, (out, err)
    assert local.read_text() == "from P3\n"


@pytest.mark.parametrize("kind", ["ignored", "fifo"])
def test_the_end_of_an_edit_refuses_before_it_writes(tmp_path: Path, kind: str) -> None:
    """At an edit stop at P2 the user puts an ignored file (or a FIFO: neither is refused
    there as uncommitted) where P3 writes one. main wrote patches/, series.toml and the
    refs, deleted the edit's state, then refused the move: the export's journal stayed,
    and ``series apply`` refused ("an export was interrupted") after an ``edit --continue``
    that said the edit had finished. Now refused first, nothing written."""
    project = _project(tmp_path)
    code, _, err = project.run("edit", "P2")
    assert code == 0, err
    local = project.work / LOCAL
    if kind == "ignored":
        (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
        local.write_text(MINE)
    else:
        os.mkfifo(local)
    before = _written(project)
    code, out, err = project.run("edit", "--continue")
    assert code == 4, (out, err)
    assert "refusing to move the files" in err and LOCAL in err, err
    assert _written(project) == before
    assert git(project.work, "for-each-ref", STATE) != ""
    assert not (project.root / ".series" / "export-journal.json").exists()
    local.rename(tmp_path / "mine")
    code, _, err = project.run("edit", "--continue")
    assert code == 0, err
    assert local.read_text() == "from P3\n"
    code, _, err = project.run("apply")
    assert code == 0, err
    assert git(project.work, "status", "--porcelain") == ""


def _series_files(project: Project) -> dict[str, bytes]:
    """series.toml, patches/ and the branch (a rebase's own refs apart: its start saves
    them before it walks)."""
    files = {p.name: p.read_bytes() for p in sorted((project.root / "patches").iterdir())}
    files["series.toml"] = (project.root / "series.toml").read_bytes()
    files["branch"] = git(project.work, "rev-parse", "refs/heads/series").encode()
    return files


def test_a_rebase_that_never_stopped_refuses_before_its_end_writes(tmp_path: Path) -> None:
    """Upstream adds ``pkg/upstream.local``, which the user has, ignored; no patch
    conflicts. main wrote patches/, series.toml and the branch, then the move (``-m``,
    from the branch) refused, saying "run the command again": ``--onto`` again was
    refused (the checkout differing from the moved branch); only ``series apply``
    finished. Now refused before the end writes, naming ``--continue``, which ends it."""
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    up = project.upstream
    local = _upstream_adds_what_the_user_ignores(project)
    before = _series_files(project)
    code, out, err = project.run("rebase", "--onto", "main", "--upstream", str(up))
    assert code == 4, (out, err)
    assert "pkg/upstream.local" in err and "`series rebase --continue` ends the rebase" in err
    assert local.read_text() == MINE
    assert _series_files(project) == before
    local.rename(tmp_path / "mine")
    _ends_the_rebase(project, "--continue", "pkg/upstream.local", "upstream's\n")


def test_an_edit_that_never_stopped_refuses_before_its_end_writes(tmp_path: Path) -> None:
    """P4 drops P3's ``pkg/settings.local``; the user keeps an own one there, ignored;
    ``series edit --drop P4`` (no stop) would write P3's back: refused before its end
    writes (main: after, "run the command again"), naming ``edit --continue``."""
    project = _project(tmp_path)
    git(project.work, "rm", "-q", LOCAL)
    git(project.work, "commit", "-qm", "settings: no local file")
    code, _, err = project.run("export")
    assert code == 0, err
    assert "P4" in (project.root / "series.toml").read_text()
    (project.work / ".git" / "info" / "exclude").write_text("*.local\n")
    local = project.work / LOCAL
    local.write_text(MINE)
    before = _series_files(project)
    code, out, err = project.run("edit", "--drop", "P4")
    assert code == 4, (out, err)
    assert LOCAL in err and "`series edit --continue` ends the edit" in err, err
    assert local.read_text() == MINE
    assert _series_files(project) == before
    local.rename(tmp_path / "mine")
    code, _, err = project.run("edit", "--continue")
    assert code == 0, err
    assert local.read_text() == "from P3\n"
    assert git(project.work, "status", "--porcelain") == ""
    assert not [p for p in (project.root / "patches").iterdir() if "P4" in p.name]
    assert "P4" not in (project.root / "series.toml").read_text()


@pytest.mark.parametrize("how", ["apply", "--continue"])
def test_a_link_a_cut_move_had_written_is_taken_as_moved(tmp_path: Path, how: str) -> None:
    """P4 adds a link, ``pkg/alias.py``; the move to it (``apply`` from P3: ``read-tree
    -m``; the end of a rebase's ``--continue``: ``--reset``) fails once git has written the
    link (a git that exits 1 there: a kill, or a full disk, leaves the same). main took
    only regular files as moved: ``series status`` listed the link as uncommitted, and
    the command run again refused it as an untracked file of the user's ("move them out
    of the way"; git's ``-m`` refused it before), every time. Now the link, the target's,
    is taken as moved: status lists nothing, the command run again finishes the move."""
    project = make_project(tmp_path)
    if how == "--continue":
        up = project.upstream
        commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    code, _, err = project.run("apply")
    assert code == 0, err
    alias = project.work / "pkg" / "alias.py"
    alias.symlink_to("core.py")
    git(project.work, "add", "pkg/alias.py")
    git(project.work, "commit", "-qm", "pkg: an alias")
    code, _, err = project.run("export")
    assert code == 0, err
    if how == "apply":
        code, _, err = project.run("apply", "--to", "P3")
        assert code == 0, err
        argv = ["apply"]
    else:
        code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(up))
        assert code == 3, err
        resolve_p1(project.work)
        argv = ["rebase", "--continue"]
    assert not alias.is_symlink()
    shim = GitShim(
        tmp_path,
        'case "$*" in *read-tree*-u*) ln -s core.py pkg/alias.py; echo cut >&2; exit 1;; esac\n',
    )
    code, _, err, _ = shim.said(project.root, *argv)
    assert code == 1 and "could not move the files" in err, err
    assert alias.is_symlink()
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    assert json.loads(out)["uncommitted"] == [], out
    code, out, err = project.run(*argv)
    assert code == 0, err
    assert "finished moving the files" in err, err
    assert os.readlink(alias) == "core.py"
    assert git(project.work, "status", "--porcelain") == ""


def test_status_at_a_stop_never_written_names_continue(tmp_path: Path) -> None:
    """``--skip`` at P1's stop walks to P2's conflict, whose move a FIFO at P2's new
    ``pkg/added.py`` refuses: the stop saved, nothing of it in the files, nothing for git
    status to show. main's ``series status`` took that for "a `series rebase --skip` cut
    short, or the files reset" and named only ``--skip`` (which drops P2) and ``--abort``.
    It names ``--continue`` now, which writes P2's conflict once the FIFO is moved."""
    project = _two_conflicts(tmp_path)
    fifo = project.work / "pkg" / "added.py"
    os.mkfifo(fifo)
    _stop_refused(project.run("rebase", "--skip"), "series rebase", "P2")
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["uncommitted"] == [] and data["rebase"]["stopped_at"] == "P2", out
    assert "`series rebase --continue` writes its conflict" in data["next"], data["next"]
    fifo.rename(tmp_path / "pipe")
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict: pkg/util.py" in err, err
    assert fifo.read_text() == "from P2\n"


@pytest.mark.parametrize("kind", ["rebase", "edit"])
def test_an_end_cut_short_is_not_finished_over_a_file_changed_since(
    tmp_path: Path, kind: str
) -> None:
    """``--continue`` killed after its last transaction (the branch moved, the state gone,
    HEAD still detached at the stop, the files the stop's), then an edit of the user's to
    a tracked file: the next ``--continue`` finishes the end with ``read-tree --reset``,
    which writes over changed files. A check keeps it from that; with the check off, no
    test failed ("the rebase had finished", exit 0, the edit gone). With it, main said
    "no rebase in progress" (exit 2) while ``series status`` named ``--continue``: now
    a refusal, naming the file and how to finish (stash, ``--continue``, stash pop)."""
    if kind == "rebase":
        project = moving_project(tmp_path, conflict=True)
        code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
        assert code == 3, err
        resolve_p1(project.work)
    else:
        project = edit_project(tmp_path)
        assert project.run("edit", "P2")[0] == 0
        amend_p2(project)
    work = project.work
    for n in range(1, 200):  # the first step after the end's transaction, before HEAD moves
        killed = run(project, kind, "--continue", SERIES_FAULT_KILL_AT=str(n))
        assert killed.returncode == -9, (n, killed.stderr)
        ended = git(work, "for-each-ref", STATE) == ""
        if ended and git(work, "rev-parse", "--symbolic-full-name", "HEAD") == "HEAD":
            break
    else:
        raise AssertionError("no kill left the end half done")
    readme = work / "README.md"
    readme.write_text(MINE)
    code, out, err = project.run(kind, "--continue")
    assert code == 4, (out, err)
    assert "files changed since it was cut short" in err and "README.md" in err, err
    assert "stash" in err, err
    assert readme.read_text() == MINE
    git(work, "stash", "-q")
    code, out, err = project.run(kind, "--continue")
    assert code == 0 and "had finished" in out, (out, err)
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    git(work, "stash", "pop", "-q")
    assert readme.read_text() == MINE


UNREADABLE = {
    "--continue": (
        '*"hash-object --stdin-paths")',
        "fatal: could not open 'pkg/settings.local' for reading: Permission denied",
    ),
    "apply --force": ('*"stash push"*)', 'error: open("pkg/settings.local"): Permission denied'),
}


@pytest.mark.parametrize("how", list(UNREADABLE))
def test_a_file_in_the_way_that_cannot_be_read_is_named_so(tmp_path: Path, how: str) -> None:
    """A file of the user's at P3's path that the user cannot read. The tests run as root,
    who reads every file: git answers here as it does then (the end's check hashes the
    file; ``apply --force`` stashes it). Nothing is written over (tried as an unprivileged
    user on a real unreadable file: ``--continue``, ``--abort``, ``--skip`` and ``apply
    --force`` each stopped before any move, the file kept). main said "permission denied
    writing in WORK", "make it writable by you": the wrong permission."""
    pattern, said = UNREADABLE[how]
    if how == "--continue":
        project = _stopped(tmp_path)
        _resolve(project)
        argv = ["rebase", "--continue"]
    else:
        project = _project(tmp_path)
        code, _, err = project.run("apply", "--to", "P2")
        assert code == 0, err
        argv = ["apply", "--force"]
    local = project.work / LOCAL
    local.write_text(MINE)
    shim = GitShim(tmp_path, f"case \"$*\" in {pattern} echo '{said}' >&2; exit 128;; esac\n")
    code, out, err, _ = shim.said(project.root, *argv)
    assert code != 0, (out, err)
    assert "permission denied reading a file" in err and "readable by you" in err, err
    assert "writable" not in err, err
    assert local.read_text() == MINE


def test_a_file_operation_refused_is_not_said_to_be_a_write() -> None:
    """What ``cli.main`` says for an ``OSError`` no command caught: ``rebase --abort``'s
    snapshot reading an untracked file the user cannot read (tried as an unprivileged
    user) was said to be "the operating system refused the write (a full disk, ...)"."""
    import errno

    from series.errors import os_error

    said = os_error(PermissionError(errno.EACCES, "Permission denied", "work/notes.txt"))
    assert "not readable by you" in said.render(), said.render()
    assert "refused the write" not in said.render(), said.render()


def _exclude_local(project: Project) -> None:
    (project.work / ".git" / "info" / "exclude").write_text("*.local\n*.bak\n")


@pytest.mark.parametrize("where", ["at the path", "in a directory"])
def test_git_add_f_offered_by_abort_lets_it_go_on(tmp_path: Path, where: str) -> None:
    """``--abort`` keeps what is staged in its snapshot, so its refusal of an ignored file
    in the way offers `git add -f`. main offered it, and ``--abort`` then failed with an
    internal error (exit 70: its snapshot's ``git add`` refused the ignored path the
    user had staged). Now the abort goes on, the file kept under the backup ref."""
    project = _stopped(tmp_path)
    _exclude_local(project)
    local = project.work / LOCAL
    if where == "in a directory":
        local.mkdir()
        mine = f"{LOCAL}/notes.bak"
    else:
        mine = LOCAL
    (project.work / mine).write_text(MINE)
    code, out, err = project.run("rebase", "--abort")
    assert code == 4 and "(or `git add -f` them" in err, (out, err)
    git(project.work, "add", "-f", mine)
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, (out, err)
    assert local.read_text() == "from P3\n"
    (ref,) = git(project.work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    assert ref in out + err
    assert git(project.work, "show", f"{ref}:{mine}") == MINE.rstrip("\n")


def _refused_at_a_first_stop(tmp: Path) -> tuple[Project, tuple[int, str, str]]:
    """Row 815: the stop at P1 saved, its move refused (``pkg/upstream.local``)."""
    project = _project(tmp)
    up = project.upstream
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    _upstream_adds_what_the_user_ignores(project)
    return project, project.run("rebase", "--onto", "main", "--upstream", str(up))


def _refused_by_apply(tmp: Path) -> tuple[Project, tuple[int, str, str]]:
    project = _project(tmp)
    assert project.run("apply", "--to", "P2")[0] == 0
    _exclude_local(project)
    (project.work / LOCAL).write_text(MINE)
    return project, project.run("apply")


def _refused_by_the_end(tmp: Path) -> tuple[Project, tuple[int, str, str]]:
    project = _stopped(tmp)
    _resolve(project)
    _exclude_local(project)
    (project.work / LOCAL).write_text(MINE)
    return project, project.run("rebase", "--continue")


def _repository_refused_by_abort(tmp: Path) -> tuple[Project, tuple[int, str, str]]:
    project = _stopped(tmp)
    nested = project.work / LOCAL / "sub"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x").write_text(MINE)
    git(nested, "add", "x")
    git(nested, "commit", "-qm", "mine")
    return project, project.run("rebase", "--abort")


def _fifo_refused_by_abort(tmp: Path) -> tuple[Project, tuple[int, str, str]]:
    project = _stopped(tmp)
    os.mkfifo(project.work / LOCAL)
    return project, project.run("rebase", "--abort")


@pytest.mark.parametrize(
    "refused",
    [
        _refused_at_a_first_stop,
        _refused_by_apply,
        _refused_by_the_end,
        _repository_refused_by_abort,
        _fifo_refused_by_abort,
    ],
    ids=["a stop's write", "apply", "a rebase's end", "a repository", "a FIFO"],
)
def test_git_add_f_is_not_offered_where_it_would_not_let_the_command_go_on(
    tmp_path: Path, refused: Any
) -> None:
    """Each refusal names a way on that works. main's move offered `git add -f` wherever
    it refused, and it was no way on: at the stop never written (row 815) the staged
    file made ``--continue`` take the index, the series' files and the user's, for P1's
    resolution (exit 0, P2 and P3 dropped as empty); ``apply`` refused it as uncommitted;
    at the end of a rebase (``Checkout.check_move``, which never offered it) it becomes
    part of the stop's resolution; a repository is staged as its commit id alone (the
    move still refused it), and git stages no FIFO."""
    _, (code, out, err) = refused(tmp_path)
    assert code == 4 and "move them out of the way" in err, (out, err)
    assert "git add -f" not in err, err


def _submodule_at(project: Project, tmp: Path) -> Path:
    """A submodule's work tree of the user's (its ``.git`` a file naming its git directory,
    kept elsewhere), with a commit, two levels down in a directory at P3's path."""
    sub = project.work / LOCAL / "d" / "sub"
    sub.mkdir(parents=True)
    git(sub, "init", "-q", "--separate-git-dir", str(tmp / "sub.git"))
    (sub / "x").write_text(MINE)
    git(sub, "add", "x")
    git(sub, "commit", "-qm", "mine")
    assert (sub / ".git").is_file()
    return sub


@pytest.mark.parametrize("kind", ["socket at the path", "socket in a directory", "submodule"])
@pytest.mark.parametrize("how", ["apply", "--continue", "--abort"])
def test_a_socket_or_a_submodule_where_a_move_writes_a_file_is_refused(
    tmp_path: Path, how: str, kind: str
) -> None:
    """A Unix socket (git status lists none, no snapshot holds one) at P3's path or alone
    in a directory there, and a submodule's work tree (a ``.git`` file) deep in a directory
    there: refused, not removed, by ``apply`` (the socket by its move, the submodule, which
    git status shows, as uncommitted), the end of ``--continue`` and ``--abort``. Moved
    away, the command finishes."""
    project, argv = _before_the_move(tmp_path, how)
    local = project.work / LOCAL
    if kind == "submodule":
        sub = _submodule_at(project, tmp_path)
        named = f"{LOCAL}/d/sub"
    else:
        if kind == "socket in a directory":
            local.mkdir()
        sock = local / "s" if local.is_dir() else local
        os.mknod(sock, 0o600 | stat.S_IFSOCK)
        named = str(sock.relative_to(project.work))
    code, out, err = project.run(*argv)
    assert code == 4 and named in err, (out, err)
    if kind == "submodule":
        assert git(sub, "log", "--format=%s") == "mine" and (sub / "x").read_text() == MINE
    else:
        assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    local.rename(tmp_path / "mine")
    code, _, err = project.run(*argv)
    assert code == 0, err
    assert local.read_text() == "from P3\n"


@pytest.mark.parametrize("where", ["elsewhere", "in the way"])
@pytest.mark.parametrize("how", ["--abort", "--skip"])
def test_a_repository_with_no_commit_at_a_stop_is_no_internal_error(
    tmp_path: Path, how: str, where: str
) -> None:
    """A repository of the user's with no commit yet (``git init``, a file in it) at a
    stop: main's ``--abort`` and ``--skip`` failed with an internal error (exit 70: their
    snapshot's ``git add`` cannot add it). It holds no commit to keep: left out of the
    snapshot, and left alone by the move (elsewhere), or refused (in the way)."""
    project = _stopped(tmp_path)
    repo = project.work / ("scratch" if where == "elsewhere" else f"{LOCAL}/d")
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "notes.txt").write_text(MINE)
    code, out, err = project.run("rebase", how)
    assert code == (0 if where == "elsewhere" else 4), (out, err)
    assert "internal error" not in err, err
    assert (repo / "notes.txt").read_text() == MINE and (repo / ".git").is_dir()


def test_what_is_staged_at_a_stop_never_written_is_not_taken_for_its_resolution(
    tmp_path: Path,
) -> None:
    """Row 815's stop (P1's, its move refused by the user's ignored
    ``pkg/upstream.local``), then the file staged (``git add -f``, as main's refusal
    once offered), then ``--continue`` (main: the index, the series' files from before
    the stop with the user's file, taken for P1's resolution: exit 0, P2 and P3 dropped
    as empty). Refused, nothing written; the way it names (the index put back with
    ``git read-tree``, the file moved away) leads to the stop's conflict, and the rebase
    then ends with the three patches. ``series status`` tells the stop so too."""
    project, (code, _, err) = _refused_at_a_first_stop(tmp_path)
    _stop_refused((code, "", err), "series rebase", "P1")
    local = project.work / "pkg" / "upstream.local"
    git(project.work, "add", "-f", "pkg/upstream.local")
    report = _status(project)  # as --continue tells it (main: written, "resolve ... git add")
    assert report["rebase"]["written"] is False, report
    assert report["uncommitted"] == ["pkg/upstream.local"], report
    assert "read-tree" in report["rebase"]["next"], report
    before = _series_files(project)
    head = git(project.work, "rev-parse", "HEAD")
    code, out, err = project.run("rebase", "--continue")
    assert code == 4, (out, err)
    assert "the stop was never written into the checkout" in err, err
    assert "pkg/upstream.local" in err and "read-tree" in err, err
    assert _series_files(project) == before
    assert git(project.work, "rev-parse", "HEAD") == head
    assert local.read_text() == MINE
    tree = err.split("read-tree ", 1)[1].split("`", 1)[0]
    git(project.work, "read-tree", tree)
    local.rename(tmp_path / "mine")
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict: pkg/core.py" in err, err
    _resolve(project)
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    patches = project.root / "patches"
    named = sorted(before.keys() - {"series.toml", "branch"})
    assert sorted(p.name for p in patches.iterdir()) == named
    assert all("\n+" in p.read_text() for p in patches.iterdir())  # none dropped as empty
    assert local.read_text() == "upstream's\n"
    assert (project.work / LOCAL).read_text() == "from P3\n"


@pytest.mark.parametrize(
    "how", ["changed", "every one changed", "as before the stop", "changed, a record left"]
)
def test_a_resolution_that_changes_a_file_outside_the_conflict_is_taken(
    tmp_path: Path, how: str
) -> None:
    """The other side of the check above: at a stop written, the user resolves P1's
    conflict and also stages a file outside it: ``pkg/util.py`` changed (neither the
    stop's version nor the one from before it), with P3's ``pkg/settings.local`` (which
    the stop's write removes) too, or ``pkg/settings.local`` as it was before the stop
    (the branch's), the stop's other files holding the stop's version. Taken as P1's
    resolution, as before; also where a record of the stop's move refused was left (a
    kill between the stop's write and the record's deletion; with the record believed
    over the files, refused as never written)."""
    project = _stopped(tmp_path)
    _resolve(project)
    if how.endswith("a record left"):
        state = json.loads(git(project.work, "cat-file", "blob", STATE))
        git(project.work, "update-ref", UNWRITTEN, state["stop"]["conflict_tree"])
    if how != "as before the stop":
        util = project.work / "pkg" / "util.py"
        util.write_text(util.read_text() + "EXTRA = 1\n")
        git(project.work, "add", "pkg/util.py")
    if how == "every one changed":
        (project.work / LOCAL).write_text(MINE)
        git(project.work, "add", "-f", LOCAL)
    if how == "as before the stop":
        git(project.work, "checkout", "series", "--", LOCAL)
    code, _, err = project.run("rebase", "--continue")
    assert "never written" not in err, err
    assert "P1   resolution recorded" in err, err
    if how.startswith("changed"):
        assert code == 0, err
        patches = (project.root / "patches").iterdir()
        (p1,) = [p for p in patches if "f1 returns 101" in p.read_text()]
        assert "+EXTRA = 1" in p1.read_text()


def _staged_over_then_written(project: Project, local: Path, tmp: Path, said: str) -> None:
    """At an edit stop never written (``_edit_stop_refused``): the file in its way staged,
    then status and ``edit --continue`` tell the stop never written (``said`` in the
    refusal), nothing written; the way named taken (``git read-tree``, the file moved
    away), ``edit --continue`` moves the files to the stop."""
    git(project.work, "add", "-f", LOCAL)
    report = _status(project)
    assert report["rebase"]["written"] is False and "read-tree" in report["rebase"]["next"]
    before = _series_files(project)
    code, out, err = project.run("edit", "--continue")
    assert code == 4, (out, err)
    assert "the stop was never written into the checkout" in err and said in err, err
    assert "commit --amend" not in err, err
    assert _series_files(project) == before
    assert local.read_text() == MINE
    tree = err.split("read-tree ", 1)[1].split("`", 1)[0]
    git(project.work, "read-tree", tree)
    local.rename(tmp / "mine")
    code, out, err = project.run("edit", "--continue")
    assert code == 0 and "now moved" in out + err, (out, err)
    assert local.read_text() == "from P3\n"


def test_what_is_staged_at_an_edit_stop_never_written_is_not_taken_for_the_edit(
    tmp_path: Path,
) -> None:
    """P4 drops P3's ``pkg/settings.local`` and changes ``pkg/util.py``; the user keeps an
    own ``pkg/settings.local``, ignored. ``series edit P3`` saves its stop and the move to
    P3 refuses (row 817); the user stages the file (``git add -f``), then ``edit
    --continue`` (main: refused as uncommitted changes, "commit them into P3 (`git commit
    --amend -a`)", which folds the index, P4's ``pkg/util.py`` with it, into P3). Refused
    as a stop never written, naming the ``git read-tree`` that puts the index back; that
    done and the file moved away, ``edit --continue`` moves the files to the stop."""
    project, local = _edit_stop_refused(tmp_path, also="P4 = 4\n")
    _staged_over_then_written(project, local, tmp_path, said=LOCAL)
    util = project.work / "pkg" / "util.py"
    assert "P4 = 4" not in util.read_text()


def test_a_stop_whose_move_was_refused_is_recorded_so(tmp_path: Path) -> None:
    """Row 817's edit stop: P4 only drops P3's ``pkg/settings.local``, so the stop's move
    changes that file alone, the one the user then stages (``git add -f``): nothing in the
    files tells the stop never written from an edit of it (main, and with the record
    off: ``edit --continue`` refused the file as uncommitted, "commit them into P3 (`git
    commit --amend -a`)", the user's file for P3's). The refusal of the move is recorded
    (``refs/series/rebase/unwritten``), and that tells: refused, status saying so; the
    record goes once the stop is written, and the edit ends with none."""
    project, local = _edit_stop_refused(tmp_path)
    assert git(project.work, "for-each-ref", "--format=%(refname)", UNWRITTEN) == UNWRITTEN
    _staged_over_then_written(project, local, tmp_path, said="recorded")
    assert not git(project.work, "for-each-ref", UNWRITTEN)
    assert local.read_text() == "from P3\n"
    code, out, err = project.run("edit", "--continue")
    assert code == 0, (out, err)
    assert not local.exists()  # P4 drops it
    assert not git(project.work, "for-each-ref", "refs/series/rebase/")


def _killed_before_p2_s_stop_is_written(tmp: Path, at: str = "before the move") -> Project:
    """P1 and P2 (``pkg/core.py``, ``pkg/util.py``) both conflict with upstream; P1's stop
    resolved, then the ``--continue`` that stops at P2 killed (SIGKILL) between its state's
    transaction and the move of its files: P2's stop saved, HEAD detached there, nothing
    of it in the files or the index. P2's write changes nothing outside its conflict, and
    the tree it was to be written over is HEAD's: nothing in the files tells it unwritten
    once something is staged."""
    project = make_project(tmp, DEFAULT_SPECS[:2])
    up = project.upstream
    assert project.run("apply")[0] == 0
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5")
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(up))
    assert code == 3 and "conflict: pkg/core.py" in err, err
    _resolve(project)
    template = tmp / "template"
    keep_template(project.root, template)
    restore(template, project.root)  # the counted run starts from a copy too: the same steps
    counted = series(project, "rebase", "--continue")
    assert counted.returncode == 3 and "conflict: pkg/util.py" in counted.stderr
    names = step_names(counted)
    state = max(k for k, name in enumerate(names) if name == "git update-ref")
    move = names.index("git read-tree", state) + 1  # the kill comes before its step
    if at == "before the move":
        move = state + 2  # after the transaction, before the move is recorded
    restore(template, project.root)
    assert series(project, "rebase", "--continue", kill_at=move).returncode == -9
    assert json.loads(git(project.work, "cat-file", "blob", STATE))["stop"]["files"] == [
        "pkg/util.py"
    ], "; ".join(f"{k} {n}" for k, n in enumerate(names, 1))
    assert not git(project.work, "ls-files", "-u")
    assert git(project.work, "status", "--porcelain") == ""
    return project


@pytest.mark.parametrize("at", ["before the move", "as the move starts"])
@pytest.mark.parametrize("staged", ["a new file", "a file of P1's"])
def test_what_is_staged_at_a_stop_killed_before_its_move_is_kept_beside_it(
    tmp_path: Path, staged: str, at: str
) -> None:
    """The case docs/hardening.md listed as "Not told": a stop killed between its state's
    transaction and its move (no record of a refused move), whose write changes nothing
    outside its conflict, then a path staged by the user: a new file, or ``pkg/core.py``
    (P1's) changed (main: ``--continue`` took the index for P2's resolution: exit 0, P2
    the user's file and P2's own change gone; status said the stop written, "resolve the
    conflicts"). Git recorded no resolution of P2's conflict in the index (its
    resolve-undo extension) and nothing was staged where the stop writes: ``--continue``
    writes P2's conflict beside what was staged, which stays staged and in the files
    (exit 3); resolved, the rebase ends, P2's change in its patch. Killed as the move
    starts (its record written): status counts the staged path as the user's (main: as
    the cut move's, not listed), and ``--continue`` finishes the two-tree move, which keeps
    it, and puts the conflict's stages back beside it (main: no stages, and the markers
    named as left in a resolution), exit 3."""
    project = _killed_before_p2_s_stop_is_written(tmp_path, at)
    if staged == "a new file":
        path, text = "pkg/notes.py", MINE
    else:
        path, text = "pkg/core.py", "def f1():\n    return -2\n"
    (project.work / path).write_text(text)
    git(project.work, "add", path)
    report = _status(project)
    assert report["rebase"]["written"] is False, report
    assert report["uncommitted"] == [path], report
    assert "stays staged beside the conflict" in report["rebase"]["next"], report
    before = _series_files(project)
    code, out, err = project.run("rebase", "--continue")
    assert code == 3, (out, err)
    if at == "before the move":
        assert "conflict: pkg/util.py" in err and f"kept as it is ({path})" in err, err
    else:  # the move recorded: finished (two trees: what is staged beside it kept)
        assert "finished moving the files" in err and "stages are back" in err, err
    assert git(project.work, "ls-files", "-u", "--", "pkg/util.py")
    assert _status(project)["rebase"]["written"] is True
    assert _series_files(project) == before
    assert (project.work / path).read_text() == text
    assert git(project.work, "diff", "--cached", "--name-only", "HEAD", "--", path) == path
    assert "<<<<<<<" in (project.work / "pkg" / "util.py").read_text()
    (project.work / "pkg" / "util.py").write_text("VALUE_5 = 55\n")
    git(project.work, "add", "pkg/util.py")
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    (p2,) = [p for p in (project.root / "patches").iterdir() if "VALUE_5" in p.read_text()]
    assert "+VALUE_5 = 55" in p2.read_text()


@pytest.mark.parametrize("how", ["resolved", "resolved as upstream has it"])
def test_a_resolution_git_recorded_at_a_later_stop_is_taken(tmp_path: Path, how: str) -> None:
    """The other side: P2's stop written (``--continue`` after P1's), then resolved with
    ``git add`` (or ``git checkout --ours``, upstream's version: what the index held before
    the stop) and a file of P1's staged with it. Git recorded the resolution of P2's
    conflict in the index: taken as P2's resolution, as before (with the record not read,
    the second was taken for a stop never written and its conflict written again)."""
    project = make_project(tmp_path, DEFAULT_SPECS[:2])
    up = project.upstream
    assert project.run("apply")[0] == 0
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5")
    assert project.run("rebase", "--onto", "main", "--upstream", str(up))[0] == 3
    _resolve(project)
    code, _, err = project.run("rebase", "--continue")
    assert code == 3 and "conflict: pkg/util.py" in err, err
    util = project.work / "pkg" / "util.py"
    if how == "resolved":
        util.write_text("VALUE_5 = 55\n")
    else:
        git(project.work, "checkout", "--ours", "--", "pkg/util.py")
    git(project.work, "add", "pkg/util.py")
    (project.work / "pkg" / "core.py").write_text("def f1():\n    return -2\n")
    git(project.work, "add", "pkg/core.py")
    assert _status(project)["rebase"]["written"] is True
    code, out, err = project.run("rebase", "--continue")
    assert "P2   resolution recorded" in err and "not been written" not in err, (out, err)
    assert code == 0, err
    assert git(project.work, "show", "HEAD:pkg/core.py").endswith("return -2")


def test_git_s_record_of_a_resolution_is_read_from_the_index(tmp_path: Path) -> None:
    """``resolution_recorded`` against git's own writes: conflict stages (one side deleted,
    a path with a space and a non-ASCII name) taken out by ``git add`` and ``git rm`` are
    found, in a split index too; stages of other blobs, a ``read-tree`` (every move of
    series), ``reset --hard`` and an index with no such extension are not; no index is
    None."""
    from series.git.worktree import resolution_recorded

    work = tmp_path / "work"
    files_commit(work, {"base": "base\n"})

    def fed(*args: str, data: str) -> str:
        done = subprocess.run(["git", *args], cwd=work, input=data, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def blob(text: str) -> str:
        return fed("hash-object", "-w", "--stdin", data=text)

    one, two, three = blob("one\n"), blob("two\n"), blob("three\n")
    name = "dir/a b é.txt"
    stages: tuple[tuple[str, str, int, str], ...] = (
        ("100644", one, 1, name),
        ("100644", two, 2, name),
        ("100755", three, 3, "gone"),
        ("100644", one, 1, "gone"),
    )

    def conflict() -> None:
        git(work, "read-tree", "HEAD")
        lines = [f"0 {'0' * 40}\t{p}" for p in (name, "gone")]
        lines += [f"{mode} {oid} {stage}\t{path}" for mode, oid, stage, path in stages]
        fed("update-index", "--index-info", data="\n".join(lines) + "\n")

    assert resolution_recorded(work, stages) is False  # no extension at all
    conflict()
    assert resolution_recorded(work, stages) is False  # still unmerged: nothing recorded
    git(work, "rm", "-q", "--cached", "--", "gone")
    assert resolution_recorded(work, stages) is True  # one of its paths is enough
    assert resolution_recorded(work, stages[:2]) is False  # the other not resolved yet
    (work / "dir").mkdir()
    (work / name).write_text("resolved\n")
    git(work, "add", "--", name)
    assert resolution_recorded(work, stages[:2]) is True
    other = (("100644", two, 1, name), ("100644", one, 2, name))
    assert resolution_recorded(work, other) is False
    git(work, "update-index", "--split-index")
    conflict()
    git(work, "add", "--", name)
    assert resolution_recorded(work, stages) is True
    git(work, "update-index", "--no-split-index")
    git(work, "read-tree", "HEAD")
    assert resolution_recorded(work, stages) is False
    conflict()
    git(work, "add", "--", name)
    git(work, "reset", "-q", "--hard")
    assert resolution_recorded(work, stages) is False
    (work / ".git" / "index").unlink()
    assert resolution_recorded(work, stages) is None


def _changed_then_continued(project: Project, where: str, command: str) -> tuple[int, str, str]:
    """``where`` in the checkout changed (a line added, nothing staged), then ``series
    COMMAND --continue``: the file as the user left it after it, the series' files as
    they were; what it gave."""
    path = project.work / where
    text = path.read_text() + "MINE = 1\n"
    path.write_text(text)
    before = _series_files(project)
    result = project.run(command, "--continue")
    assert path.read_text() == text, result
    assert _series_files(project) == before
    return result


@pytest.mark.parametrize("where", ["pkg/core.py", "pkg/util.py"])
def test_a_file_changed_at_a_stop_killed_before_its_move_is_not_written_over(
    tmp_path: Path, where: str
) -> None:
    """Row 906's stop, killed before its move; the user changes a file and stages nothing,
    elsewhere (P1's ``pkg/core.py``) or where the conflict writes (``pkg/util.py``):
    refused as changes not staged, exit 4, before anything is written (with the conflict
    written beside first: git's two-tree move refused ``pkg/util.py`` "not uptodate",
    exit 1, and its record was left for a later command to finish); the file as the user
    left it, no stages, nothing of the series changed."""
    project = _killed_before_p2_s_stop_is_written(tmp_path)
    code, out, err = _changed_then_continued(project, where, "rebase")
    assert code == 4 and "changes that are not staged" in err and where in err, (out, err)
    assert not git(project.work, "ls-files", "-u")
    assert git(project.work, "diff", "--name-only") == where


def _edit_killed_before_its_move(tmp: Path) -> Project:
    """``series edit P1`` (of P1 to P4) killed (SIGKILL) between its state's transaction and
    the move of the files to P1: the stop saved, HEAD detached at P1, the index and the
    files still the series' (P2 to P4's changes in them)."""
    project = edit_project(tmp)
    template = tmp / "template"
    keep_template(project.root, template)
    restore(template, project.root)  # the counted run starts from a copy too: the same steps
    counted = series(project, "edit", "P1")
    assert counted.returncode == 0, counted.stderr
    names = step_names(counted)
    move = names.index("git read-tree")
    state = max(k for k, name in enumerate(names[:move]) if name == "git update-ref")
    restore(template, project.root)
    assert series(project, "edit", "P1", kill_at=state + 2).returncode == -9
    assert git(project.work, "status", "--porcelain") != ""  # HEAD at P1, the files not
    return project


@pytest.mark.parametrize("where", ["README.md", "pkg/util.py"])
def test_a_file_changed_at_an_edit_stop_never_written_is_not_folded_into_it(
    tmp_path: Path, where: str
) -> None:
    """An edit stop killed before its move; the user changes a file (stages nothing), where
    the stop's move writes nothing (``README.md``) or where it writes (``pkg/util.py``,
    P2's and P4's) (main: ``edit --continue`` refused "changes that are not committed",
    listing P2 to P4's files with the user's, "commit them into P1 (`git commit --amend
    -a`)": done, P1's commit took P2 to P4's changes, and P2 then stopped on a conflict
    with them). Elsewhere: the files moved to P1, the change kept in the file and named,
    exit 0; amended into P1, the edit ends with P2 to P4 as they were. Where it writes:
    refused, naming the file and `--abort`, nothing moved; `--abort` puts the series back
    and keeps the change under a backup ref."""
    project = _edit_killed_before_its_move(tmp_path)
    before = _series_files(project)
    code, out, err = _changed_then_continued(project, where, "edit")
    assert "commit --amend" not in out + err, (out, err)
    if where == "README.md":
        assert code == 0 and f"your changes kept as they are: {where}" in out + err, (out, err)
        assert git(project.work, "status", "--porcelain") == f"M {where}"  # (stripped)
        git(project.work, "commit", "-qa", "--amend", "--no-edit")
        code, out, err = project.run("edit", "--continue")
        assert code == 0, (out, err)
        patches = {p.name: p.read_text() for p in (project.root / "patches").iterdir()}
        (p1,) = [t for t in patches.values() if "f1 returns 101" in t]
        assert "+MINE = 1" in p1 and "VALUE_5" not in p1 and "909" not in p1
        assert sum("VALUE_5" in t for t in patches.values()) == 2  # P2's and P4's
    else:
        assert code == 4 and "never written" in err and where in err and "--abort" in err, err
        code, out, err = project.run("edit", "--abort")
        assert code == 0 and "refs/series/backup/" in out + err, (out, err)
        assert _series_files(project) == before


def test_a_kill_at_every_step_of_the_conflict_written_beside_loses_nothing(
    tmp_path: Path,
) -> None:
    """Row 906's ``--continue`` that writes P2's conflict beside a staged new file, killed
    (SIGKILL) at each of its steps in turn; then ``--continue`` again: every time P2's
    conflict in the index (its stages) and in the file, the user's file still staged and
    as written, the series' files as they were, exit 3."""
    project = _killed_before_p2_s_stop_is_written(tmp_path)
    notes = project.work / "pkg" / "notes.py"
    notes.write_text(MINE)
    git(project.work, "add", "pkg/notes.py")
    before = _series_files(project)
    template = tmp_path / "beside"
    keep_template(project.root, template)
    restore(template, project.root)
    counted = series(project, "rebase", "--continue")
    assert counted.returncode == 3 and "kept as it is (pkg/notes.py)" in counted.stderr
    total = len(step_names(counted))
    assert total >= 3, step_names(counted)
    for n in range(1, total + 1):
        restore(template, project.root)
        assert series(project, "rebase", "--continue", kill_at=n).returncode == -9, n
        done = series(project, "rebase", "--continue")
        assert done.returncode == 3 and "conflict: pkg/util.py" in done.stderr, (n, done.stderr)
        assert git(project.work, "ls-files", "-u", "--", "pkg/util.py"), n
        assert "<<<<<<<" in (project.work / "pkg" / "util.py").read_text(), n
        assert notes.read_text() == MINE, n
        staged = git(project.work, "diff", "--cached", "--name-only", "HEAD", "--", "pkg/notes.py")
        assert staged == "pkg/notes.py", n
        assert _series_files(project) == before, n

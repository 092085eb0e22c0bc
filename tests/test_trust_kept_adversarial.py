"""The kept answers (apply's re-run, ``branches --dry-run``, ``range-diff``, ``--help``)
against what a shared or damaged cache, a copy of the project and a full disk do.

Each is answered before the CLI from an entry in the per-user cache
(series.stack.verified_kept, branches_kept, rangediff_kept, series.help_kept,
all read by branches_kept.read_entry). main opened the entry with a plain
``open``: an entry replaced by a FIFO (or a link to one) blocked every one
of those commands for ever, waiting for a writer. Each case here must end,
with the full run's answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import GitShim, Project, git, make_project, series_process
from rebase_helpers import moving_project, resolve_p1
from series import help_kept
from series.stack import branches_kept, rangediff_kept, verified_kept

BOUND = 60  # seconds: a run that waits on a FIFO never ends

COMMANDS = {
    "apply": ("apply",),
    "branches --dry-run": ("branches", "--dry-run"),
    "range-diff": ("range-diff",),
    "--help": ("--help",),
}


class Runs(GitShim):
    BOUND = BOUND

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.cache = Path(os.environ["SERIES_CACHE_DIR"])  # the one the project was built in
        self.env["SERIES_CACHE_DIR"] = str(self.cache)

    def entry(self, root: Path, name: str) -> Path:
        """Where the answer of the command ``name`` in ``root`` is kept."""
        where, cache = str(root.resolve()), str(self.cache)
        if name == "apply":
            return Path(verified_kept.entry_path(where, cache, "apply"))
        if name == "range-diff":
            return Path(rangediff_kept.record_path(where, cache))
        if name == "--help":
            (found,) = (self.cache / help_kept.DIR).iterdir()
            return found
        opts = branches_kept.words(["branches", "--dry-run"])
        assert opts is not None
        return Path(branches_kept.record_path(where, cache, branches_kept.options(opts[1])))


@pytest.fixture
def ready(tmp_path: Path) -> tuple[Project, Runs, dict[str, tuple[int, str, str]]]:
    """A project rebased onto a moved upstream, exported, each command run twice (the
    second answered from what the first kept): the answers."""
    project = moving_project(tmp_path, conflict=True)
    assert project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    runs = Runs(tmp_path)
    said = {}
    for name, args in COMMANDS.items():
        first = runs.said(project.root, *args)
        assert first[0] == 0, (name, first)
        again = runs.said(project.root, *args)
        assert again[0] == 0 and _kept(again[3]), (name, again)
        assert runs.entry(project.root, name).is_file(), name
        said[name] = again[:3]
    return project, runs, said


def _kept(calls: list[str]) -> bool:
    """Whether a run that started these git processes answered from what was kept: none,
    or apply's one ``git status`` (verified_kept: the files the checkout holds)."""
    return all(" status " in f" {argv} " for argv in calls)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link_to_fifo(path: Path) -> None:
    fifo = path.parent.parent / f"fifo-{path.parent.name}"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)


@pytest.mark.parametrize("make", [_fifo, _link_to_fifo], ids=["fifo", "link to a fifo"])
def test_a_kept_entry_replaced_by_a_fifo_blocks_no_command(
    ready: tuple[Project, Runs, dict[str, tuple[int, str, str]]],
    make: Callable[[Path], None],
) -> None:
    project, runs, said = ready
    for name, args in COMMANDS.items():
        entry = runs.entry(project.root, name)
        make(entry)
        code, out, err, _ = runs.said(project.root, *args)  # ends: within BOUND
        assert (code, out, err) == said[name], (name, err)  # the full run's answer
        assert runs.entry(project.root, name).is_file(), name  # kept again, a file


def test_a_copy_of_the_project_is_not_answered_from_the_original_s_entries(
    ready: tuple[Project, Runs, dict[str, tuple[int, str, str]]], tmp_path: Path
) -> None:
    """``cp -a`` of the whole project (its checkout too) to another directory: every
    command there is worked out (git asked), and says the copy's paths, not the
    original's."""
    project, runs, _ = ready
    copy = tmp_path / "copy"
    shutil.copytree(project.root, copy, symlinks=True)
    original = str(project.root.resolve())
    for name, args in COMMANDS.items():
        if name == "--help":
            continue  # no project in it
        code, out, err, calls = runs.said(copy, *args)
        assert code == 0, (name, err)
        assert not _kept(calls), name  # worked out, not said again
        assert original not in out + err, (name, out, err)


def _limited(root: Path, env: dict[str, str], limit: int, *args: str) -> tuple[int, str, str]:
    """``series -C root ARGS`` with files it writes limited to ``limit`` bytes (a full disk)."""
    return series_process(root, *args, limit=limit, env=env, timeout=BOUND)


@pytest.mark.parametrize("limit", [0, 200, 2000])
def test_a_full_disk_while_an_answer_is_kept_costs_the_answer_nothing(
    ready: tuple[Project, Runs, dict[str, tuple[int, str, str]]], limit: int
) -> None:
    """(range-diff's full run fetches into the cache: on a full disk it fails, saying so.)"""
    project, runs, said = ready
    for name in ("--help", "branches --dry-run"):
        entry = runs.entry(project.root, name)
        entry.unlink()  # the full run keeps it again: on a disk that fills
        env = {**os.environ, "SERIES_CACHE_DIR": str(runs.cache)}  # git itself, no shim
        got = _limited(project.root, env, limit, *COMMANDS[name])
        assert got == said[name], (name, got[2])
        left = sorted(p.name for p in entry.parent.iterdir())
        assert not [n for n in left if n.startswith(branches_kept.TEMP_PREFIX)], left
        if entry.exists():  # whole, or not there
            kind = help_kept if name == "--help" else branches_kept
            assert branches_kept.read_entry(str(entry), kind.FIELDS, kind.FORMAT), name


def test_four_helps_at_once_keep_one_whole_entry(tmp_path: Path) -> None:
    env = {**os.environ, "SERIES_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "90"}
    outs: list[str] = []

    def one() -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "series", "--help"],
            capture_output=True,
            text=True,
            timeout=BOUND,
            check=True,
            env=env,
        )
        outs.append(proc.stdout)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outs) == 4 and len(set(outs)) == 1 and outs[0].startswith("usage: series")
    (entry,) = (tmp_path / "cache" / help_kept.DIR).iterdir()
    found = branches_kept.read_entry(str(entry), help_kept.FIELDS, help_kept.FORMAT)
    assert found is not None and found["text"] == outs[0]


@pytest.mark.parametrize("command", ["apply", "status"])
def test_a_ref_moved_under_a_linked_directory_of_refs_is_seen(tmp_path: Path, command: str) -> None:
    """``.git/refs/heads`` of the checkout a link to a directory elsewhere: git follows it
    and works as ever. main: the digest of the checkout's refs (series.git.ref_files.
    files_key, of apply's kept answer, its verified record and status's kept report)
    walked them with ``os.walk``, which neither reads a linked directory nor refuses it:
    with the branch moved back one commit, apply said "up to date ... (branch series at"
    the old tip) and left it there, and status said its kept report. Now a link among
    the refs makes the digest decline: the full run answers (apply moves the branch
    back; status says what it says with nothing kept)."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    heads = project.work / ".git" / "refs" / "heads"
    elsewhere = tmp_path / "heads"
    heads.rename(elsewhere)
    heads.symlink_to(elsewhere)
    tip = git(project.work, "rev-parse", "series")
    for _ in range(2):  # the second would be answered from what the first kept
        shim.run(project.root, command)
    if command == "apply":
        git(project.work, "reset", "-q", "--hard", "HEAD~1")
        code, out, err, _ = shim.said(project.root, command)
        assert code == 0, err
        assert "up to date" not in out + err, (out, err)
        assert git(project.work, "rev-parse", "series") == tip
        return
    git(project.work, "update-ref", "refs/heads/series", "HEAD~1")
    said = shim.said(project.root, command)
    shutil.rmtree(shim.cache / "status", ignore_errors=True)  # none kept, with the fix
    assert said[:3] == shim.said(project.root, command)[:3]  # the full run's answer

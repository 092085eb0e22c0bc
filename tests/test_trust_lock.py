"""Two series commands at once: one project lock, so no result is ever mixed.

Every command that writes the checkout, series.toml, patches/ or
resolutions/ holds ``.series/lock`` for its whole run (series.project). The
first command is held at a known step with ``SERIES_FAULT_PAUSE_AT=N``
(series.git.run: it creates ``GO.paused`` before its Nth git call, then
waits until ``GO`` exists), a second one is run meanwhile, then the first
is let go. The second waits, saying for whom (pid, command line, since
when), and runs on what the first left; with ``SERIES_LOCK_TIMEOUT=0`` it
refuses at once, exit 1, naming the first, and writes nothing. Commands
that only read never wait; they say that a writer is running. Files stand
for synchronisation throughout: no sleep decides an order, and no timing
is asserted (the bounds below only keep a broken run from hanging).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import Project, git, make_project, replace_line
from rebase_helpers import moving_project, snapshot
from test_faults import files
from test_json import SCHEMA, errors

BOUND = 120  # seconds: only so that a broken run fails instead of hanging
_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_process_left(tmp_path: Path) -> Iterator[None]:
    """A test that fails half way leaves no held or waiting series behind."""
    yield
    (tmp_path / "go").touch()
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SERIES_FAULT_")}
    base.pop("SERIES_LOCK_TIMEOUT", None)
    return {**base, **extra}


def argv(project: Project, *args: str) -> list[str]:
    return [sys.executable, "-m", "series", "-C", str(project.root), *args]


def run(project: Project, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(project, *args), capture_output=True, text=True, env=env(**extra), timeout=BOUND
    )


def git_calls(project: Project, *args: str, code: int = 0, **extra: str) -> int:
    proc = run(project, *args, SERIES_DEBUG="1", **extra)
    assert proc.returncode == code, proc.stderr
    return sum(1 for line in proc.stderr.splitlines() if line.startswith("series.git: git "))


class Held:
    """A series command held before its Nth git call until ``release``."""

    def __init__(self, project: Project, go: Path, at: int, *args: str) -> None:
        self.go = go
        self.proc = subprocess.Popen(
            argv(project, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(SERIES_FAULT_PAUSE_AT=str(at), SERIES_FAULT_PAUSE_FILE=str(go)),
        )
        _started.append(self.proc)
        paused, deadline = Path(f"{go}.paused"), time.monotonic() + BOUND
        while not paused.exists():  # it reached the step (or died: say why)
            assert time.monotonic() < deadline, "never reached the pause"
            try:
                self.proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"exited before the pause: {self.proc.communicate()}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def release(self) -> tuple[int, str]:
        self.go.touch()
        _, err = self.proc.communicate(timeout=BOUND)
        return self.proc.returncode, err


def waiting(project: Project, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start a second command; return it and the first line it says (it waits, saying so)."""
    proc = subprocess.Popen(
        argv(project, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
    )
    _started.append(proc)
    assert proc.stderr is not None
    return proc, proc.stderr.readline()


def copy(project: Project, root: Path) -> Project:
    shutil.copytree(project.root, root, symlinks=True)
    return Project(root, project.upstream, project.commit)


def consistent(project: Project) -> None:
    """series.toml and patches/ belong together: the stack applies on the pin as it says."""
    data = tomllib.loads((project.root / "series.toml").read_text())
    listed = {Path(p["file"]).name for p in data["patch"]}
    assert listed == set(project.patch_bytes()), listed
    proc = run(project, "check-conflicts", "--no-matrix")
    assert proc.returncode == 0, proc.stderr


# -- rebase --onto, then rebase --abort while it runs (the audit's case) --------------


def _rebase_case(
    tmp_path: Path, *, conflict: bool = False
) -> tuple[Project, list[str], Project, int]:
    project = moving_project(tmp_path / "p", conflict=conflict)
    onto = ["rebase", "--onto", "main", "--upstream", str(project.upstream)]
    # Two rehearsals on copies: the first warms the cache, the second counts
    # the git calls of a warm run, as the held run below will be.
    code = 3 if conflict else 0
    git_calls(copy(project, tmp_path / "warm"), *onto, code=code)
    reference = copy(project, tmp_path / "reference")
    total = git_calls(reference, *onto, code=code)
    return project, onto, reference, total


def test_rebase_abort_waits_for_the_running_rebase_then_sees_it_finished(
    tmp_path: Path,
) -> None:
    project, onto, reference, total = _rebase_case(tmp_path)
    first = Held(project, tmp_path / "go", total // 2, *onto)  # in the middle of the replay
    second, said = waiting(project, "rebase", "--abort")
    assert "waiting for another series run" in said, said
    assert f"pid {first.pid}: `series -C {project.root} rebase --onto main" in said, said
    assert "running since " in said and ".series/lock" in said
    assert second.poll() is None  # still waiting: the rebase holds the lock
    code, err = first.release()
    assert code == 0, err
    _, rest = second.communicate(timeout=BOUND)
    # It ran after the rebase, on what the rebase left: a finished rebase.
    assert second.returncode == 2 and "no rebase in progress" in rest, rest
    assert project.patch_bytes() == reference.patch_bytes()
    assert (project.root / "series.toml").read_bytes() == (
        reference.root / "series.toml"
    ).read_bytes()
    consistent(project)


def test_rebase_abort_with_no_wait_refuses_naming_the_rebase_and_changes_nothing(
    tmp_path: Path,
) -> None:
    project, onto, reference, total = _rebase_case(tmp_path)
    first = Held(project, tmp_path / "go", total // 2, *onto)
    proc = run(project, "rebase", "--abort", SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 1, proc.stderr
    assert "gave up waiting" in proc.stderr and "Traceback" not in proc.stderr
    assert f"pid {first.pid}: `series -C {project.root} rebase --onto main" in proc.stderr
    code, err = first.release()
    assert code == 0, err  # the rebase went on undisturbed, to the end
    assert project.patch_bytes() == reference.patch_bytes()
    assert (project.root / "series.toml").read_bytes() == (
        reference.root / "series.toml"
    ).read_bytes()
    assert git(project.work, "rev-parse", "series") == git(reference.work, "rev-parse", "series")
    consistent(project)


def test_rebase_abort_waits_for_a_rebase_that_stops_at_a_conflict_then_aborts_it(
    tmp_path: Path,
) -> None:
    project, onto, _, total = _rebase_case(tmp_path, conflict=True)
    before = snapshot(project)
    first = Held(project, tmp_path / "go", total // 2, *onto)
    second, said = waiting(project, "rebase", "--abort")
    assert f"pid {first.pid}: `series -C {project.root} rebase --onto main" in said, said
    code, err = first.release()
    assert code == 3, err  # stopped at the conflict
    _, rest = second.communicate(timeout=BOUND)
    assert second.returncode == 0, rest  # what the user asked for: the rebase undone
    assert snapshot(project) == before


# -- apply, then export while it runs --------------------------------------------------


def test_export_refuses_while_apply_runs_and_the_json_envelope_says_so(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    # The user edits a patch file and applies it: export must not write the
    # checkout's old commits over that edit while apply is half way.
    replace_line(project.root / "patches/perf-P2.patch", "VALUE_5 = 55", "VALUE_5 = 56")
    edited = files(project.root)
    # Counted as the held apply will run: with the stack built already (the cache, shared
    # by HOME, keeps it from the first copy's apply).
    assert git_calls(copy(project, tmp_path / "warm"), "apply") > 0
    total = git_calls(copy(project, tmp_path / "reference"), "apply")
    first = Held(project, tmp_path / "go", total // 2, "apply")
    proc = run(project, "export", "--json", SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)  # one valid envelope on stdout, as for any error
    assert not errors(SCHEMA, data), errors(SCHEMA, data)
    assert data["ok"] is False and data["exit_code"] == 1 and data["command"] == "export"
    assert "gave up waiting" in data["error"]["message"]
    assert f"pid {first.pid}: `series -C {project.root} apply`" in data["error"]["why"]
    assert files(project.root) == edited  # export wrote nothing
    code, err = first.release()
    assert code == 0, err
    assert "VALUE_5 = 56" in (project.work / "pkg/util.py").read_text()  # the edit is applied
    proc = run(project, "export")
    assert proc.returncode == 0, proc.stderr
    assert "VALUE_5 = 56" in (project.root / "patches/perf-P2.patch").read_text()
    consistent(project)


# -- export, then export --------------------------------------------------------------


def test_second_export_waits_for_the_first_and_the_result_is_the_new_series(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    assert run(project, "export").returncode == 0  # patch files in their canonical form
    (project.work / "pkg/extra.py").write_text("EXTRA = 1\n")
    git(project.work, "add", "-A")
    git(project.work, "commit", "-qm", "extra: a new module")
    reference = copy(project, tmp_path / "reference")
    # The reference counts with a copy of the cache as it is now: what its export proves
    # in the cache (builder/memo.py) would spare the project's export git calls.
    cache = Path(os.environ["SERIES_CACHE_DIR"])
    shutil.copytree(cache, tmp_path / "reference-cache", symlinks=True)
    total = git_calls(reference, "export", SERIES_CACHE_DIR=str(tmp_path / "reference-cache"))
    new = files(reference.root)
    first = Held(project, tmp_path / "go", total - 1, "export")
    second, said = waiting(project, "export")
    assert f"waiting for another series run (pid {first.pid}: `series -C" in said, said
    assert "export`" in said
    code, err = first.release()
    assert code == 0, err
    _, rest = second.communicate(timeout=BOUND)
    assert second.returncode == 0, rest
    assert files(project.root) == new
    consistent(project)


# -- branches writes refs in the checkout; --dry-run only reads ---------------------------


def test_branches_waits_for_a_writer_but_its_dry_run_does_not(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    refs = git(project.work, "for-each-ref", "--format=%(refname)")
    first = Held(project, tmp_path / "go", 1, "export")
    proc = run(project, "branches", "--dry-run", SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 0, proc.stderr
    proc = run(project, "branches", SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 1 and "gave up waiting" in proc.stderr, proc.stderr
    assert f"pid {first.pid}: `series -C {project.root} export`" in proc.stderr
    assert git(project.work, "for-each-ref", "--format=%(refname)") == refs  # no branch made
    code, err = first.release()
    assert code == 0, err
    proc = run(project, "branches", SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 0, proc.stderr


# -- two projects, two locks, one new checkout directory -----------------------------------


def _without_last_patch(project: Project, root: Path) -> Project:
    """A copy of ``project`` whose series.toml lists all but its last patch: another stack."""
    other = copy(project, root)
    manifest = other.root / "series.toml"
    text = manifest.read_text()
    manifest.write_text(text[: text.rindex("[[patch]]")])
    return other


@pytest.mark.parametrize("same", [True, False], ids=["same stack", "another stack"])
def test_two_projects_applying_into_one_new_directory_lose_neither_checkout(
    tmp_path: Path, same: bool
) -> None:
    """Two projects (each its own project lock) apply into one new ``--dir`` at once: the
    first held before its last git call, its complete checkout built beside the directory,
    not yet renamed into place. With one per-user cache, the checkout's lock makes the
    second refuse at once (``SERIES_LOCK_TIMEOUT=0``), naming the first. With a cache of
    its own (no lock shared), the second makes the directory; the first then finds it
    taken. The same stack: it keeps the other's checkout and removes its own copy, exit
    0. Another stack: refused, exit 4, naming where its complete checkout is, the
    other's untouched (with that refusal gone, apply said "applied" over a checkout
    that did not hold its stack)."""
    project = make_project(tmp_path / "p")
    target = tmp_path / "shared-work"
    assert run(project, "apply", "--dir", str(tmp_path / "warm")).returncode == 0
    # the last git call before the rename (a warm cache: the same calls each run)
    last = git_calls(project, "apply", "--dir", str(tmp_path / "counted"))
    first = Held(project, tmp_path / "go", last, "apply", "--dir", str(target))
    other = copy(project, tmp_path / "q") if same else _without_last_patch(project, tmp_path / "q")
    proc = run(other, "apply", "--dir", str(target), SERIES_LOCK_TIMEOUT="0")
    assert proc.returncode == 1 and "the checkout's lock" in proc.stderr, proc.stderr
    assert f"pid {first.pid}: `series -C {project.root} apply --dir" in proc.stderr
    assert not target.exists()
    own_cache = str(tmp_path / "other-cache")
    proc = run(other, "apply", "--dir", str(target), SERIES_CACHE_DIR=own_cache)
    assert proc.returncode == 0, proc.stderr
    theirs = git(target, "rev-parse", "HEAD")
    code, err = first.release()
    built = [p for p in tmp_path.iterdir() if p.name.startswith(".shared-work.series-new-")]
    assert git(target, "rev-parse", "HEAD") == theirs  # the other's checkout, untouched
    if same:
        assert code == 0, err
        assert "made" in err and "meanwhile, with the same stack" in err, err
        assert built == []
        return
    assert code == 4, err
    assert f"{target} was made by another command while this apply ran" in err, err
    assert len(built) == 1 and f"complete in {built[0]}" in err, (built, err)
    mine = git(tmp_path / "counted", "rev-parse", "HEAD")
    assert git(built[0], "rev-parse", "HEAD") == mine != theirs
    assert git(built[0], "status", "--porcelain") == ""


def test_two_projects_applying_into_one_checkout_at_once_take_turns(tmp_path: Path) -> None:
    """Two projects (each its own project lock) apply into one existing checkout
    (``--dir``), the first held before each of its git calls in turn, the second run
    meanwhile without waiting (``SERIES_LOCK_TIMEOUT=0``). main: held at the 9th or
    10th call, both said "applied" and the checkout was left with the second's branch
    and the first's files, staged. Now the checkout's own lock (in the per-user cache,
    by its real path) makes them take turns: the second either ran before the first
    took the checkout (then the first applies over it) or refuses, exit 1, naming the
    first; the first always ends "applied" with the checkout at its stack, clean."""
    project = make_project(tmp_path / "p")
    target = tmp_path / "shared-work"
    assert run(project, "apply", "--dir", str(target)).returncode == 0
    other = _without_last_patch(project, tmp_path / "q")
    replace_line(project.root / "patches/perf-P2.patch", "VALUE_5 = 55", "VALUE_5 = 56")
    template = tmp_path / "template"
    shutil.copytree(target, template, symlinks=True)
    for name in ("warm", "counted"):  # counted with the edited stack built: as each run
        shutil.copytree(target, tmp_path / name, symlinks=True)
    assert run(project, "apply", "--dir", str(tmp_path / "warm")).returncode == 0
    counted = tmp_path / "counted"
    total = git_calls(project, "apply", "--dir", str(counted))
    mine = git(counted, "rev-parse", "HEAD")
    outcomes = set()
    for n in range(1, total + 1):
        shutil.rmtree(target)
        shutil.copytree(template, target, symlinks=True)
        first = Held(project, tmp_path / f"go{n}", n, "apply", "--dir", str(target))
        second = run(other, "apply", "--dir", str(target), SERIES_LOCK_TIMEOUT="0")
        code, err = first.release()
        assert code == 0, (n, err)
        if second.returncode == 1:
            assert "gave up waiting" in second.stderr and "the checkout's lock" in second.stderr
            assert f"pid {first.pid}: `series -C {project.root} apply --dir" in second.stderr
        else:
            assert second.returncode == 0, (n, second.stderr)
        outcomes.add(second.returncode)
        assert git(target, "rev-parse", "HEAD") == mine, n
        assert git(target, "rev-parse", "refs/heads/series") == mine, n
        assert git(target, "status", "--porcelain") == "", n
        assert "VALUE_5 = 56" in (target / "pkg/util.py").read_text(), n
    assert outcomes == {0, 1} or outcomes == {1}, outcomes


# -- a lock file that is no plain file -----------------------------------------------------


def _lock_path(project: Project, which: str) -> Path:
    cache = Path(os.environ["SERIES_CACHE_DIR"])
    if which == "upstream.lock":
        return cache / "upstream.lock"
    if which == "project":
        return project.root / ".series" / "lock"
    work = os.fsencode((project.root / "work").resolve())
    return cache / "checkouts" / f"{hashlib.sha256(work).hexdigest()}.lock"


@pytest.mark.parametrize("make", ["link", "fifo"])
@pytest.mark.parametrize("which", ["upstream.lock", "checkout", "project"])
def test_a_lock_file_that_is_a_link_or_a_fifo_is_refused_and_nothing_written_through(
    tmp_path: Path, which: str, make: str
) -> None:
    """A link (to a file of the user's, outside the project) or a FIFO where series keeps
    a lock file: the cache's upstream.lock, a checkout's lock, the project lock. main: the
    holder's record was written into the file the link named, then the file emptied (a
    ``~/.bashrc`` there would be lost); the project lock's link is refused by its
    confinement already. Now: exit 4, naming the file and the way on (rm it), nothing
    written through it; once it is removed, the command runs."""
    project = make_project(tmp_path / "p")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lock = _lock_path(project, which)
    lock.parent.mkdir(parents=True, exist_ok=True)
    if make == "link":
        lock.symlink_to(victim)
    else:
        os.mkfifo(lock)
    if which == "upstream.lock":  # cleaning the cache looks at it first (main: a FIFO
        proc = run(project, "cache", "clean")  # there made it wait for ever)
        assert proc.returncode == 4 and f"{lock}" in proc.stderr, proc.stderr
    proc = run(project, "apply")
    confined = (which, make) == ("project", "link")  # refused as leading out: exit 2
    assert proc.returncode == (2 if confined else 4), proc.stderr
    assert f"{lock}" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert victim.read_text() == "precious\n"
    lock.unlink()
    assert run(project, "apply").returncode == 0


# -- readers, and a lock left by a killed run ---------------------------------------------


def test_status_does_not_wait_for_a_writer_and_names_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    first = Held(project, tmp_path / "go", 1, "export")
    for args in (["status"], ["list"], ["status", "--json"]):
        proc = run(project, *args, SERIES_LOCK_TIMEOUT="0")  # would refuse if it waited
        assert proc.returncode == 0, proc.stderr
        assert "another series command is running" in proc.stderr
        assert f"pid {first.pid}: `series -C {project.root} export`" in proc.stderr
    json.loads(run(project, "status", "--json").stdout)
    code, err = first.release()
    assert code == 0, err
    proc = run(project, "status")
    assert proc.returncode == 0 and "another series command" not in proc.stderr


def test_a_lock_file_left_by_a_killed_run_is_not_a_held_lock(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    killed = run(project, "export", SERIES_FAULT_KILL_AT="1")
    assert killed.returncode == -9
    lock = project.root / ".series/lock"
    record = json.loads(lock.read_text())  # what the killed run wrote is still there
    assert record["command"] == f"series -C {project.root} export"
    proc = run(project, "export", SERIES_LOCK_TIMEOUT="0")  # but nobody holds it
    assert proc.returncode == 0, proc.stderr
    assert "waiting" not in proc.stderr
    assert lock.read_text() == ""  # a run that ends clears its record


def test_a_fifo_among_the_test_slots_locks_does_not_hold_up_cache_clean(tmp_path: Path) -> None:
    """A FIFO where a ``series test`` work tree's lock is (``worktrees/*.lock``): main's
    ``cache clean`` opened it to see whether a test run held it, and waited for ever for a
    writer. Now it is no one's lock: the clean goes on (exit 0) and removes it with the
    work trees."""
    project = make_project(tmp_path / "p")
    assert run(project, "apply").returncode == 0
    slots = Path(os.environ["SERIES_CACHE_DIR"]) / "worktrees"
    slots.mkdir(parents=True, exist_ok=True)
    os.mkfifo(slots / "slot-0.lock")
    proc = run(project, "cache", "clean")
    assert proc.returncode == 0, proc.stderr
    assert not slots.exists()

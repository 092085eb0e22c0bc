"""kill -9 of the process group at every step, and a full disk: series' leftovers are its own.

``SERIES_FAULT_KILL_AT=N`` (series.faults) counts every step of a run: each
git call and each point between them where series writes (a temporary
file written, a rename done, export's journal). Series is started here in
a session of its own, so the kill takes its whole process group, git
children included. After each kill the next command must not mistake what
series left for the user's work:

* ``series status`` exits 0, without a traceback, and never lists files
  series was moving as uncommitted changes;
* no ``.series-tmp-*`` file stays in the project, no lock blocks the next
  command;
* ``rebase --continue`` reaches the result of the run never killed, and
  ``rebase --abort`` the state before it (tests/test_rebase_kill.py's
  checks, reused).

Every step is covered for ``rebase --onto`` on a project whose final move
writes many files and for a re-``apply`` that moves as many, every other
step for ``export`` (tests/test_faults.py has every one); the kill *inside* git (while it
moves the files, holding ``index.lock``) is made deterministic with a
smudge filter that stalls on one file. A fetch killed while it held
``shallow.lock``, a temporary file left in patches/, a lock that is not
series' own, and a full disk during the move are single cases.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from rebase_helpers import commit_upstream, snapshot
from test_hardening import mounted_tmpfs
from test_rebase_kill import (
    Case,
    abort,
    go_on,
    keep_template,
    restore,
    result,
    start_args,
    step_names,
    steps,
)

GENERATED = 120  # files the upstream adds: the rebase's final move writes them all


def series(
    root: Path, *args: str, kill_at: int | None = None, debug: bool = False
) -> subprocess.CompletedProcess[str]:
    """series in a session of its own (its process group is what a kill takes)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SERIES_FAULT_KILL_AT", "SERIES_DEBUG")}
    if kill_at is not None:
        env["SERIES_FAULT_KILL_AT"] = str(kill_at)
    if debug or kill_at is not None:
        env["SERIES_DEBUG"] = "1"
    argv = [sys.executable, "-m", "series", "-C", str(root), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, check=False, start_new_session=True
    )


def big_move_project(tmp: Path) -> Project:
    """An applied project whose upstream ``main`` adds many files and changes one."""
    project = make_project(tmp)
    up = project.upstream
    gen = up / "pkg" / "gen"
    gen.mkdir(parents=True)
    for i in range(GENERATED):
        (gen / f"m{i:03d}.py").write_text(f"VALUE = {i}\n" + "# filler line\n" * 40)
    git(up, "add", "-A")
    git(up, "commit", "-qm", "gen: many modules", date="2026-03-01T09:00:00+00:00")
    commit_upstream(up, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: VALUE_20")
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def start_case(tmp_path: Path) -> Case:
    """``rebase --onto`` of the big project, run once unkilled: its result and step count."""
    project = big_move_project(tmp_path / "p")
    before = snapshot(project)
    template = tmp_path / "template"
    keep_template(project.root, template)
    clean = series(project.root, *start_args(project), debug=True)
    assert clean.returncode == 0, clean.stderr[-3000:]
    wanted = result(project)
    assert len(list((project.work / "pkg/gen").iterdir())) == GENERATED
    names = step_names(clean)
    return Case("start", project, template, start_args(project), before, 0, wanted, names)


def leftovers(project: Project) -> list[Path]:
    """series' temporary files anywhere in the project, and git locks in the checkout."""
    temps = [p for p in project.root.rglob(".series-tmp-*")]
    locks = [project.work / ".git" / n for n in ("index.lock", "shallow.lock")]
    return temps + [lock for lock in locks if lock.exists()]


def status_json(project: Project, n: object) -> dict[str, object]:
    code, out, err = project.run("status", "--json")
    assert code == 0, (n, err)
    assert "Traceback" not in out + err and "internal error" not in err, (n, err)
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


def check_next(case: Case, n: int) -> None:
    """After a kill: status clean of series' leftovers; then --continue, and --abort, each right."""
    project = case.project
    data = status_json(project, n)
    assert data["uncommitted"] == [], (n, data["uncommitted"][:5])  # type: ignore[index]
    assert not leftovers(project), (n, leftovers(project))
    killed = project.root.parent / "killed"
    shutil.copytree(project.root, killed, symlinks=True)
    go_on(case, n)
    assert not leftovers(project), (n, leftovers(project))
    restore(killed, project.root)
    shutil.rmtree(killed)
    abort(case, n)
    assert not leftovers(project), (n, leftovers(project))


def test_rebase_onto_killed_at_every_step_with_its_git(tmp_path: Path) -> None:
    """Every step, not only every git call: ~1/3 of them are file writes between git calls."""
    case = start_case(tmp_path)
    project = case.project
    names = []
    for n in range(1, case.total + 1):
        restore(case.template, project.root)
        run = series(project.root, *case.argv, kill_at=n)
        assert run.returncode == -9, (n, run.stderr[-2000:])
        names.append(run.stderr.rstrip().splitlines()[-1])
        check_next(case, n)
    assert any(": staged" in name for name in names)  # kills between a temp file and its rename
    assert any("git read-tree" in name for name in names)  # and before the final move
    restore(case.template, project.root)
    assert series(project.root, *case.argv, kill_at=case.total + 1).returncode == 0


STALL = """#!/bin/sh
# A smudge filter (git writes filtered files one by one, in order) that
# stalls once, at the file named $2: git is then in the middle of the
# move, holding index.lock, the files before it written.
if [ "$2" = "$3" ] && [ ! -e "$1" ]; then
    : > "$1"
    sleep 300
fi
exec cat
"""


def stall_git_in_the_move(project: Project, marker: Path) -> None:
    """Make git stall inside the checkout's move, on one file half way through pkg/gen/."""
    script = project.root.parent / "stall.sh"
    script.write_text(STALL)
    half = f"pkg/gen/m{GENERATED // 2:03d}.py"
    git(project.work, "config", "filter.stall.smudge", f"sh {script} {marker} {half} %f")
    attributes = project.work / ".git" / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    attributes.write_text("pkg/gen/* filter=stall\n")


def kill_in_the_move(project: Project, args: list[str]) -> None:
    """Start series, wait for its git to stall in the move, kill the whole group."""
    marker = project.root.parent / "stalled"
    marker.unlink(missing_ok=True)
    stall_git_in_the_move(project, marker)
    env = {k: v for k, v in os.environ.items() if k != "SERIES_FAULT_KILL_AT"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", "-C", str(project.root), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), "git never reached the stalled file"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture
def killed_in_move(
    tmp_path: Path,
) -> Iterator[tuple[Project, tuple[object, ...], dict[str, bytes]]]:
    """A rebase killed (with its git) in the middle of its final move; and the clean result."""
    project = big_move_project(tmp_path / "p")
    reference = tmp_path / "reference"
    shutil.copytree(project.root, reference, symlinks=True)
    clean = Project(reference, project.upstream, project.commit)
    code, _, err = clean.run(*start_args(clean))
    assert code == 0, err
    wanted = result(clean)
    kill_in_the_move(project, start_args(project))
    git_dir = project.work / ".git"
    assert (git_dir / "index.lock").exists()  # what git leaves when killed mid-move
    gen = project.work / "pkg" / "gen"
    assert 0 < len(list(gen.iterdir())) < GENERATED  # files half moved
    yield project, wanted, {p.name: p.read_bytes() for p in (reference / "work/pkg").glob("*.py")}


def test_status_after_a_kill_inside_the_move_lists_nothing_of_series_as_uncommitted(
    killed_in_move: tuple[Project, tuple[object, ...], dict[str, bytes]],
) -> None:
    project, _, _ = killed_in_move
    data = status_json(project, "move")
    assert data["uncommitted"] == []
    assert data["interrupted_move"] is True
    assert (project.work / ".git" / "index.lock").exists()  # status only reads


def test_continue_after_a_kill_inside_the_move_finishes_it(
    killed_in_move: tuple[Project, tuple[object, ...], dict[str, bytes]],
) -> None:
    project, wanted, _ = killed_in_move
    code, out, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert "had finished" in out and "finished moving the files" in err
    assert "removed" in err and "index.lock" in err  # said so
    assert result(project) == wanted
    assert not leftovers(project)
    assert status_json(project, "after")["interrupted_move"] is False


def test_apply_after_a_kill_inside_the_move_finishes_it_and_keeps_a_users_edit(
    killed_in_move: tuple[Project, tuple[object, ...], dict[str, bytes]],
) -> None:
    project, wanted, files = killed_in_move
    core = project.work / "pkg" / "core.py"
    core.write_text(core.read_text() + "# the user's line\n")  # a path the move leaves alone
    assert status_json(project, "edit")["uncommitted"] == ["pkg/core.py"]
    code, _, err = project.run("apply")
    assert code == 4 and "pkg/core.py" in err and "pkg/gen" not in err  # only the user's
    assert "finished moving the files" in err
    assert core.read_text() == files["core.py"].decode() + "# the user's line\n"
    assert git(project.work, "status", "--porcelain") == "M pkg/core.py"  # (stripped)
    assert not leftovers(project)
    git(project.work, "checkout", "--", "pkg/core.py")
    assert result(project) == wanted


def test_a_lock_series_did_not_leave_is_not_removed(tmp_path: Path) -> None:
    """An index.lock with no record of a killed series run is someone else's: left alone."""
    project = big_move_project(tmp_path / "p")
    lock = project.work / ".git" / "index.lock"
    lock.write_text("")
    before = snapshot(project)
    code, _, err = project.run(*start_args(project))
    assert code == 1 and f"{lock}: the file exists" in err and f"rm '{lock}'" in err, err
    assert lock.exists()
    assert snapshot(project) == before  # refused before anything was written
    lock.unlink()
    code, _, err = project.run(*start_args(project))
    assert code == 0, err


def _killed_at_step(project: Project, args: list[str], name: str) -> tuple[int, str]:
    """Kill ``args`` at its first step called ``name``: (step, the directory git ran in)."""
    run = series(project.root, *args, debug=True)
    lines = run.stderr.splitlines()
    step = next(i for i, line in enumerate(lines) if line.startswith("series.faults: step"))
    for i, line in enumerate(lines):
        if line.startswith("series.faults: step ") and line.endswith(f": {name}"):
            step = i
            break
    else:
        raise AssertionError(f"no step {name}")
    n = int(lines[step].split()[2].rstrip(":"))
    where = lines[step - 1].rpartition("(in ")[2].rstrip(")")
    return n, where


def test_a_fetch_killed_holding_shallow_lock_does_not_block_the_rerun(tmp_path: Path) -> None:
    project = big_move_project(tmp_path / "p")
    template = tmp_path / "template"
    shutil.copytree(project.root, template, symlinks=True)
    shutil.copytree(tmp_path / "home", tmp_path / "home-template", symlinks=True)
    n, where = _killed_at_step(project, start_args(project), "git fetch")
    wanted = result(project)
    restore(template, project.root)
    shutil.rmtree(tmp_path / "home")
    shutil.copytree(tmp_path / "home-template", tmp_path / "home", symlinks=True)
    assert series(project.root, *start_args(project), kill_at=n).returncode == -9
    here = Path(where)
    lock = (here / ".git" if (here / ".git").is_dir() else here) / "shallow.lock"
    lock.write_text("")  # what the killed git fetch left (it was killed with series)
    code, _, err = project.run(*start_args(project))
    assert code == 0, err
    assert "removed" in err and "shallow.lock" in err
    assert not lock.exists()
    assert result(project) == wanted


def test_abort_leaves_no_temporary_file_in_patches(tmp_path: Path) -> None:
    """A rebase killed between writing a patch's temporary file and renaming it."""
    project = big_move_project(tmp_path / "p")
    before = snapshot(project)
    template = tmp_path / "template"
    keep_template(project.root, template)  # the counted run and the killed one: same cache
    # the patch files and series.toml all staged, none renamed yet (files.replace_all)
    n, _ = _killed_at_step(project, start_args(project), "replace 4 files: staged")
    restore(template, project.root)
    assert series(project.root, *start_args(project), kill_at=n).returncode == -9
    assert list((project.root / "patches").glob(".series-tmp-*"))  # the kill left one
    code, _, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert sorted(p.name for p in (project.root / "patches").iterdir()) == sorted(
        Path(k).name for k in before["files"] if k.startswith("patches/")
    )
    assert snapshot(project) == before


def test_export_killed_at_every_other_step_leaves_no_temporary_file(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert project.run("apply")[0] == 0
    core = project.work / "pkg" / "core.py"
    core.write_text(core.read_text() + "# more\n")
    git(project.work, "commit", "-qam", "core: more")
    template = tmp_path / "template"
    shutil.copytree(project.root, template, symlinks=True)
    # The cache as it is before the clean export, restored with the project before each
    # kill: what an export proves there (builder/memo.py) spares the next one steps.
    cache, cache_template = Path(os.environ["SERIES_CACHE_DIR"]), tmp_path / "cache"
    shutil.copytree(cache, cache_template, symlinks=True)
    clean = series(project.root, "export", debug=True)
    assert clean.returncode == 0, clean.stderr
    wanted = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    total = steps(clean)
    # Every other step (tests/test_faults.py kills export at every one, without its git).
    for n in sorted({*range(1, total + 1, 2), total}):
        restore(template, project.root)
        shutil.rmtree(cache)
        shutil.copytree(cache_template, cache, symlinks=True)
        assert series(project.root, "export", kill_at=n).returncode == -9
        code, _, err = project.run("export")
        assert code == 0, (n, err)
        assert (project.patch_bytes(), (project.root / "series.toml").read_bytes()) == wanted
        assert not leftovers(project), (n, leftovers(project))
    assert total > 15


FILL = """#!/bin/sh
# A smudge filter that fills the disk at the first file it is asked for:
# git's next writes of the move fail (No space left on device).
if [ ! -e "$1" ]; then
    : > "$1"
    head -c 64M /dev/zero > "$2" 2>/dev/null
fi
exec cat
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, or a skip where mounting is not allowed (not root)."""
    with mounted_tmpfs(tmp_path / "disk", "4m") as mnt:
        yield mnt


def test_a_full_disk_during_the_move_fails_clearly_and_the_next_command_finishes_it(
    tmp_path: Path, small_disk: Path
) -> None:
    project = big_move_project(tmp_path / "p")
    work = small_disk / "work"
    assert project.run("apply", "--dir", str(work))[0] == 0
    reference = tmp_path / "reference"
    shutil.copytree(project.root, reference, symlinks=True)
    clean = Project(reference, project.upstream, project.commit)
    assert clean.run(*start_args(clean))[0] == 0
    wanted = result(clean)
    script, filler = tmp_path / "fill.sh", small_disk / "filler"
    script.write_text(FILL)
    git(work, "config", "filter.fill.smudge", f"sh {script} {tmp_path / 'filled'} {filler}")
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "attributes").write_text("pkg/gen/* filter=fill\n")
    dir_args = ["--dir", str(work)]

    code, _, err = project.run(*start_args(project), *dir_args)
    assert code == 1, err
    assert "could not move the files" in err and "free some space" in err
    assert "Traceback" not in err and "internal error" not in err
    code, out, err = project.run("status", "--json", *dir_args)
    assert code == 0, err
    data = json.loads(out)
    assert data["uncommitted"] == [] and data["interrupted_move"] is True

    filler.unlink()  # space freed
    code, out, err = project.run("rebase", "--continue", *dir_args)
    assert code == 0, err
    assert "had finished" in out and "finished moving the files" in err
    assert not (project.root / ".series" / "backups").exists()  # the empty files were git's
    (work / ".git" / "info" / "attributes").unlink()
    shutil.rmtree(project.work, ignore_errors=True)
    shutil.copytree(work, project.work, symlinks=True)  # result() reads ./work
    assert result(project) == wanted


def reapply_case(tmp_path: Path) -> tuple[Project, Path, tuple[object, ...]]:
    """A checkout on the old pin, patches/ and series.toml rebased onto ``main`` elsewhere.

    ``series apply`` then moves the checkout across the upstream change:
    120 files written. Returns the project, its template, and the result
    of the apply never killed.
    """
    project = big_move_project(tmp_path / "p")
    rebased = tmp_path / "rebased"
    shutil.copytree(project.root, rebased, symlinks=True)
    other = Project(rebased, project.upstream, project.commit)
    assert other.run(*start_args(other))[0] == 0
    shutil.rmtree(project.root / "patches")
    shutil.copytree(rebased / "patches", project.root / "patches")
    shutil.copy2(rebased / "series.toml", project.root / "series.toml")
    template = tmp_path / "template"
    shutil.copytree(project.root, template, symlinks=True)
    code, _, err = project.run("apply")
    assert code == 0, err
    assert len(list((project.work / "pkg/gen").iterdir())) == GENERATED
    wanted = result(project)
    restore(template, project.root)
    return project, template, wanted


def test_apply_killed_at_every_step_and_inside_its_move(tmp_path: Path) -> None:
    """A re-apply that writes 120 files: killed at every step, and with git in its move."""
    project, template, wanted = reapply_case(tmp_path)
    total = steps(series(project.root, "apply", debug=True))
    assert total >= 8  # 11 when written: fewer git processes since, each one a step less
    for n in [*range(1, total + 1), "move"]:
        restore(template, project.root)
        if n == "move":
            kill_in_the_move(project, ["apply"])
            assert (project.work / ".git" / "index.lock").exists()
        else:
            assert series(project.root, "apply", kill_at=int(n)).returncode == -9
        assert status_json(project, n)["uncommitted"] == []
        code, _, err = project.run("apply")
        assert code == 0, (n, err)
        assert result(project) == wanted, n
        assert not leftovers(project), (n, leftovers(project))


def test_only_temporary_files_of_gone_series_runs_are_removed(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    done = subprocess.Popen(["true"])  # a pid that no longer runs
    done.wait()
    patches = project.root / "patches"
    dead = patches / f".series-tmp-{done.pid}-perf-P1.patch.abc123"
    live = patches / f".series-tmp-{os.getpid()}-perf-P2.patch.def456"
    users = [patches / ".perf-P1.patch.xyz.tmp", patches / ".series-tmp-notes", tmp_path / "x"]
    for path in [dead, live, *users]:
        path.write_text("half\n")
    code, _, err = project.run("list")
    assert code == 0, err
    assert not dead.exists()
    assert live.exists() and all(p.exists() for p in users)

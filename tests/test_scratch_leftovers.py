"""What a killed series leaves outside the project (scratch directories and stdin files,
``series-*`` in ``XDG_RUNTIME_DIR``, /dev/shm or the temporary directory) is removed by
the next series that makes one, and nothing a live process holds, nothing of another
user's and no link is ever touched (series.git.run.private_dir, _sweep; docs/hardening.md,
"Scratch directories of a killed series"). Each test has its own XDG_RUNTIME_DIR."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import make_project

MARK = ".held"


def _env(run: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run), **extra}
    env.pop("SERIES_FAULT_KILL_AT", None)
    env.update(extra)
    return env


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def _later(run: Path) -> None:
    """As if the last sweep of ``run`` were two minutes ago (one a minute at most)."""
    stamp = run / f".series-swept-{os.getuid()}"
    if stamp.exists():
        _age(stamp, 120)


def _sweep_an_hour_later(run: Path, path: Path) -> None:
    """``path`` made an hour ago, a sweep of ``run`` due, and one run."""
    _age(path, 3600)
    _later(run)
    _sweep(run)


def _sweep(run: Path) -> None:
    """A fresh series process that makes (and removes) one scratch directory."""
    probe = (
        "from series.git.run import private_dir, remove_tree\n"
        "remove_tree(private_dir('series-probe-'))\n"
    )
    subprocess.run(
        [sys.executable, "-c", probe], env=_env(run), check=True, timeout=120, capture_output=True
    )


def test_a_killed_series_leaves_its_scratch_to_the_next_one(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    argv = [sys.executable, "-m", "series", "-C", str(project.root), "apply"]
    for n in range(1, 60):  # the first step at which apply holds a scratch directory
        killed = subprocess.run(
            argv, env=_env(run, SERIES_FAULT_KILL_AT=str(n)), capture_output=True, timeout=300
        )
        assert killed.returncode == -9, killed.stderr
        left = sorted(run.glob("series-*"))
        if left:
            break
    assert left and all(p.name.endswith(MARK) for p in left)
    for path in left:
        _age(path, 60)
    _later(run)
    done = subprocess.run(argv, env=_env(run), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not [p for p in left if os.path.lexists(p)]
    # and the finished apply left nothing of its own (but the sweep's stamp)
    assert sorted(p.name for p in run.iterdir()) == [f".series-swept-{os.getuid()}"]


def test_a_held_scratch_is_never_removed_even_named_with_a_dead_pid(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    held = run / f"series-no-attributes-999999999-abc{MARK}"
    held.mkdir(0o700)
    (held / "HEAD").write_text("x\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            f"fd = os.open({str(held)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        _sweep_an_hour_later(run, held)
        assert (held / "HEAD").read_text() == "x\n"
    finally:
        holder.communicate("", timeout=60)
    _later(run)
    _sweep(run)  # its holder gone (as a killed one's lock is let go): removed
    assert not held.exists()


def test_a_live_series_s_scratch_is_never_removed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    maker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from series.git.run import private_dir, remove_tree\n"
            "path = private_dir('series-live-')\n"
            "print(path, flush=True)\n"
            "sys.stdin.read()\n"
            "remove_tree(path)\n",
        ],
        env=_env(run),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert maker.stdout is not None
        live = Path(maker.stdout.readline().strip())
        assert live.parent == run and live.is_dir()
        (live / "data").write_text("d\n")
        _sweep_an_hour_later(run, live)
        assert (live / "data").read_text() == "d\n"
    finally:
        maker.communicate("", timeout=60)
    assert not live.exists()


def test_links_other_users_and_young_ones_are_kept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("k\n")
    _age(target, 3 * 86400)  # a link followed would see an old directory
    links = [run / f"series-link-1{MARK}", run / "series-link-2"]
    for link in links:
        link.symlink_to(target, target_is_directory=True)
        _age(link, 3 * 86400)
    young = run / f"series-young-1{MARK}"  # made, not locked yet: within the grace period
    young.mkdir(0o700)
    recent = run / "series-objects-0123456789ab"  # no lock protocol, not a day old
    recent.mkdir(0o700)
    _age(recent, 3600)
    old = run / "series-objects-ba9876543210"  # no lock protocol, days old: series'
    old.mkdir(0o700)
    (old / "x").write_text("x\n")
    _age(old, 3 * 86400)
    others = run / f"series-other-1{MARK}"
    others.mkdir(0o700)
    other_old = run / "series-other-2"
    other_old.mkdir(0o700)
    owned = os.getuid() == 0
    if owned:
        for path in (others, other_old):
            os.chown(path, 65534, 65534)
            _age(path, 3 * 86400)
    not_series = run / "other-tool-1"
    not_series.mkdir()
    _age(not_series, 3 * 86400)
    users = run / "series-notes"  # the user's own, days old: no name series ever made
    users.mkdir()
    (users / "todo").write_text("t\n")
    _age(users, 3 * 86400)
    _sweep(run)
    assert all(link.is_symlink() for link in links)
    assert (target / "keep").read_text() == "k\n"
    assert young.is_dir() and recent.is_dir() and not_series.is_dir()
    assert (users / "todo").read_text() == "t\n"
    assert not old.exists()
    if owned:
        assert others.is_dir() and other_old.is_dir()
    _age(young, 60)
    _sweep(run)  # within a minute of the last sweep: none
    assert young.is_dir()
    _later(run)
    _sweep(run)
    assert not young.exists()


def test_a_scratch_taken_by_a_sweep_before_its_lock_is_not_used(tmp_path: Path) -> None:
    """The race of a maker (mkdir, then lock) and a sweep (lock, then remove) in between:
    the maker, its lock refused or its directory gone, makes another (series.git.run._hold)."""
    run = tmp_path / "run"
    run.mkdir()
    probe = (
        "import fcntl, os, subprocess, sys\n"
        "from series.git import run\n"
        f"base = {str(run)!r}\n"
        "taken = os.path.join(base, 'series-race-1.held')\n"
        "os.mkdir(taken, 0o700)\n"
        "sweeper = subprocess.Popen([sys.executable, '-c', 'import fcntl, os, sys; "
        "fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); "
        "print(1, flush=True); sys.stdin.read()', taken], stdin=subprocess.PIPE, "
        "stdout=subprocess.PIPE, text=True)\n"
        "assert sweeper.stdout.readline() == '1\\n'\n"
        "print('locked', run._hold(taken))\n"
        "sweeper.communicate('', timeout=60)\n"
        "gone = os.path.join(base, 'series-race-2.held')\n"
        "os.mkdir(gone, 0o700)\n"
        "os.rmdir(gone)  # the sweep, its lock taken and let go\n"
        "print('removed', run._hold(gone))\n"
        "mine = os.path.join(base, 'series-race-3.held')\n"
        "os.mkdir(mine, 0o700)\n"
        "print('mine', run._hold(mine))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=_env(run),
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout
    assert out.split("\n")[:3] == ["locked False", "removed False", "mine True"]

"""Benchmark: ``series rebase`` and ``series check-conflicts --onto`` on the real series.

Both against the shared shallow clone of real keras (../shared/upstream,
unpacked into a temporary directory), measured side by side in one run:

1. ``series rebase --onto master`` of the real series (all its patches), the
   conflicts of P18 and P23 replayed from resolutions/ (a ``series``
   process, everything included: start-up, fetch of the already-present
   target, one merge per patch, the re-export of patches/ with its
   verification, the summary), against what a competent user does by
   hand: ``git rebase --onto master PIN`` of the same commits in a work
   tree, with ``rerere`` trained on the same resolutions
   (``rerere.autoupdate``), then ``git rebase --continue`` at each stop.
   Each repetition starts from a fresh copy of the same state (not timed),
   and runs the rebase once more in this process with each git process's
   CPU recorded (``git_cpu``): where git's time goes, and the floor, the
   git work this rebase cannot skip.
2. ``series check-conflicts --onto master`` warm (in process, second run
   on), against its floor: the CPU time of the ``merge-tree`` processes it
   runs (its batches and its replay's stream, each process's own CPU as it
   ends: ``git_cpu``), measured inside the same runs.

    python ci/bench_rebase.py [--repeat N] [--shared PATH]

Targets (issue 10): rebase at least 3x faster than git rebase;
check-conflicts --onto no more than 2x its merge floor.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from series.cli import main
from series.git import child as git_child
from series.git import run as git_run

ROOT = Path(__file__).resolve().parent.parent
TARBALL = ROOT.parent / "shared" / "upstream" / "keras-2026-07-21.git.tar.gz"
RERERE = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
# The git rebase by hand commits: an identity of its own, as bench_commands' (a fresh
# machine's git has none, and the rebase stopped after its first pick, unable to commit)
IDENT = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@keras-series.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@keras-series.invalid",
}


def sh(cwd: Path, *argv: str, env: dict[str, str] | None = None, ok: bool = True) -> str:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **IDENT, **(env or {})},
    )
    if ok and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def series(project: Path, *args: str, ok: bool = True) -> str:
    return sh(project, sys.executable, "-m", "series", "-C", str(project), *args, ok=ok)


def prepare(tmp: Path, shared: Path) -> tuple[Path, Path, str]:
    """An applied copy of the real series and a git clone of its checkout, both ready."""
    project = tmp / "project"
    project.mkdir()
    shutil.copy2(ROOT / "series.toml", project / "series.toml")
    shutil.copytree(ROOT / "patches", project / "patches")
    shutil.copytree(ROOT / "resolutions", project / "resolutions")
    series(project, "apply", "--source", "git", "--upstream", str(shared))
    work = project / "work"
    # Both sides have master already: neither is timed fetching it.
    sh(work, "git", "fetch", "-q", "--update-shallow", str(shared), "+master:refs/bench/master")
    pin = sh(work, "git", "rev-parse", "refs/series/base").strip()
    clone = tmp / "clone"
    sh(tmp, "git", "clone", "-q", str(work), str(clone))
    sh(clone, "git", "fetch", "-q", "--update-shallow", str(shared), "+master:refs/bench/master")
    sh(clone, "git", "checkout", "-q", "series")
    _train_rerere(tmp, project, clone, pin, shared)
    return project, clone, pin


def _rebasing(clone: Path) -> bool:
    git_dir = Path(sh(clone, "git", "rev-parse", "--absolute-git-dir").strip())
    return (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists()


def _continue_until_done(clone: Path) -> None:
    """``git rebase --continue`` at every stop rerere has resolved."""
    for _ in range(100):
        if not _rebasing(clone):
            return
        sh(clone, "git", *RERERE, "rebase", "--continue", env={"GIT_EDITOR": "true"}, ok=False)
    raise SystemExit(f"git rebase in {clone} does not finish: rerere left a stop unresolved")


def _train_rerere(tmp: Path, project: Path, clone: Path, pin: str, shared: Path) -> None:
    """Resolve every stop once (series' recorded results) in a copy of the clone, and give
    the clone that copy's rerere records (``.git/rr-cache``), nothing else: the rebase
    finished in the clone itself would leave the rebased series' trees and commits in its
    object store, and the timed git rebase would find most of what it writes already there
    (git then writes none), a head start series' side (its trial is a copy) does not have."""
    trainee = tmp / "trainee"
    shutil.copytree(clone, trainee, symlinks=True)
    trial = tmp / "trial"
    shutil.copytree(project, trial, symlinks=True)
    series(trial, "rebase", "--onto", "master", "--upstream", str(shared))
    log = sh(trial / "work", "git", "log", "--format=%H %s", "refs/bench/master..series")
    by_subject = {line[41:]: line[:40] for line in log.splitlines()}
    sh(trainee, "git", *RERERE, "rebase", "-q", "--onto", "refs/bench/master", pin, ok=False)
    while _rebasing(trainee):
        subject = sh(trainee, "git", "log", "-1", "--format=%s", "REBASE_HEAD").strip()
        resolved = by_subject[subject]
        conflicted = sh(trainee, "git", "diff", "--name-only", "--diff-filter=U").split()
        for name in conflicted:
            content = subprocess.run(
                ["git", "show", f"{resolved}:{name}"],
                cwd=trial / "work", capture_output=True, check=True,
            ).stdout  # fmt: skip
            (trainee / name).write_bytes(content)
            sh(trainee, "git", "add", name)
        sh(trainee, "git", *RERERE, "rebase", "--continue", env={"GIT_EDITOR": "true"}, ok=False)
    shutil.rmtree(trial)
    shutil.copytree(trainee / ".git" / "rr-cache", clone / ".git" / "rr-cache")
    shutil.rmtree(trainee)


FLOOR = {  # the git work a rebase of this job cannot skip, by git command
    "merge-tree": "the merges",
    "hash-object": "writing the commits (and their merge bases)",
    "status": "the dirty check",
    "read-tree": "moving the work tree",
    "format-patch": "the export",
}


@dataclass
class RebaseRun:
    process: float  # a `series rebase` process, wall
    in_process: float  # the same command in this process (no start-up)
    git: dict[str, float]  # git time of the in-process run, by git command
    calls: int
    git_rebase: float  # git rebase + rerere + --continue in a work tree
    format_patch: float  # then git format-patch of the result (the rest of the job)

    @property
    def floor(self) -> float:
        return sum(self.git.get(name, 0.0) for name in FLOOR)


def _git_command(argv: list[str]) -> str:
    """The git command ``argv`` runs (``read-tree`` split by whether it moves files)."""
    args = argv[1:]
    if Path(argv[0]).name == "stdbuf":  # the merge stream: stdbuf -o0 git merge-tree ...
        args = args[args.index("git") + 1 :] if "git" in args else []
    while len(args) > 1 and (args[0] in ("-c", "-C") or args[0].startswith("--")):
        args = args[2:] if args[0] in ("-c", "-C") else args[1:]
    if args[:1] == ["read-tree"] and "-u" not in args:
        return "read-tree (index only)"
    return args[0] if args else "?"


@contextmanager
def git_cpu() -> Iterator[tuple[dict[str, float], list[int]]]:
    """Within it, the CPU seconds (user + system) of each git process series starts in
    this process, added up by git command, and how many it started.

    Each process's own CPU, as the kernel reports it when the process is reaped
    (``wait4``), whichever way series ran it: to its end, long-lived (the merge stream,
    the object writers, ``cat-file``), or several at once (a batch split in two, the
    export's halves). The processes are named where they start: series.git.child
    ``spawn`` (series' own way), and subprocess (GitPython's, and ``plain``'s); a
    process started any other way counts under ``other``."""
    spent: dict[str, float] = {}
    calls = [0]
    names: dict[int, str] = {}
    spawn, waitpid, popen_init = git_child.spawn, os.waitpid, subprocess.Popen.__init__

    def named_spawn(cwd: Path, argv: Any, *rest: Any, **kwargs: Any) -> Any:
        started = spawn(cwd, argv, *rest, **kwargs)
        names[started[0].pid] = _git_command(list(argv))
        return started

    def named_popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        popen_init(self, args, *rest, **kwargs)
        argv = [args] if isinstance(args, (str, bytes)) else list(args)
        names[self.pid] = _git_command([str(a) for a in argv])

    def reaped(pid: int, options: int) -> tuple[int, int]:
        got, status, usage = os.wait4(pid, options)
        if got:
            calls[0] += 1
            name = names.pop(got, "other")
            spent[name] = spent.get(name, 0.0) + usage.ru_utime + usage.ru_stime
        return got, status

    git_child.spawn = named_spawn
    vars(git_run)["spawn"] = named_spawn  # the name series.git.run imported
    subprocess.Popen.__init__ = named_popen  # type: ignore[method-assign]
    os.waitpid = reaped
    try:
        yield spent, calls
    finally:
        git_child.spawn = spawn
        vars(git_run)["spawn"] = spawn
        subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
        os.waitpid = waitpid


def in_process(project: Path, args: list[str]) -> tuple[float, dict[str, float], int]:
    """``series ARGS`` in this process: (wall, git CPU by command, git processes)."""
    with git_cpu() as (spent, calls):
        start = time.perf_counter()
        status = main(["-C", str(project), *args], out=io.StringIO(), err=io.StringIO())
        wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"series {' '.join(args)} failed in process ({status})")
    return wall, spent, calls[0]


def time_rebase(tmp: Path, project: Path, clone: Path, pin: str, shared: Path) -> RebaseRun:
    run_dir, inner_dir, git_dir = tmp / "run-project", tmp / "run-inner", tmp / "run-clone"
    for d in (run_dir, inner_dir, git_dir):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(project, run_dir, symlinks=True)
    shutil.copytree(project, inner_dir, symlinks=True)
    shutil.copytree(clone, git_dir, symlinks=True)
    # the copies (and before each timed run, the run before it) written out: a command
    # right after a copy of a checkout otherwise runs while the kernel writes the copy back
    # (bench_commands.quiet)
    os.sync()
    args = ["rebase", "--onto", "master", "--upstream", str(shared)]
    start = time.perf_counter()
    series(run_dir, *args)
    fast = time.perf_counter() - start
    os.sync()
    inner, spent, calls = in_process(inner_dir, args)
    os.sync()
    start = time.perf_counter()
    sh(git_dir, "git", *RERERE, "rebase", "-q", "--onto", "refs/bench/master", pin, ok=False)
    _continue_until_done(git_dir)
    slow = time.perf_counter() - start
    start = time.perf_counter()
    sh(git_dir, "git", "format-patch", "-q", "-o", str(tmp / "by-hand"), "refs/bench/master..")
    export = time.perf_counter() - start
    shutil.rmtree(tmp / "by-hand")
    got = sh(run_dir / "work", "git", "rev-parse", "series^{tree}")
    want = sh(git_dir, "git", "rev-parse", "HEAD^{tree}")
    if got != want:
        raise SystemExit(f"series rebase and git rebase disagree: {got} vs {want}")
    return RebaseRun(fast, inner, spent, calls, slow, export)


def start_up(tmp: Path) -> float:
    """A `series --version` process: the interpreter and the imports."""
    start = time.perf_counter()
    series(tmp, "--version")
    return time.perf_counter() - start


def report_rebase(runs: list[RebaseRun], startup: float) -> None:
    med = statistics.median
    fast, slow = med(r.process for r in runs), med(r.git_rebase for r in runs)
    by_hand = med(r.git_rebase + r.format_patch for r in runs)
    git_time = med(sum(r.git.values()) for r in runs)
    floor = med(r.floor for r in runs)
    print(f"rebase of the series onto master (P18, P23 from their recorded resolutions), "
          f"median of {len(runs)}:")  # fmt: skip
    print(f"  series rebase, a process               {fast:.2f} s")
    print(f"    start-up (interpreter, imports)      {startup:.2f} s")
    print(f"    in process                           {med(r.in_process for r in runs):.2f} s, "
          f"of which git {git_time:.2f} s of CPU in {runs[0].calls} processes")  # fmt: skip
    parts = ", ".join(
        f"{what} {med(r.git.get(name, 0.0) for r in runs):.3f}" for name, what in FLOOR.items()
    )
    print(f"    the floor: git CPU it cannot skip    {floor:.2f} s ({parts})")
    print(f"  git rebase + rerere + --continue       {slow:.2f} s   "
          f"ratio {slow / fast:.2f}x faster (target >= 3x)")  # fmt: skip
    print(f"  ... + git format-patch (the job by hand) {by_hand:.2f} s   "
          f"ratio {by_hand / fast:.2f}x faster")  # fmt: skip
    print(f"  3x faster than git rebase is {slow / 3:.3f} s; the floor alone is {floor:.3f} s "
          f"({floor / (slow / 3):.1f}x that); series is "
          f"{(f'{fast / floor:.1f}x' if floor else 'not measured against')} its floor")  # fmt: skip


def time_check(project: Path, shared: Path) -> tuple[float, float, int]:
    """One warm check-conflicts --onto master in process: (wall, the CPU of its
    ``merge-tree`` processes, how many git processes it ran)."""
    argv = ["-C", str(project), "check-conflicts", "--onto", "master"]
    argv += ["--upstream", str(shared), "--source", "git"]
    with git_cpu() as (spent, calls):
        start = time.perf_counter()
        main(argv, out=io.StringIO(), err=io.StringIO())
        wall = time.perf_counter() - start
    return wall, spent.get("merge-tree", 0.0), calls[0]


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shared", type=Path, default=TARBALL, help="the upstream tarball")
    args = parser.parse_args()
    if not args.shared.is_file():
        raise SystemExit(f"no {args.shared}: ../shared/upstream is not beside the checkout")
    with tempfile.TemporaryDirectory(prefix="bench-rebase-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["SERIES_CACHE_DIR"] = str(tmp / "cache")
        with tarfile.open(args.shared) as tar:
            tar.extractall(tmp / "up", filter="data")
        shared = tmp / "up" / "keras.git"
        project, clone, pin = prepare(tmp, shared)
        runs = [time_rebase(tmp, project, clone, pin, shared) for _ in range(args.repeat)]
        startup = statistics.median(start_up(tmp) for _ in range(args.repeat))
        time_check(project, shared)  # warm up: the stack memo, the fetch
        checks = [time_check(project, shared) for _ in range(args.repeat)]
    report_rebase(runs, startup)
    wall = statistics.median(c[0] for c in checks)
    floor = statistics.median(c[1] for c in checks)
    print(f"check-conflicts --onto master, warm, median of {args.repeat} "
          f"({checks[0][2]} git processes):")  # fmt: skip
    print(f"  wall {wall:.3f} s   merge-tree's CPU {floor:.3f} s   "
          f"ratio {wall / floor:.2f}x the merges' CPU (target <= 2x; a batch split in two "
          f"runs on both cores, so the wall can come below it)")  # fmt: skip


if __name__ == "__main__":
    main_bench()

"""Benchmark: ``series rebase`` and ``series check-conflicts --onto`` on the real series.

Both against the shared shallow clone of real keras (../shared/upstream,
unpacked into a temporary directory), measured side by side in one run:

1. ``series rebase --onto master`` of the real 13 patches, P18's conflict
   replayed from resolutions/P18/ (a ``series`` process, everything
   included: start-up, fetch of the already-present target, 13 merges, the
   re-export of patches/ with its verification, the summary), against
   what a competent user does by hand: ``git rebase --onto master PIN`` of
   the same commits in a work tree, with ``rerere`` trained on the same
   resolution (``rerere.autoupdate``), then ``git rebase --continue``.
   Each repetition starts from a fresh copy of the same state (not timed).
2. ``series check-conflicts --onto master`` warm (in process, second run
   on), against its floor: the time of the batched ``merge-tree`` calls it
   makes (``Merger.run``, measured inside the same runs).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from series.cli import main
from series.conflicts import merger as merger_module

ROOT = Path(__file__).resolve().parent.parent
TARBALL = ROOT.parent / "shared" / "upstream" / "keras-2026-07-21.git.tar.gz"
P18_FILE = "keras/src/tree/torchtree_impl.py"


def sh(cwd: Path, *argv: str, env: dict[str, str] | None = None, ok: bool = True) -> str:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
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


def _train_rerere(tmp: Path, project: Path, clone: Path, pin: str, shared: Path) -> None:
    """Resolve P18 once in the clone (with series' recorded result), so rerere knows it."""
    trial = tmp / "trial"
    shutil.copytree(project, trial, symlinks=True)
    series(trial, "rebase", "--onto", "master", "--upstream", str(shared))
    resolved = (trial / "work" / P18_FILE).read_bytes()
    shutil.rmtree(trial)
    rerere = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
    sh(clone, "git", *rerere, "rebase", "-q", "--onto", "refs/bench/master", pin, ok=False)
    (clone / P18_FILE).write_bytes(resolved)
    sh(clone, "git", "add", P18_FILE)
    sh(clone, "git", *rerere, "rebase", "--continue", env={"GIT_EDITOR": "true"})
    sh(clone, "git", "checkout", "-q", "-B", "series", "origin/series")


def time_rebase(
    tmp: Path, project: Path, clone: Path, pin: str, shared: Path
) -> tuple[float, float]:
    run_dir, git_dir = tmp / "run-project", tmp / "run-clone"
    for d in (run_dir, git_dir):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(project, run_dir, symlinks=True)
    shutil.copytree(clone, git_dir, symlinks=True)
    start = time.perf_counter()
    series(run_dir, "rebase", "--onto", "master", "--upstream", str(shared))
    fast = time.perf_counter() - start
    rerere = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
    start = time.perf_counter()
    sh(git_dir, "git", *rerere, "rebase", "-q", "--onto", "refs/bench/master", pin, ok=False)
    sh(git_dir, "git", *rerere, "rebase", "--continue", env={"GIT_EDITOR": "true"})
    slow = time.perf_counter() - start
    got = sh(run_dir / "work", "git", "rev-parse", "series^{tree}")
    want = sh(git_dir, "git", "rev-parse", "HEAD^{tree}")
    if got != want:
        raise SystemExit(f"series rebase and git rebase disagree: {got} vs {want}")
    return fast, slow


def time_check(project: Path, shared: Path) -> tuple[float, float, int]:
    """One warm check-conflicts --onto master in process: (wall, in Merger.run, merges)."""
    spent = [0.0, 0]
    original: Callable[..., Any] = merger_module.Merger.run

    def timed(self: merger_module.Merger, jobs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, jobs)
        finally:
            spent[0] += time.perf_counter() - start
            spent[1] += len(jobs)

    merger_module.Merger.run = timed  # type: ignore[method-assign]
    try:
        argv = ["-C", str(project), "check-conflicts", "--onto", "master"]
        argv += ["--upstream", str(shared), "--source", "git"]
        start = time.perf_counter()
        main(argv, out=io.StringIO(), err=io.StringIO())
        wall = time.perf_counter() - start
    finally:
        merger_module.Merger.run = original  # type: ignore[method-assign]
    return wall, spent[0], int(spent[1])


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
        fast, slow = [r[0] for r in runs], [r[1] for r in runs]
        time_check(project, shared)  # warm up: the stack memo, the fetch
        checks = [time_check(project, shared) for _ in range(args.repeat)]
    f, s = statistics.median(fast), statistics.median(slow)
    print(f"rebase of 13 onto master (P18 from its recorded resolution), median of {args.repeat}:")
    print(f"  series rebase {f:.2f} s   git rebase + rerere + --continue {s:.2f} s   "
          f"ratio {s / f:.1f}x faster (target >= 3x)")  # fmt: skip
    wall = statistics.median(c[0] for c in checks)
    floor = statistics.median(c[1] for c in checks)
    print(f"check-conflicts --onto master, warm, median of {args.repeat} ({checks[0][2]} merges):")
    print(f"  wall {wall:.3f} s   merge-tree batches {floor:.3f} s   "
          f"ratio {wall / floor:.2f}x the floor (target <= 2x)")  # fmt: skip


if __name__ == "__main__":
    main_bench()

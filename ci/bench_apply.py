"""Benchmark: `series apply` (warm cache) against `git am` of the same patches.

Both start from an empty directory and the upstream base already in the
per-user cache repository, and end with a checkout holding base + stack:

* series apply --dir NEW     (init, fetch base, build stack in memory, checkout)
* git init; git fetch CACHE; git checkout BASE; git am -3 patches/*  (the plain way)
* series apply (again, nothing changed): the no-op re-run

Prints the median of each over --runs and the ratios. Run from the project
root: python ci/bench_apply.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from series.project import Series
from series.upstream import cache_repo, resolve

ROOT = Path(__file__).resolve().parent.parent
IDENT = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@invalid",
}


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, env={**os.environ, **IDENT})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    series = Series.load(ROOT)
    base = resolve(series.manifest.upstream, series.cache_dir, source=None, override=None)
    repo = cache_repo(series.cache_dir)
    cache = repo.path
    patches = [str(series.patch_path(p)) for p in series.manifest.patches]
    ref = next(name for name, sha in repo.refs.under("refs/series/").items() if sha == base.commit)
    cli = [sys.executable, "-m", "series", "-C", str(ROOT), "apply", "--source", base.source]
    fresh, rerun, am = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        for i in range(args.runs):
            work = Path(tmp) / f"series-{i}"
            fresh.append(timed([*cli, "--dir", str(work)], ROOT))
            rerun.append(timed([*cli, "--dir", str(work)], ROOT))
            plain = Path(tmp) / f"am-{i}"
            start = time.perf_counter()
            plain.mkdir()
            for argv in (
                ["git", "init", "-q"],
                ["git", "fetch", "-q", "--no-tags", str(cache), ref],
                ["git", "checkout", "-q", base.commit],
                ["git", "am", "-q", "-3", "--committer-date-is-author-date", *patches],
            ):
                subprocess.run(
                    argv, cwd=plain, check=True, capture_output=True, env={**os.environ, **IDENT}
                )
            am.append(time.perf_counter() - start)
    med = statistics.median
    print(f"patches: {len(patches)}   base: {base.label}   runs: {args.runs}")
    print(f"git am (fresh dir):             {med(am):7.3f} s")
    for label, times in (("series apply (fresh dir)", fresh), ("series apply (re-run)", rerun)):
        ratio = med(times) / med(am)
        print(f"{label + ':':<31} {med(times):7.3f} s   time relative to git am: {ratio:5.2f}x")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

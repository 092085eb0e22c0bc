"""Benchmark ``series test``: cold vs warm cache, and parallel vs ``--jobs 1``.

Prints the wall-clock time of each run and two ratios, all measured in this
one invocation, for docs/testing.md:

1. cold: ``series test --jobs N`` on a fresh cache (no results, no work trees);
2. warm: the same command again, every result cached;
3. parallel: ``--jobs N --no-cache`` (work trees exist now, results ignored);
4. serial: ``--jobs 1 --no-cache``.

Each run is its own ``python -m series`` process, as a person would run it.
The upstream tree is materialised into the fresh cache before the clock
starts (downloading the sdist is not what is measured).

Usage::

    python ci/bench_test.py                 # the real series (series.toml at the repo root)
    python ci/bench_test.py --demo          # two small patches on the real keras tree
    python ci/bench_test.py -C PROJECT --jobs 2 P1 P4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tests" / "data" / "keras"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="series-bench-") as tmp:
        project = args.project or _default_project(Path(tmp), args.demo)
        cache = Path(tmp) / "cache"
        _materialise(project, cache)
        jobs = args.jobs or _cores()
        runs = [
            ("cold", jobs, False),
            ("warm", jobs, False),
            ("parallel", jobs, True),
            ("serial", 1, True),
        ]
        times: dict[str, float] = {}
        for name, n, no_cache in runs:
            seconds, report = _series_test(project, cache, n, no_cache, args.ids)
            times[name] = seconds
            ran = sum(1 for p in report["patches"] if p.get("cached") is False)
            print(f"{name:<9} --jobs {n}{' --no-cache' if no_cache else '':<11} "
                  f"{seconds:8.1f} s  ({len(report['patches'])} patches, {ran} ran)")  # fmt: skip
            if name == "warm" and ran:
                print("warm run was not fully cached", file=sys.stderr)
                return 1
    print(f"ratio cold/warm:       {times['cold'] / times['warm']:.1f}x")
    print(f"ratio serial/parallel: {times['serial'] / times['parallel']:.2f}x (jobs {jobs})")
    print(f"machine: {_cores()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-C", dest="project", type=Path, help="the project (default: this repo)")
    p.add_argument("--demo", action="store_true", help="the two-patch keras demo project")
    p.add_argument("--jobs", type=int, help="parallel runs (default: the cores available)")
    p.add_argument("ids", nargs="*", help="limit to these patches")
    return p


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _default_project(tmp: Path, demo: bool) -> Path:
    if not demo and (ROOT / "series.toml").is_file():
        return ROOT
    project = tmp / "demo"
    (project / "patches").mkdir(parents=True)
    shutil.copy2(DEMO / "series.toml", project / "series.toml")
    for patch in DEMO.glob("keras-P*.patch"):
        shutil.copy2(patch, project / "patches" / patch.name)
    return project


def _materialise(project: Path, cache: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    from series.project import Series
    from series.upstream import resolve

    series = Series.load(project, cache)
    base = resolve(series.manifest.upstream, cache, source=None, override=None)
    print(f"project {project}: {len(series.manifest.patches)} patches on {base.label}")


def _series_test(
    project: Path, cache: Path, jobs: int, no_cache: bool, ids: list[str]
) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "series", "-C", str(project), "test", "--json"]
    argv += ["--jobs", str(jobs), *(["--no-cache"] if no_cache else []), *ids]
    env = {**os.environ, "SERIES_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1) or not proc.stdout:
        sys.exit(f"series test failed (exit {proc.returncode}):\n{proc.stderr}")
    return seconds, json.loads(proc.stdout)


if __name__ == "__main__":
    raise SystemExit(main())

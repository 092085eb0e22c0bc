"""Benchmark two versions of series side by side: apply and check-conflicts.

For a change that must not cost speed (a restructuring), run the same
commands with this checkout's series and with another one's, interleaved
in the same run so that the machine's load hits both alike:

* ``series apply --dir NEW`` on this project (warm cache, fresh directory);
* ``series apply --dir NEW`` again, nothing changed (the no-op re-run);
* ``series check-conflicts --onto next --json`` on the 13-patch bench
  project of ci/bench_check_conflicts.py (warm).

Each is its own ``python -m series`` process, as a person runs it; each
version has its own cache, filled by one untimed run first. Prints, for
wall time and for CPU time (user+sys of the process and the git processes
it ran, which a busy machine disturbs less), the medians, the ratio new/old
of the medians and the range of the per-round ratios; and the load average.

    git worktree add ../series-old REV
    python3 -m venv ../series-old/.venv
    ../series-old/.venv/bin/pip install -q -c ci/constraints.txt -e ../series-old
    python ci/bench_versions.py --other ../series-old/.venv/bin/python [--rounds 7] [--upstream URL]

``--upstream`` (a git clone holding the pin, e.g. ../shared/upstream's
keras.git unpacked) lets apply run where GitHub cannot be reached; the
check-conflicts project is then built on that clone's HEAD.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_check_conflicts import build, keras_base, load
from series.project import Series, default_cache_dir
from series.upstream import resolve

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("apply (fresh dir)", "apply (re-run)", "check-conflicts")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(python: str, argv: list[str], cache: Path) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the process and the git processes it ran."""
    env = {**os.environ, "SERIES_CACHE_DIR": str(cache)}
    start, used = time.perf_counter(), children_cpu()
    proc = subprocess.run(
        [python, "-m", "series", *argv], capture_output=True, text=True, env=env, check=False
    )
    seconds, used = time.perf_counter() - start, children_cpu() - used
    if proc.returncode not in (0, 3):
        sys.exit(f"{python} -m series {' '.join(argv)}: exit {proc.returncode}\n{proc.stderr}")
    return seconds, used


def one_round(
    python: str, tmp: Path, name: str, project: Path, source: str, upstream: str | None
) -> list[tuple[float, float]]:
    cache, work = tmp / f"cache-{name}", tmp / f"work-{name}"
    apply = ["-C", str(ROOT), "apply", "--source", source, "--dir", str(work)]
    apply += ["--upstream", upstream] if upstream else []
    fresh = timed(python, apply, cache)
    rerun = timed(python, apply, cache)
    check = timed(
        python, ["-C", str(project), "check-conflicts", "--onto", "next", "--json"], cache
    )
    shutil.rmtree(work)
    return [fresh, rerun, check]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", required=True, help="the python of the other version's venv")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--upstream", help="where apply takes the pin from (a git URL or path; default: the pin's)"
    )
    args = parser.parse_args()
    versions = {"new": sys.executable, "old": args.other}
    print(f"machine: {load()} at the start")
    with tempfile.TemporaryDirectory(prefix="series-bench-versions-") as tmp_name:
        tmp = Path(tmp_name)
        upstream, label = keras_base(tmp, Path(args.upstream) if args.upstream else None)
        project, _, _ = build(tmp, upstream)
        series = Series.load(ROOT, default_cache_dir())
        source = resolve(series.manifest.upstream, series.cache_dir, source=None, override=None)
        print(f"base: {label}; apply on this project, check-conflicts on the bench project")
        for name, python in versions.items():  # fill each cache, untimed
            one_round(python, tmp, name, project, source.source, args.upstream)
        times: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in versions}
        for r in range(args.rounds):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for name in order:
                times[name].append(
                    one_round(versions[name], tmp, name, project, source.source, args.upstream)
                )
    report(times)
    print(f"machine: {load()} at the end")
    return 0


def report(times: dict[str, list[list[tuple[float, float]]]]) -> None:
    med = statistics.median
    rounds = len(times["new"])
    print(f"{'':<26} {'old':>8} {'new':>8}   new/old   per-round range   ({rounds} rounds)")
    for k, kind in enumerate(KINDS):
        for m, measure in enumerate(("wall", "cpu")):
            old = [t[k][m] for t in times["old"]]
            new = [t[k][m] for t in times["new"]]
            each = sorted(n / o for n, o in zip(new, old, strict=True))
            print(
                f"{kind + ', ' + measure:<26} {med(old):7.3f}s {med(new):7.3f}s   "
                f"{med(new) / med(old):5.2f}x     {each[0]:.2f}x .. {each[-1]:.2f}x"
            )


if __name__ == "__main__":
    raise SystemExit(main())

"""Run the series' full benchmark and scorecard, and say what the tool itself cost.

Builds the arms as detached worktrees of the checkout (``series apply``
must have run): the pin (``refs/series/base``), each patch alone on the pin
(``git apply``, its test files left out, skipped where it does not apply),
and the stack after each patch. Then it runs the bench with the pairs
upstream reported (each patch alone vs the pin, patch k vs k-1, the stack vs
the pin), prints the tables, writes ``bench.json`` and ``bench.png`` to
``--out``, and prints the wall and CPU time the run took, against the
10-minute budget, with the load average. ``--scorecard`` traces the 14
states instead.

Usage::

    python ci/bench_series.py --out bench-out                # full bench
    python ci/bench_series.py --out bench-out --quick        # seconds
    python ci/bench_series.py --out bench-out --scorecard    # dynamo scorecard
    python ci/bench_series.py --cache DIR ...                # reuse a cache (default: a fresh one)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from rich.console import Console

from series.runs.bench import (
    Arm,
    Pair,
    render_floors,
    render_scorecard,
    render_table,
    render_times,
    report_json,
    run_bench,
    run_scorecard,
    scorecard_json,
    summary_lines,
    write_chart,
)

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 600.0


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _checkout(project: Path) -> Path:
    manifest = tomllib.loads((project / "series.toml").read_text())
    checkout: str = manifest["series"].get("checkout", "work")
    return project / checkout


def build_trees(project: Path, trees: Path) -> tuple[list[Arm], list[Arm], list[Pair]]:
    """(all arms, the stack states pin..k, the pairs); worktrees under ``trees``."""
    work = _checkout(project)
    patches = tomllib.loads((project / "series.toml").read_text())["patch"]
    commits = _git(work, "rev-list", "--reverse", "refs/series/base..HEAD").split()
    if len(commits) != len(patches):
        raise SystemExit(f"{work} holds {len(commits)} commits, the manifest {len(patches)}")

    def tree(name: str, commit: str) -> Path:
        path = trees / name
        if not path.exists():
            _git(work, "worktree", "add", "-q", "--detach", str(path), commit)
        return path

    pin = Arm("pin", tree("pin", "refs/series/base"))
    states, alone = [pin], []
    pairs = []
    for k, (patch, commit) in enumerate(zip(patches, commits, strict=True), 1):
        states.append(Arm(f"1..{patch['id']}", tree(f"s{k:02d}-{patch['id']}", commit)))
        pairs.append(Pair(states[-2].name, states[-1].name, f"+{patch['id']} on {states[-2].name}"))
        path = trees / f"a-{patch['id']}"
        if not path.exists():
            tree(path.name, "refs/series/base")
            applied = subprocess.run(
                ["git", "apply", "--exclude=*_test.py", str(project / patch["file"])], cwd=path
            )
            if applied.returncode:
                print(f"{patch['id']} does not apply alone on the pin: no arm", file=sys.stderr)
                continue
        alone.append(Arm(f"{patch['id']} alone", path))
        pairs.append(Pair("pin", alone[-1].name))
    pairs.append(Pair("pin", states[-1].name, "stack vs pin"))
    return [pin, *alone, *states[1:]], states, pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-C", dest="project", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--trees", type=Path, help="where the worktrees go (kept)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--workloads", default="", help="comma-separated; default all")
    parser.add_argument("--scorecard", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    console = Console(width=200)
    with tempfile.TemporaryDirectory(prefix="series-bench-") as tmp:
        trees = args.trees or Path(tmp) / "trees"
        trees.mkdir(parents=True, exist_ok=True)
        arms, states, pairs = build_trees(args.project.resolve(), trees)
        cache = args.cache or Path(tmp) / "cache"
        load = os.getloadavg()
        started, cpu0 = time.monotonic(), os.times()
        say = lambda text: print(f"[{time.monotonic() - started:6.1f}s] {text}", file=sys.stderr)  # noqa: E731
        if args.scorecard:
            card = run_scorecard(states, cache_dir=cache, progress=say)
            console.print(render_scorecard(card))
            (args.out / "scorecard.json").write_text(json.dumps(scorecard_json(card), indent=1))
        else:
            workloads = [w for w in args.workloads.split(",") if w]
            report = run_bench(
                arms, workloads, cache_dir=cache, pairs=pairs, rounds=args.rounds,
                quick=args.quick, progress=say,
            )  # fmt: skip
            for table in (render_table(report), render_floors(report), render_times(report)):
                console.print(table)
            for line in summary_lines(report):
                console.print(line)
            (args.out / "bench.json").write_text(json.dumps(report_json(report), indent=1))
            write_chart(report, args.out / "bench.png")
        seconds, cpu1 = time.monotonic() - started, os.times()
        cpu = (cpu1.children_user + cpu1.children_system) - (
            cpu0.children_user + cpu0.children_system
        )
        cpu += (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
        print(
            f"arms {len(arms)}, states {len(states)}: {seconds:.0f} s wall, {cpu:.0f} s CPU "
            f"({seconds / BUDGET_S:.2f}x the {BUDGET_S:.0f} s budget); load average "
            f"{' '.join(f'{v:.1f}' for v in load)} before, "
            f"{' '.join(f'{v:.1f}' for v in os.getloadavg())} after"
        )
        if not args.trees:
            for path in sorted({arm.tree for arm in (*arms, *states)}):
                _git(_checkout(args.project.resolve()), "worktree", "remove", "--force", str(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())

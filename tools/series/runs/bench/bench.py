"""``run_bench``: measure arms, reuse what the cache holds, compare pairs.

The caller (``series bench``) builds the trees and says which pairs to
compare; this owns the method: which (arm, workload) results the cache
already holds, measuring the rest side by side (``measure.py``), the ratios
(``stats.py``), the equivalence of outputs (``equivalence.py``) and the
verdicts. Results belong to trees, not arms (``cache.by_tree``).

A run is *disturbed* when its own numbers say the machine moved them
(``disturbance.py``): a control (raw torch, the same code in every arm)
that does not come out as noise, workers that waited for the CPU (wall
time well above CPU time), rounds that spread, or a load average above the
cores. A full run has dozens of control comparisons, and at 95% one in
twenty would miss 1.0 by chance alone, so the controls' intervals are
Bonferroni-widened to keep the chance of a false alarm for the whole run at
5% (level 1 - 0.05 / number of control comparisons).

A run *failed* when a comparison's outputs differ; ``exit_code`` maps that
to ``Exit.FAILED``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from series.errors import Exit
from series.runs.bench import disturbance, stats
from series.runs.bench.cache import Store, by_tree, key
from series.runs.bench.equivalence import Equivalence, compare
from series.runs.bench.measure import Progress, measure
from series.runs.bench.pool import busy_limit
from series.runs.bench.spec import (
    QUICK,
    WORKLOADS,
    Arm,
    Pair,
    Settings,
    check_arms,
    check_workloads,
)


@dataclass(frozen=True)
class ArmResult:
    arm: Arm
    tree_id: str
    where: str  # the directory its package was imported from (the proof)
    measured: list[str]  # workloads timed in this run
    cached: list[str]  # workloads taken from the cache


@dataclass(frozen=True)
class Samples:
    cpu: list[float]
    wall: list[float]
    calls: int
    session: str
    outputs: Path
    where: str = ""  # the directory the package was imported from


@dataclass(frozen=True)
class Comparison:
    pair: Pair
    workload: str
    cpu: stats.Ratio
    wall: stats.Ratio
    equivalence: Equivalence

    @property
    def control(self) -> bool:
        return WORKLOADS[self.workload].control


@dataclass(frozen=True)
class Floor:
    """How far an arm's Keras is above raw torch doing the same work."""

    arm: str
    workload: str
    torch: str
    ratio: float  # median CPU time of the Keras workload / of the torch one
    # A twin given the Keras workload's inputs and weights (``Workload.twin_of``):
    # its outputs against the Keras ones, in this arm. None: its own weights.
    same_outputs: Equivalence | None = None


@dataclass
class BenchReport:
    arms: list[ArmResult]
    workloads: list[str]
    pairs: list[Pair]
    settings: Settings
    samples: dict[tuple[str, str], Samples]
    comparisons: list[Comparison] = field(default_factory=list)
    floors: list[Floor] = field(default_factory=list)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    key: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    disturbance: list[str] = field(default_factory=list)  # why it was disturbed

    @property
    def moved_controls(self) -> list[Comparison]:
        """Controls that did not come out as noise."""
        return [c for c in self.comparisons if c.control and not c.cpu.noise]

    @property
    def disturbed(self) -> bool:
        return bool(self.disturbance)

    @property
    def failures(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.equivalence.ok]

    @property
    def exit_code(self) -> Exit:
        return Exit.FAILED if self.failures else Exit.OK


def default_pairs(arms: list[Arm]) -> list[Pair]:
    """Every other arm against the first."""
    return [Pair(arms[0].name, arm.name) for arm in arms[1:]]


def run_bench(
    arms: list[Arm],
    workloads: list[str] | None = None,
    *,
    cache_dir: Path,
    pairs: list[Pair] | None = None,
    rounds: int | None = None,
    quick: bool = False,
    settings: Settings | None = None,
    progress: Progress | None = None,
) -> BenchReport:
    """Measure ``arms`` on ``workloads`` (all when None; a tiny set when quick)."""
    started = time.monotonic()
    settings = settings or (Settings.quick() if quick else Settings())
    if rounds is not None:
        settings = replace(settings, rounds=rounds)
    names = check_workloads(list(workloads or (QUICK if quick else [])))
    pairs = default_pairs(arms) if pairs is None else pairs
    check_arms(arms, pairs)
    say = progress or (lambda _: None)
    env_key = key(settings)
    store = Store(cache_dir, "bench", env_key)
    ids, leads = by_tree(arms)
    load_before = os.getloadavg()
    found = _cached(leads, names, store)
    todo = {t: [w for w in names if (t, w) not in found] for t in leads}
    todo = {t: missing for t, missing in todo.items() if missing}
    where = {t: s.where for (t, _), s in found.items()}
    if todo:
        say(f"measuring {len(todo)} trees; {len(leads) - len(todo)} taken whole from the cache")
        session = measure(
            [leads[t] for t in todo],
            {leads[t].name: missing for t, missing in todo.items()},
            names,
            settings,
            cache_dir / "bench" / "work",
            lambda arm, w: store.path(ids[arm], w, ".npz"),
            say,
        )
        for (arm_name, workload), result in session.results.items():
            tree = ids[arm_name]
            entry = {
                "cpu": result.cpu,
                "wall": result.wall,
                "calls": result.calls,
                "session": session.id,
                "where": session.where[arm_name],
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            store.put(tree, workload, entry)
            found[(tree, workload)] = _samples(entry, store, tree, workload)
            where[tree] = session.where[arm_name]
    report = BenchReport(
        arms=[
            ArmResult(
                arm,
                ids[arm.name],
                where.get(ids[arm.name], ""),
                measured=todo.get(ids[arm.name], []),
                cached=[w for w in names if w not in todo.get(ids[arm.name], [])],
            )
            for arm in arms
        ],
        workloads=names,
        pairs=pairs,
        settings=settings,
        samples={(arm.name, w): found[(ids[arm.name], w)] for arm in arms for w in names},
        load_before=load_before,
        key=env_key,
    )
    controls = len(pairs) * sum(1 for w in names if WORKLOADS[w].control)
    report.comparisons = [_compare(report, pair, w, controls) for pair in pairs for w in names]
    report.floors = _floors(report)
    report.load_after = os.getloadavg()
    report.disturbance = disturbance.reasons(
        {f"{leads[t].name} {w}": disturbance.Timings(s.cpu, s.wall) for (t, w), s in found.items()},
        [f"{c.workload} in {c.pair.title} ({c.cpu.median:.3f}x)" for c in report.moved_controls],
        report.load_before,
        report.load_after,
        busy_limit(),
    )
    report.seconds = time.monotonic() - started
    return report


def _samples(entry: dict[str, Any], store: Store, tree: str, workload: str) -> Samples:
    return Samples(
        cpu=[float(v) for v in entry["cpu"]],
        wall=[float(v) for v in entry["wall"]],
        calls=int(entry["calls"]),
        session=str(entry["session"]),
        outputs=store.path(tree, workload, ".npz"),
        where=str(entry.get("where", "")),
    )


def _cached(
    leads: dict[str, Arm], names: list[str], store: Store
) -> dict[tuple[str, str], Samples]:
    """What the cache holds, by (tree id, workload)."""
    found: dict[tuple[str, str], Samples] = {}
    for tree in leads:
        for workload in names:
            entry = store.get(tree, workload)
            if entry is None or not store.path(tree, workload, ".npz").is_file():
                continue
            found[(tree, workload)] = _samples(entry, store, tree, workload)
    return found


def _compare(report: BenchReport, pair: Pair, workload: str, controls: int) -> Comparison:
    base = report.samples[(pair.baseline, workload)]
    cand = report.samples[(pair.candidate, workload)]
    paired = base.session == cand.session
    settings = report.settings
    control = WORKLOADS[workload].control
    level = 1 - 0.05 / max(controls, 1) if control else 0.95
    # Wide intervals reach far into the tails: give them enough resamples.
    resamples = max(settings.bootstrap, int(20 / (1 - level))) if control else settings.bootstrap
    ratios = [
        stats.ratio(b, c, paired=paired, resamples=resamples, seed=settings.seed, level=level)
        for b, c in ((base.cpu, cand.cpu), (base.wall, cand.wall))
    ]
    equivalence = compare(base.outputs, cand.outputs, exact=WORKLOADS[workload].exact_ids)
    return Comparison(pair, workload, ratios[0], ratios[1], equivalence)


def _floors(report: BenchReport) -> list[Floor]:
    floors = []
    for arm in report.arms:
        for workload in report.workloads:
            floor = WORKLOADS[workload].floor
            if floor is None or floor not in report.workloads:
                continue
            keras = report.samples[(arm.arm.name, workload)]
            torch = report.samples[(arm.arm.name, floor)]
            same = None
            if WORKLOADS[floor].twin_of == workload:
                exact = WORKLOADS[workload].exact_ids
                same = compare(keras.outputs, torch.outputs, exact=exact)
            ratio = stats.median(keras.cpu) / stats.median(torch.cpu)
            floors.append(Floor(arm.arm.name, workload, floor, ratio, same))
    return floors

"""``run_bench``: measure arms, reuse what the cache holds, compare pairs.

The caller (``series bench``) builds the trees and says which pairs to
compare; this owns the method: which (arm, workload) results the cache
already holds, measuring the rest side by side (``measure.py``), the ratios
(``stats.py``), the equivalence of outputs (``equivalence.py``) and the
verdicts. Arms whose trees are identical are measured once.

A run is *disturbed* when a control (raw torch, the same code in every
arm) does not come out as noise in some comparison: then the machine, not
the code, moved the numbers, and the other ratios of that comparison are
suspect. A full run has dozens of control comparisons, and at 95% one in
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
from series.runs.bench import stats
from series.runs.bench.cache import Store, key, tree_id
from series.runs.bench.equivalence import Equivalence, compare
from series.runs.bench.measure import Progress, measure
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

    @property
    def disturbed(self) -> list[Comparison]:
        """Controls that did not come out as noise."""
        return [c for c in self.comparisons if c.control and not c.cpu.noise]

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
    ids = {arm.name: tree_id(arm.tree, arm.package) for arm in arms}
    load_before = os.getloadavg()
    samples, where = _cached(arms, ids, names, store)
    todo = _todo(arms, ids, names, samples)
    if todo:
        lead = [arm for arm in arms if arm.name in todo]
        whole = sum(1 for arm in arms if all((arm.name, w) in samples for w in names))
        say(f"measuring {len(lead)} trees; {whole} arms taken whole from the cache")
        session = measure(
            lead,
            todo,
            names,
            settings,
            cache_dir / "bench" / "work",
            lambda arm, w: store.path(ids[arm], w, ".npz"),
            say,
        )
        where.update(session.where)
        for (arm_name, workload), result in session.results.items():
            entry = {
                "cpu": result.cpu,
                "wall": result.wall,
                "calls": result.calls,
                "session": session.id,
                "where": session.where[arm_name],
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            store.put(ids[arm_name], workload, entry)
            for arm in arms:  # every arm with this tree shares the result
                if ids[arm.name] == ids[arm_name]:
                    samples[(arm.name, workload)] = _samples(entry, store, ids[arm_name], workload)
                    where.setdefault(arm.name, session.where[arm_name])
    report = BenchReport(
        arms=[_arm_result(arm, ids, where, todo, names) for arm in arms],
        workloads=names,
        pairs=pairs,
        settings=settings,
        samples=samples,
        load_before=load_before,
        key=env_key,
    )
    controls = len(pairs) * sum(1 for w in names if WORKLOADS[w].control)
    report.comparisons = [_compare(report, pair, w, controls) for pair in pairs for w in names]
    report.floors = _floors(report)
    report.load_after = os.getloadavg()
    report.seconds = time.monotonic() - started
    return report


def _samples(entry: dict[str, Any], store: Store, tree: str, workload: str) -> Samples:
    return Samples(
        cpu=[float(v) for v in entry["cpu"]],
        wall=[float(v) for v in entry["wall"]],
        calls=int(entry["calls"]),
        session=str(entry["session"]),
        outputs=store.path(tree, workload, ".npz"),
    )


def _cached(
    arms: list[Arm], ids: dict[str, str], names: list[str], store: Store
) -> tuple[dict[tuple[str, str], Samples], dict[str, str]]:
    samples: dict[tuple[str, str], Samples] = {}
    where: dict[str, str] = {}
    for arm in arms:
        for workload in names:
            entry = store.get(ids[arm.name], workload)
            if entry is None or not store.path(ids[arm.name], workload, ".npz").is_file():
                continue
            samples[(arm.name, workload)] = _samples(entry, store, ids[arm.name], workload)
            where[arm.name] = str(entry.get("where", ""))
    return samples, where


def _todo(
    arms: list[Arm], ids: dict[str, str], names: list[str], samples: dict[tuple[str, str], Samples]
) -> dict[str, list[str]]:
    """Workloads to measure, per arm; one arm stands for all arms with its tree."""
    todo: dict[str, list[str]] = {}
    seen: set[str] = set()
    for arm in arms:
        if ids[arm.name] in seen:
            continue
        seen.add(ids[arm.name])
        missing = [w for w in names if (arm.name, w) not in samples]
        if missing:
            todo[arm.name] = missing
    return todo


def _arm_result(
    arm: Arm,
    ids: dict[str, str],
    where: dict[str, str],
    todo: dict[str, list[str]],
    names: list[str],
) -> ArmResult:
    measured = [
        w
        for w in names
        if any(ids[other] == ids[arm.name] and w in ws for other, ws in todo.items())
    ]
    cached = [w for w in names if w not in measured]
    return ArmResult(arm, ids[arm.name], where.get(arm.name, ""), measured, cached)


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
            keras = stats.median(report.samples[(arm.arm.name, workload)].cpu)
            torch = stats.median(report.samples[(arm.arm.name, floor)].cpu)
            floors.append(Floor(arm.arm.name, workload, floor, keras / torch))
    return floors

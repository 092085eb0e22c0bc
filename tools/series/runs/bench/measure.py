"""Measure arms side by side: warm-up, calibration, interleaved rounds.

Given the arms that need measuring (one per distinct tree: bench.py picks
them) and, for each, the workloads it lacks, this starts one worker per
arm, gives every worker the same inputs and weights, collects the outputs
(for the equivalence check) and times the workloads in rounds. Within a
round every arm runs every workload it needs, one workload at a time across
all arms, in an arm order drawn per round from a seeded generator, so slow
drifts of the machine hit every arm alike and the rounds of two arms can be
paired.

Calls per sample are calibrated once per workload on the first arm, so that
a sample lasts about ``Settings.sample_ms``; every arm then uses the same
count (a slower arm just takes longer). A call longer than a sample is one
call per sample, and a workload that says so (``Workload.rounds``: upstream's
LLM generate, about a second a call) is timed in its first N rounds only,
without the warm-up round (building it already ran it once in every arm):
its samples are some 60 times the target, and timing it in all 15 rounds
of every arm would add ten minutes to a full run for one workload.

Every stage says so through ``progress`` (workers started k/n, each
workload built, calibrated, each round of each workload), so a long run
is never silent.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from series import json_text
from series.runs.bench import data
from series.runs.bench.cache import method_digest
from series.runs.bench.pool import Handle, waves, workers
from series.runs.bench.spec import WORKLOADS, Arm, Settings

Progress = Callable[[str], None]


@dataclass
class Measured:
    cpu: list[float] = field(default_factory=list)  # ns per call, one per round
    wall: list[float] = field(default_factory=list)
    calls: int = 0


@dataclass
class Session:
    id: str
    where: dict[str, str]  # arm -> directory its package was imported from
    results: dict[tuple[str, str], Measured]  # (arm, workload) -> samples


def data_file(data_dir: Path, workload: str, first: Handle) -> Path:
    """The workload's inputs and weights, made once (weights need the variable shapes)."""
    arrays = data.inputs(workload)
    probe = data.write(data_dir / f"{workload}-inputs-{method_digest()}.npz", arrays)
    shapes = [
        tuple(s)
        for s in first.request(
            "shapes", f"building {workload}", workload=workload, data=str(probe)
        )["shapes"]
    ]
    blob = json_text.dumps([workload, shapes, method_digest()]).encode()
    path = data_dir / f"{workload}-{hashlib.sha256(blob).hexdigest()[:16]}.npz"
    if not path.exists():
        data.write(path, {**arrays, **data.weights(workload, shapes)})
    return path


def build_all(
    handles: list[Handle],
    todo: dict[str, list[str]],
    workloads: list[str],
    data_dir: Path,
    outputs: Callable[[str, str], Path],
    progress: Progress,
) -> None:
    """Build every workload in the workers that need it, in waves (pool.waves)."""
    for number, workload in enumerate(workloads, 1):
        needing = [h for h in handles if workload in todo[h.arm.name]]
        if not needing:
            continue
        progress(f"building {workload} ({number}/{len(workloads)}) in {len(needing)} workers")
        path = data_file(data_dir, workload, needing[0])
        for wave in waves(needing):
            for handle in wave:
                out = outputs(handle.arm.name, workload)
                out.parent.mkdir(parents=True, exist_ok=True)
                handle.send("build", workload=workload, data=str(path), out=str(out))
            for handle in wave:
                handle.receive(f"building {workload} with the shared weights")


def calibrate(handle: Handle, workload: str, settings: Settings) -> int:
    """Calls per sample so that a sample lasts about ``sample_ms`` of CPU time.

    CPU time, not wall time: on a loaded machine the wall clock of one call
    includes other processes' turns, and a sample of one call measures
    mostly cold caches. The smallest of three estimates wins (more calls).
    """
    target = settings.sample_ms * 1e6
    calls, estimates = 1, list[float]()
    while len(estimates) < 3:
        per_call: float = handle.request(
            "time", f"timing {workload}", workload=workload, calls=calls
        )["cpu"]
        per_call = max(per_call, 1.0)
        if calls == 1 and per_call >= 2 * target:
            return 1  # one call is two samples' worth: no estimate makes it fewer
        if per_call * calls >= target / 4 or calls >= settings.max_calls:
            estimates.append(per_call)
        else:
            calls = min(calls * 4, settings.max_calls)
    return max(1, min(settings.max_calls, math.ceil(target / min(estimates))))


def timed_in(workload: str, number: int, settings: Settings) -> bool:
    """Whether round ``number`` (0-based, warm-up rounds first) times ``workload``."""
    cap = WORKLOADS[workload].rounds
    if cap is None:
        return True
    timed = number - settings.warmup_rounds
    return 0 <= timed < cap


def _round(
    handles: list[Handle],
    todo: dict[str, list[str]],
    workloads: list[str],
    calls: dict[str, int],
    order: list[int],
    session: Session | None,
    say: Progress,
) -> None:
    for workload in workloads:
        say(workload)
        for index in order:
            handle = handles[index]
            if workload not in todo[handle.arm.name]:
                continue
            sample = handle.request(
                "time", f"timing {workload}", workload=workload, calls=calls[workload]
            )
            if session is not None:
                measured = session.results[(handle.arm.name, workload)]
                measured.cpu.append(sample["cpu"])
                measured.wall.append(sample["wall"])


def measure(
    arms: list[Arm],
    todo: dict[str, list[str]],
    workloads: list[str],
    settings: Settings,
    work_dir: Path,
    outputs: Callable[[str, str], Path],
    progress: Progress,
) -> Session:
    """Time ``todo[arm]`` for every arm; outputs go where ``outputs(arm, workload)`` says."""
    session = Session(uuid.uuid4().hex[:12], {}, {})
    progress(f"starting {len(arms)} workers")
    with workers(
        arms, work_dir / "logs", work_dir / "keras-home", settings.device, progress
    ) as handles:
        session.where = {h.arm.name: h.hello["where"] for h in handles}
        build_all(handles, todo, workloads, work_dir / "data", outputs, progress)
        rss = [mb for mb in (h.rss_mb() for h in handles) if mb is not None]
        if rss:
            progress(f"workers built: {max(rss):.0f} MB each at most, {sum(rss) / 1024:.1f} GB")
        calls: dict[str, int] = {}
        for workload in workloads:
            first = next((h for h in handles if workload in todo[h.arm.name]), None)
            if first is None:
                continue
            progress(f"calibrating {workload}")
            calls[workload] = calibrate(first, workload, settings)
            for handle in handles:
                if workload in todo[handle.arm.name]:
                    session.results[(handle.arm.name, workload)] = Measured(calls=calls[workload])
        rng = np.random.Generator(np.random.PCG64(settings.seed))
        total = settings.warmup_rounds + settings.rounds
        for number in range(total):
            warm = number < settings.warmup_rounds
            order = [int(i) for i in rng.permutation(len(handles))]
            label: str = (
                "warm-up"
                if warm
                else f"round {number - settings.warmup_rounds + 1}/{settings.rounds}"
            )
            _round(
                handles,
                todo,
                [w for w in workloads if w in calls and timed_in(w, number, settings)],
                calls,
                order,
                None if warm else session,
                lambda workload: progress(f"{label}: {workload}"),  # noqa: B023
            )
    return session

"""Whether a bench run was disturbed, judged from its own measurements.

A number is only worth its conditions, and the conditions are read from
the samples themselves, not assumed:

* **controls**: raw torch workloads run identical code in every arm, so
  their ratios must be noise (the caller passes the ones that were not);
* **waiting**: a sample's wall time over its CPU time. The worker runs one
  thread, so on a free core the two agree; wall well above CPU means the
  process sat ready while something else had the core;
* **spread**: the interquartile range of a workload's rounds over their
  median. Identical calls repeated on a quiet core vary by a few percent;
  more means the caches and the clock were shared;
* **load**: the 1-minute load average before the run, and after it less
  the one worker the run itself keeps busy, against the cores.

Each test that trips adds a reason, in words a person can act on; the run
is disturbed when there is any. It is a pure function of the numbers, so
the tests feed it recorded samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

WAIT_LIMIT = 1.25  # median wall / CPU of one (arm, workload) beyond which it waited
SPREAD_LIMIT = 0.10  # median relative IQR over all (arm, workload) sets


@dataclass(frozen=True)
class Timings:
    cpu: Sequence[float]
    wall: Sequence[float]


def waiting(samples: Mapping[str, Timings]) -> str | None:
    worst, label = 0.0, ""
    for name, timing in samples.items():
        cpu = np.asarray(timing.cpu, dtype=np.float64)
        wall = np.asarray(timing.wall, dtype=np.float64)
        if cpu.size == 0 or cpu.size != wall.size or np.any(cpu <= 0):
            continue
        value = float(np.median(wall / cpu))
        if value > worst:
            worst, label = value, name
    if worst <= WAIT_LIMIT:
        return None
    return (
        f"wall time was {worst:.2f}x the CPU time ({label}, median of its rounds): "
        "the worker waited for a CPU that other processes held"
    )


def spread(samples: Mapping[str, Timings]) -> str | None:
    relative: dict[str, float] = {}
    for name, timing in samples.items():
        cpu = np.asarray(timing.cpu, dtype=np.float64)
        if cpu.size < 3:
            continue
        q25, q50, q75 = np.percentile(cpu, [25, 50, 75])
        if q50 > 0:
            relative[name] = float((q75 - q25) / q50)
    if not relative:
        return None
    typical = float(np.median(list(relative.values())))
    if typical <= SPREAD_LIMIT:
        return None
    worst = max(relative, key=relative.__getitem__)
    return (
        f"rounds spread by {typical:.0%} of their median (IQR, typical workload; "
        f"{worst}: {relative[worst]:.0%}): repeated identical calls should agree within a few %"
    )


def load(
    before: tuple[float, float, float], after: tuple[float, float, float], cores: int
) -> str | None:
    # After the run the 1-minute average still counts the worker it kept busy.
    seen = max(before[0], after[0] - 1)
    if seen <= cores:
        return None
    return (
        f"load average {before[0]:.1f} before and {after[0]:.1f} after on {cores} cores: "
        "other processes wanted the CPU"
    )


def reasons(
    samples: Mapping[str, Timings],
    moved_controls: Sequence[str],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    cores: int,
) -> list[str]:
    """Why the run was disturbed (empty: nothing in the numbers says it was)."""
    found = [f"control {name} was not noise" for name in moved_controls]
    for check in (waiting(samples), spread(samples), load(load_before, load_after, cores)):
        if check is not None:
            found.append(check)
    return found

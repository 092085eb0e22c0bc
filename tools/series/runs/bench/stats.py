"""Ratios of timings, with their spread and a bootstrap interval (numpy only).

A ratio is ``baseline / candidate``: above 1 the candidate is faster.

* Paired (both arms timed in the same run): round ``i`` of one arm ran next
  to round ``i`` of the other, so the ratio is taken per round; the median
  and interquartile range are those of the per-round ratios, and the 95%
  interval is a percentile bootstrap of the median over rounds.
* Unpaired (one side came from the cache, timed in another run): the
  ratio of the medians, the interquartile range of all cross ratios, and a
  bootstrap that resamples each side on its own.

"noise" means the interval contains 1.0. The bootstrap is seeded, so the
same samples always give the same interval. ``level`` is 0.95 unless the
caller widens it (the controls do: many at once, see bench.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Ratio:
    median: float
    q25: float
    q75: float
    low: float  # bootstrap interval of the median, at ``level``
    high: float
    paired: bool
    level: float = 0.95

    @property
    def noise(self) -> bool:
        return self.low <= 1.0 <= self.high

    @property
    def verdict(self) -> str:
        if self.noise:
            return "noise"
        return "faster" if self.median > 1.0 else "slower"

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "noise": self.noise, "verdict": self.verdict}


def ratio(
    baseline: list[float],
    candidate: list[float],
    *,
    paired: bool,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> Ratio:
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.size == 0 or cand.size == 0:
        raise ValueError("no samples to compare")
    rng = np.random.Generator(np.random.PCG64(seed))
    if paired and base.size == cand.size:
        per_round = base / cand
        idx = rng.integers(0, per_round.size, (resamples, per_round.size))
        boot = np.median(per_round[idx], axis=1)
        median = float(np.median(per_round))
        q25, q75 = np.percentile(per_round, [25, 75])
    else:
        paired = False
        ib = rng.integers(0, base.size, (resamples, base.size))
        ic = rng.integers(0, cand.size, (resamples, cand.size))
        boot = np.median(base[ib], axis=1) / np.median(cand[ic], axis=1)
        median = float(np.median(base) / np.median(cand))
        q25, q75 = np.percentile(np.divide.outer(base, cand), [25, 75])
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return Ratio(median, float(q25), float(q75), float(low), float(high), paired, level)


def median(values: list[float]) -> float:
    return float(np.median(np.asarray(values, dtype=np.float64)))

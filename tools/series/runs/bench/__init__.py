"""Benchmarks of trees side by side (``series bench``) and their torch.compile scorecard.

The public API, for the command modules to call:

* ``run_bench(arms, workloads, cache_dir=..., pairs=..., rounds=..., quick=...)``
  -> ``BenchReport``; ``render_table``, ``render_floors``, ``render_times``,
  ``summary_lines``, ``report_json``, ``write_chart``;
* ``run_profile(arm, workload, cache_dir=...)`` -> ``Profile``;
  ``render_profile``, ``profile_json``;
* ``run_scorecard(states, models, cache_dir=...)`` -> ``ScorecardReport``;
  ``render_scorecard``, ``scorecard_json``.

Method, cache key and outputs: docs/bench.md. The worker side
(``worker.py``, ``workloads.py``, ``explain.py``) runs in child processes
that import the tree under measurement; nothing here imports Keras.
"""

from __future__ import annotations

from series.runs.bench.bench import BenchReport, Comparison, default_pairs, run_bench
from series.runs.bench.profile import Profile, profile_json, render_profile, run_profile
from series.runs.bench.render import (
    render_floors,
    render_table,
    render_times,
    report_json,
    summary_lines,
    write_chart,
)
from series.runs.bench.scorecard import (
    ScorecardReport,
    render_scorecard,
    run_scorecard,
    scorecard_json,
)
from series.runs.bench.spec import CONTROLS, MODELS, QUICK, WORKLOADS, Arm, Pair, Settings

__all__ = [
    "CONTROLS",
    "MODELS",
    "QUICK",
    "WORKLOADS",
    "Arm",
    "BenchReport",
    "Comparison",
    "Pair",
    "Profile",
    "ScorecardReport",
    "Settings",
    "default_pairs",
    "profile_json",
    "render_floors",
    "render_profile",
    "render_scorecard",
    "render_table",
    "render_times",
    "report_json",
    "run_bench",
    "run_profile",
    "run_scorecard",
    "scorecard_json",
    "summary_lines",
    "write_chart",
]

"""A disturbed bench run is told from its own numbers (series.runs.bench.disturbance).

Recorded samples are fed to the detector, and one set is made disturbed by
construction: a busy loop pinned to the same CPU as the process measuring,
so that the measuring process must wait for its turns. Nothing here
asserts how fast anything ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from series.runs.bench.disturbance import Timings, reasons

QUIET = (0.0, 0.0, 0.0)
# 15 rounds of a ~12 ms sample on a free core: wall follows CPU, IQR ~1%.
CALM_CPU = [12.0e6 + 1e4 * i for i in range(15)]
CALM = Timings(CALM_CPU, [c * 1.01 for c in CALM_CPU])


def test_calm_samples_on_a_quiet_machine_are_not_disturbed() -> None:
    assert reasons({"pin dense": CALM, "stack dense": CALM}, [], QUIET, (1.0, 0.5, 0.2), 2) == []


def test_each_kind_of_disturbance_is_named() -> None:
    waited = Timings(CALM_CPU, [c * 1.9 for c in CALM_CPU])
    spread_cpu = [12e6 * (1 + 0.03 * (i % 10)) for i in range(15)]
    spread = Timings(spread_cpu, spread_cpu)
    got = {
        "waited": reasons({"pin dense": CALM, "stack dense": waited}, [], QUIET, QUIET, 2),
        "spread": reasons({"pin dense": spread, "stack dense": spread}, [], QUIET, QUIET, 2),
        "load": reasons({"pin dense": CALM}, [], (21.0, 20.0, 18.0), (33.0, 25.0, 20.0), 2),
        "control": reasons({"pin dense": CALM}, ["torch_linear in x vs pin"], QUIET, QUIET, 2),
    }
    assert [len(found) for found in got.values()] == [1, 1, 1, 1]
    assert got["waited"][0].startswith("wall time was 1.90x the CPU time (stack dense")
    assert got["spread"][0].startswith("rounds spread by")
    assert got["load"][0].startswith("load average 21.0 before and 33.0 after on 2 cores")
    assert got["control"] == ["control torch_linear in x vs pin was not noise"]


MEASURE = """
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
samples = []
for _ in range(9):
    cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
    while time.thread_time_ns() - cpu0 < 20_000_000:
        pass
    wall1, cpu1 = time.perf_counter_ns(), time.thread_time_ns()
    samples.append((cpu1 - cpu0, wall1 - wall0))
print(json.dumps(samples))
"""
COMPETE = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
print("ready", flush=True)
while True:
    pass
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_busy_loop_on_the_same_cpu_makes_the_samples_disturbed() -> None:
    """Sampled like the worker samples, beside a competitor pinned to the same CPU."""
    cpu = min(os.sched_getaffinity(0))
    rival = subprocess.Popen(
        [sys.executable, "-c", COMPETE, str(cpu)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert rival.stdout is not None and rival.stdout.readline() == "ready\n"
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(cpu)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        rival.kill()
        rival.wait()
        if rival.stdout is not None:
            rival.stdout.close()
    pairs = json.loads(out)
    timings = Timings([c for c, _ in pairs], [w for _, w in pairs])
    found = reasons({"pinned loop": timings}, [], QUIET, QUIET, 2)
    assert any(r.startswith("wall time was") and "(pinned loop" in r for r in found), found

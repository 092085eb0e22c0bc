"""Where the time of one workload goes: cProfile in the worker of one arm.

``run_profile`` starts a worker for the arm, builds the workload with the
shared weights, runs it under ``cProfile`` for ``calls`` calls and returns
the frames with the largest cumulative time, per call. Paths are shown
relative to the arm's tree (Keras code) or to site-packages (torch), so the
stack's and the pin's profiles line up. cProfile adds its own overhead to
every Python call, so the absolute numbers are high; compare shares.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from series.runs.bench.measure import build_all
from series.runs.bench.pool import workers
from series.runs.bench.spec import WORKLOADS, Arm, check_workloads

# Calls profiled of a workload timed in few rounds (upstream's LLM generate).
HEAVY_CALLS = 5


@dataclass(frozen=True)
class Frame:
    where: str  # path:line, relative to the tree or to site-packages
    function: str
    calls: float  # per profiled call
    self_us: float  # time in the function itself, per profiled call
    cumulative_us: float  # including what it calls


@dataclass(frozen=True)
class Profile:
    arm: str
    workload: str
    calls: int
    frames: list[Frame]


def _where(file: str, line: int, tree: Path) -> str:
    path = Path(file)
    if path.is_absolute() and path.is_relative_to(tree):
        return f"{path.relative_to(tree)}:{line}"
    if "site-packages" in path.parts:
        parts = path.parts[path.parts.index("site-packages") + 1 :]
        return f"{Path(*parts)}:{line}"
    return f"{path.name}:{line}" if line else file


def run_profile(
    arm: Arm,
    workload: str,
    *,
    cache_dir: Path,
    calls: int = 200,
    top: int = 25,
    device: str = "cpu",
) -> Profile:
    check_workloads([workload])
    if WORKLOADS[workload].rounds is not None:
        calls = min(calls, HEAVY_CALLS)  # a second a call: 200 would take minutes
    work = cache_dir / "bench" / "work"
    with workers([arm], work / "logs", work / "keras-home", device) as (handle,):
        out = work / "profile" / f"{workload}.npz"
        out.parent.mkdir(parents=True, exist_ok=True)
        build_all(
            [handle],
            {arm.name: [workload]},
            [workload],
            work / "data",
            lambda a, w: out,
            lambda _: None,
        )
        handle.request(
            "time", f"warming up {workload}", workload=workload, calls=max(calls // 10, 1)
        )
        reply = handle.request(
            "profile", f"profiling {workload}", workload=workload, calls=calls, top=top
        )
    tree = arm.tree.resolve()
    frames = [
        Frame(_where(file, line, tree), func, ncalls / calls, tottime * 1e6, cumtime * 1e6)
        for file, line, func, ncalls, tottime, cumtime in reply["frames"]
    ]
    return Profile(arm.name, workload, calls, frames)


def render_profile(profile: Profile) -> Table:
    table = Table(title=f"{profile.workload} on {profile.arm}: top frames per call")
    for name in ("cumulative", "self", "calls", "function", "where"):
        table.add_column(
            name, justify="right" if name in ("cumulative", "self", "calls") else "left"
        )
    for frame in profile.frames:
        table.add_row(
            f"{frame.cumulative_us:.1f} us",
            f"{frame.self_us:.1f} us",
            f"{frame.calls:g}",
            frame.function,
            frame.where,
        )
    return table


def profile_json(profile: Profile) -> dict[str, Any]:
    return {
        "arm": profile.arm,
        "workload": profile.workload,
        "calls": profile.calls,
        "frames": [asdict(f) for f in profile.frames],
    }

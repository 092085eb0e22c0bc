"""``run_scorecard``: what each stack state does under torch.compile.

For each state (the pin, then patches 1..k, as the caller orders them) and
each model, a worker traces the model with dynamo (``explain.py``) and
reports graphs, graph breaks, their reasons and recompiles. Each state is
compared with the one before it: a state that adds graph breaks, recompiles,
or compiles again on a repeated call is flagged. Results are cached per
tree and model (same key as the bench, minus the timing settings; states
with one tree are traced once, ``cache.by_tree``), and up to ``jobs``
states are traced at once.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from series.errors import Exit, UsageError
from series.runs.bench.cache import Store, by_tree, key
from series.runs.bench.measure import Progress, build_all
from series.runs.bench.pool import broadcast, workers
from series.runs.bench.spec import MODELS, Arm, check_arms


@dataclass(frozen=True)
class Trace:
    graphs: int
    breaks: int
    ops: int
    reasons: list[tuple[str, str]]  # (reason, innermost frame in the tree)
    recompiles: list[tuple[str, str]]  # (guard that failed, function)
    compiles_on_repeat: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trace:
        return cls(
            graphs=int(data["graphs"]),
            breaks=int(data["breaks"]),
            ops=int(data["ops"]),
            reasons=[(str(a), str(b)) for a, b in data["reasons"]],
            recompiles=[(str(a), str(b)) for a, b in data["recompiles"]],
            compiles_on_repeat=int(data["compiles_on_repeat"]),
        )


@dataclass(frozen=True)
class StateResult:
    state: str
    model: str
    tree_id: str
    trace: Trace
    cached: bool
    previous: Trace | None  # the state before, for the delta

    @property
    def delta_breaks(self) -> int:
        return self.trace.breaks - self.previous.breaks if self.previous else 0

    @property
    def delta_recompiles(self) -> int:
        return len(self.trace.recompiles) - len(self.previous.recompiles) if self.previous else 0

    @property
    def new_reasons(self) -> list[tuple[str, str]]:
        if self.previous is None:
            return []
        added = Counter(self.trace.reasons) - Counter(self.previous.reasons)
        return sorted(added.elements())

    @property
    def gone_reasons(self) -> list[tuple[str, str]]:
        if self.previous is None:
            return []
        return sorted((Counter(self.previous.reasons) - Counter(self.trace.reasons)).elements())

    @property
    def flagged(self) -> list[str]:
        if self.previous is None:
            return []
        why = []
        if self.delta_breaks > 0:
            why.append(f"+{self.delta_breaks} graph breaks")
        if self.delta_recompiles > 0:
            why.append(f"+{self.delta_recompiles} recompiles")
        if self.trace.compiles_on_repeat > self.previous.compiles_on_repeat:
            why.append("compiles again when called again")
        return why


@dataclass
class ScorecardReport:
    states: list[Arm]
    models: list[str]
    results: list[StateResult] = field(default_factory=list)
    key: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def flagged(self) -> list[StateResult]:
        return [r for r in self.results if r.flagged]

    @property
    def exit_code(self) -> Exit:
        return Exit.FAILED if self.flagged else Exit.OK


def _trace(
    chunk: list[Arm], models: list[str], work: Path, device: str, say: Progress
) -> dict[str, dict[str, Any]]:
    traced: dict[str, dict[str, Any]] = {}
    with workers(chunk, work / "logs", work / "keras-home", device, say) as handles:
        todo = {arm.name: models for arm in chunk}
        out = work / "scorecard-outputs"
        build_all(handles, todo, models, work / "data", lambda a, w: out / f"{a}-{w}.npz", say)
        for model in models:
            say(f"tracing {model} with dynamo in {len(handles)} workers")
            replies = broadcast(handles, "explain", f"tracing {model} with dynamo", workload=model)
            for handle, reply in zip(handles, replies, strict=True):
                traced[f"{handle.arm.name}\0{model}"] = reply
    return traced


def run_scorecard(
    states: list[Arm],
    models: list[str] | None = None,
    *,
    cache_dir: Path,
    jobs: int = 2,
    device: str = "cpu",
    progress: Progress | None = None,
) -> ScorecardReport:
    started = time.monotonic()
    models = list(models or MODELS)
    traceable = (*MODELS, "dense", "layer_call")
    unknown = [m for m in models if m not in traceable]
    if unknown:
        raise UsageError(
            f"cannot trace {', '.join(unknown)}",
            why=f"the scorecard traces {', '.join(traceable)}",
            hint="pick from the list above",
        )
    check_arms(states, [])
    say = progress or (lambda _: None)
    env_key = key(None)
    store = Store(cache_dir, "scorecard", env_key)
    ids, leads = by_tree(states)
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    for tree in leads:
        for model in models:
            entry = store.get(tree, model)
            if entry is not None:
                entries[(tree, model)] = entry
    cached = set(entries)
    pending = [arm for t, arm in leads.items() if any((t, m) not in entries for m in models)]
    work = cache_dir / "scorecard" / "work"
    for start in range(0, len(pending), max(jobs, 1)):
        chunk = pending[start : start + max(jobs, 1)]
        say(f"tracing {', '.join(a.name for a in chunk)} ({start + len(chunk)}/{len(pending)})")
        for name_model, result in _trace(chunk, models, work, device, say).items():
            name, model = name_model.split("\0")
            store.put(ids[name], model, result)
            entries[(ids[name], model)] = result
    report = ScorecardReport(states, models, key=env_key)
    for model in models:
        previous: Trace | None = None
        for state in states:
            trace = Trace.from_json(entries[(ids[state.name], model)])
            cache_hit = (ids[state.name], model) in cached
            report.results.append(
                StateResult(state.name, model, ids[state.name], trace, cache_hit, previous)
            )
            previous = trace
    report.seconds = time.monotonic() - started
    return report


def render_scorecard(report: ScorecardReport) -> Table:
    table = Table(title="torch.compile (dynamo) per stack state")
    for name in (
        "state",
        "model",
        "graphs",
        "breaks",
        "delta",
        "recompiles",
        "flag",
        "new reasons",
    ):
        table.add_column(name, justify="right" if name in ("graphs", "breaks", "delta") else "left")
    for r in report.results:
        new = "; ".join(f"{reason} @ {where}" for reason, where in r.new_reasons)
        table.add_row(
            r.state,
            r.model,
            str(r.trace.graphs),
            str(r.trace.breaks),
            f"{r.delta_breaks:+d}" if r.previous else "",
            str(len(r.gone_reasons)) if r.previous else "",
            str(len(r.trace.recompiles)),
            ", ".join(r.flagged),
            new,
        )
    return table


def scorecard_json(report: ScorecardReport) -> dict[str, Any]:
    return {
        "format": 1,
        "key": report.key,
        "seconds": round(report.seconds, 2),
        "flagged": bool(report.flagged),
        "results": [
            {
                "state": r.state,
                "model": r.model,
                "tree_id": r.tree_id,
                "cached": r.cached,
                "graphs": r.trace.graphs,
                "breaks": r.trace.breaks,
                "ops": r.trace.ops,
                "reasons": [list(x) for x in r.trace.reasons],
                "recompiles": [list(x) for x in r.trace.recompiles],
                "compiles_on_repeat": r.trace.compiles_on_repeat,
                "delta_breaks": r.delta_breaks,
                "delta_recompiles": r.delta_recompiles,
                "new_reasons": [list(x) for x in r.new_reasons],
                "gone_reasons": [list(x) for x in r.gone_reasons],
                "flagged": r.flagged,
            }
            for r in report.results
        ],
    }

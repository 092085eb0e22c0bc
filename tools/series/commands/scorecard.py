"""``series scorecard``: graphs, graph breaks and recompiles under torch.compile, per state.

The work is in series.runs.bench.scorecard (docs/bench.md, "Scorecard").
"""

from __future__ import annotations

from series.errors import Exit
from series.project import Series
from series.runs.bench import render_scorecard, run_scorecard, scorecard_json
from series.runs.bench.arms import plan
from series.ui import Ui


def run(
    series: Series,
    ui: Ui,
    *,
    ids: list[str] | None = None,
    as_json: bool = False,
    jobs: int = 2,
    device: str = "cpu",
) -> Exit:
    arms = plan(series, ui, ids, alone=False)
    for line in arms.skipped:
        ui.status(f"note: {line}")
    names = {n for pair in arms.pairs for n in (pair.baseline, pair.candidate)}
    states = [s for s in arms.states if not ids or s.name in names]
    report = run_scorecard(
        states, cache_dir=series.cache_dir / "bench", jobs=jobs, device=device,
        progress=ui.status,
    )  # fmt: skip
    if as_json:
        ui.json(scorecard_json(report))
    else:
        ui.table(render_scorecard(report))
    return Exit(int(report.exit_code))

"""``series scorecard``: graphs, graph breaks and recompiles under torch.compile, per state.

The work is in series.runs.bench.scorecard (docs/bench.md, "Scorecard").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.commands.options import DEVICE, JSON, Option, patch_ids
from series.errors import Exit

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = (
    "For each stack state (the pin, then patches 1..k): graphs, graph breaks, break "
    "reasons and recompiles of the small LM and CNN under torch.compile. exit status: "
    "0 no state adds breaks or recompiles; 1 one does (flagged); 2 bad input. "
    "Manual: docs/bench.md."
)
OPTIONS = (
    patch_ids("score"),
    Option(
        ("-j", "--jobs"),
        "states traced at the same time (default: 2)",
        type=int,
        default=2,
        metavar="N",
    ),
    DEVICE,
    JSON,
)


def run(
    series: Series,
    ui: Ui,
    *,
    ids: list[str] | None = None,
    as_json: bool = False,
    jobs: int = 2,
    device: str = "cpu",
) -> Exit:
    from series.runs.bench import render_scorecard, run_scorecard, scorecard_json
    from series.runs.bench.arms import plan
    from series.unchanged import one_state

    with one_state(series, "scorecard"):  # it takes no lock: nothing reported of a mix
        arms = plan(series, ui, ids, alone=False)
        names = {n for pair in arms.pairs for n in (pair.baseline, pair.candidate)}
        states = [s for s in arms.states if not ids or s.name in names]
        report = run_scorecard(
            states, cache_dir=series.cache_dir / "bench", jobs=jobs, device=device,
            progress=ui.status,
        )  # fmt: skip
    for line in arms.skipped:  # of the one state too: not "does not apply" of a mix
        ui.status(f"note: {line}")
    if as_json:
        ui.json(scorecard_json(report))
    else:
        ui.table(render_scorecard(report))
    return Exit(int(report.exit_code))

"""``series prove``: does each patch's test fail without its production change?

The work is in series.runs.prove (trees, selection, classes) and
series.runs.prove_report; the runs go through series.runs.schedule like
``series test``. See docs/prove.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.commands.options import JOBS, NO_CACHE, Option, patch_ids
from series.errors import Exit

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = (
    "exit status: 0 every patch has a behavioural test (or is exempt in series.toml); "
    "1 a patch is flagged (no behavioural test, broken tests, no tests) or does not "
    "apply; 2 bad input. Manual: docs/prove.md."
)
OPTIONS = (
    patch_ids("prove"),
    JOBS,
    Option("--json", "print JSON for machines, per test", key="as_json", action="store_true"),
    NO_CACHE,
)


def run(
    series: Series,
    ui: Ui,
    *,
    ids: list[str] | None = None,
    jobs: int | None = None,
    as_json: bool = False,
    use_cache: bool = True,
) -> Exit:
    from series.runs.plan import context, jobs_or_cores
    from series.runs.prove import finish, plan_proofs
    from series.runs.prove_report import emit
    from series.runs.schedule import run_jobs
    from series.unchanged import one_state

    jobs = jobs_or_cores(jobs)
    patches = series.select(ids)
    with one_state(series, "prove"):  # it takes no lock: nothing reported of a mix
        ctx = context(series, ui)
        targets = plan_proofs(ctx, patches)
        planned = [job for target in targets for job in target.jobs]
        what = f"proving {len(targets)} patch(es)"
        results = run_jobs(ctx, ui, planned, jobs, use_cache, what)
        reports = [finish(t, results) for t in targets]
    return emit(ui, reports, (ctx.pin_commit, ctx.pin_tree, ctx.env_id), as_json=as_json)

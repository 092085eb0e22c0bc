"""``series test``: each patch's test subset, compared with the pin, cached, in parallel.

The work is in series.runs: planning (trees, selections, cache keys),
scheduling (slots, xdist), and the report. See docs/testing.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import ENVELOPE, JOBS, NO_CACHE, Option, patch_ids
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (
    patch_ids("test"),
    Option(
        "--mode",
        "stacked: patch k on the pin plus patches 1..k (default); "
        "alone: on the pin plus patch k only",
        default="stacked",
        choices=("stacked", "alone"),
    ),
    JOBS,
    ENVELOPE,
    Option("--junit", "also write JUnit XML for CI", type=Path, metavar="FILE"),
    NO_CACHE,
    Option(
        "--shard",
        "run only the I-th of N shards of the patches (1-based; the same split on "
        "every machine, balanced by recorded durations; docs/testing.md)",
        metavar="I/N",
    ),
    Option(
        "--list",
        "print the plan (patches, shards) and run nothing",
        key="list_only",
        action="store_true",
    ),
)


def run(
    series: Series,
    ui: Ui,
    *,
    ids: list[str] | None = None,
    mode: str = "stacked",
    jobs: int | None = None,
    as_json: bool = False,
    junit: Path | None = None,
    use_cache: bool = True,
    shard: str | None = None,
    list_only: bool = False,
) -> Exit:
    from series.checkout import warn_unexported
    from series.runs.plan import MODES, context, finish, jobs_or_cores, plan
    from series.runs.report import check_junit_path, emit
    from series.runs.schedule import execute
    from series.runs.shard import costs, plan_json, show_plan, split
    from series.runs.shard import parse as parse_shard

    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    jobs = jobs_or_cores(jobs)
    if junit is not None:
        check_junit_path(junit)
    part = parse_shard(shard) if shard is not None else None
    selected = series.select(ids)
    if part is not None or list_only:
        patch_costs = costs(series.cache_dir / "tests", selected)
        shards, by = split(patch_costs, part, mode, series.cache_dir / "tests")
        if list_only:
            numbered = [(series.manifest.index(p.id) + 1, p) for p in selected]
            data = plan_json(numbered, patch_costs, part, mode, (shards, by))
            show_plan(ui, data, as_json=as_json)
            return Exit.OK
        selected = [p for p in selected if part is None or shards[p.id] == part.index]
        ui.status(f"shard {shard}: {len(selected)} patch(es), balanced by {by}")
    warn_unexported(series.checkout(), ui)
    ctx = context(series, ui)
    targets = plan(ctx, selected, mode)
    results = execute(ctx, ui, targets, jobs, use_cache)
    reports = [finish(t, results) for t in targets]
    pin = (ctx.pin_commit, ctx.pin_tree, ctx.env_id)
    return emit(ui, reports, mode, pin, as_json=as_json, junit=junit)

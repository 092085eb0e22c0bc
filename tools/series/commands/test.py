"""``series test``: each patch's test subset, compared with the pin, cached, in parallel.

With ``--broad`` (or ``--suite DIR``): upstream's own tests under whole
directories, on the pin and on the stack (series.runs.broad_run).

The work is in series.runs: planning (trees, selections, cache keys),
scheduling (slots, xdist), and the report. See docs/testing.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import ENVELOPE, JOBS, NO_CACHE, Option, patch_ids
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.manifest import Patch
    from series.project import Series
    from series.runs.shard import Shard
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
    Option(
        "--broad",
        "run upstream's own tests under --suite's directories (default: keras/src/{layers,"
        "models,tree,backend,saving,utils}) on the pin and on the stack (the patches up to "
        "the last ID; with --mode alone, the IDs only); fail on a test that fails only on "
        "the stack",
        action="store_true",
    ),
    Option(
        "--suite",
        "a directory of the checkout for --broad (repeatable; implies --broad)",
        key="suite",
        action="append",
        metavar="DIR",
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
    broad: bool = False,
    suite: list[str] | None = None,
) -> Exit:
    from series.checkout import warn_unexported
    from series.runs.plan import MODES, context, finish, jobs_or_cores, plan
    from series.runs.report import check_junit_path, emit
    from series.runs.schedule import execute
    from series.runs.shard import costs, plan_json, show_plan, split
    from series.runs.shard import parse as parse_shard
    from series.unchanged import one_state

    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    jobs = jobs_or_cores(jobs)
    if junit is not None:
        check_junit_path(junit)
    part = parse_shard(shard) if shard is not None else None
    selected = series.select(ids)
    if broad or suite:
        return _broad(
            series,
            ui,
            ids,
            selected,
            mode,
            jobs,
            suite,
            use_cache,
            part,
            list_only,
            as_json=as_json,
            junit=junit,
        )
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
    with one_state(series, "test"):  # it takes no lock: nothing reported of a mix
        ctx = context(series, ui)
        targets = plan(ctx, selected, mode)
        results = execute(ctx, ui, targets, jobs, use_cache)
        reports = [finish(t, results) for t in targets]
    pin = (ctx.pin_commit, ctx.pin_tree, ctx.env_id)
    return emit(ui, reports, mode, pin, as_json=as_json, junit=junit)


def _broad(
    series: Series,
    ui: Ui,
    ids: list[str] | None,
    selected: list[Patch],
    mode: str,
    jobs: int,
    suite: list[str] | None,
    use_cache: bool,
    part: Shard | None,
    list_only: bool,
    *,
    as_json: bool,
    junit: Path | None,
) -> Exit:
    from series.checkout import warn_unexported
    from series.runs.broad import DEFAULT_DIRS, check_names
    from series.runs.broad_run import Options
    from series.runs.broad_run import run as run_broad
    from series.runs.plan import context

    if junit is not None:
        raise UsageError(
            "--junit is not written for --broad",
            hint="use --json for the broad suite's per-test verdicts, or leave --broad out",
        )
    if mode == "alone" and not ids:
        raise UsageError(
            "--broad --mode alone needs the patches to apply alone on the pin",
            hint="e.g. series test --broad --mode alone P13",
        )
    patches = selected if mode == "alone" else series.upto(selected[-1].id if ids else None)
    directories = tuple(dict.fromkeys(check_names(suite or list(DEFAULT_DIRS))))
    warn_unexported(series.checkout(), ui)
    ctx = context(series, ui)
    options = Options(directories, patches, mode, jobs, use_cache, part, list_only, as_json)
    return run_broad(series, ui, ctx, options)

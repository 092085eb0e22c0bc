"""Running ``series test --broad``: the two trees, the parts, the shard, the report.

series.runs.broad cuts the directories into parts and judges each test;
this module builds the stack, plans each part's two runs (series.runs.plan's
jobs: the same keys and cache as a patch's subset), picks a shard's parts,
runs them (series.runs.schedule) and prints the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from series.errors import Exit, SeriesError
from series.manifest import Patch
from series.runs import broad
from series.runs.plan import Context
from series.runs.schedule import run_jobs
from series.runs.shard import Costs, Shard, split
from series.ui import Ui
from series.unchanged import one_state

if TYPE_CHECKING:
    from series.project import Series


@dataclass(frozen=True)
class Options:
    directories: tuple[str, ...]
    patches: list[Patch]  # applied on the pin in this order: the stack under test
    mode: str
    jobs: int
    use_cache: bool
    shard: Shard | None
    list_only: bool
    as_json: bool


def run(series: Series, ui: Ui, ctx: Context, options: Options) -> Exit:
    with one_state(series, "test"):  # it takes no lock: nothing reported of a mix
        tip, planned, shards, by = _planned(series, ui, ctx, options)
        if not options.list_only:
            jobs = [j for p in planned for j in (p.pin, p.stack) if j is not None]
            what = (
                f"broad suite: {len(planned)} part(s) on the pin and on "
                f"{len(options.patches)} patch(es)"
            )
            results = run_jobs(ctx, ui, jobs, options.jobs, options.use_cache, what)
            report = broad.conclude(broad.BroadReport(options.directories, planned), results)
    if options.list_only:
        return _show_plan(ui, planned, shards, by, options)
    objects = ctx.repo.objects
    stack = {
        "patches": [p.id for p in options.patches],
        "commit": tip,
        "tree": objects.tree_of(tip),
    }
    return emit(ui, report, ctx, stack, options, by)


def _planned(
    series: Series, ui: Ui, ctx: Context, options: Options
) -> tuple[str, list[broad.PartPlan], dict[str, int], str]:
    """The stack's tip, the parts planned (a shard's only), the split and what balanced it."""
    built = series.stack(ctx.pin_commit, options.patches)
    if built.failure is not None:
        raise SeriesError(
            f"the stack does not apply: {built.failure.describe()}",
            why="the broad suite runs on the pin plus every patch selected",
            hint="`series test` names the patch; fix it (series edit ID) and run again",
            exit_code=Exit.FAILED,
        )
    tip = built.tip
    objects = ctx.repo.objects
    pin_files = set(objects.tree_files(ctx.pin_commit))
    stack_files = set(objects.tree_files(tip))
    broad.check_directories(options.directories, pin_files, stack_files)
    part_list = broad.parts(options.directories, pin_files, stack_files)
    planned = broad.plan_parts(ctx, tip, objects.tree_of(tip), part_list)
    shards: dict[str, int] = {}
    by = "all"
    if options.shard is not None or options.list_only:
        shards, by = split(
            _costs(planned), options.shard, _shard_mode(options), series.cache_dir / "tests"
        )
        if options.list_only:
            return tip, planned, shards, by
        assert options.shard is not None
        planned = [p for p in planned if shards[p.part.name] == options.shard.index]
        ui.status(f"shard {options.shard.index}/{options.shard.count}: {len(planned)} part(s)")
    return tip, planned, shards, by


def _shard_mode(options: Options) -> str:
    """What the kept split is made for, besides the parts and N (series.runs.shard)."""
    return "broad " + " ".join(options.directories)


def _costs(planned: list[broad.PartPlan]) -> Costs:
    """Seconds each part last spent in its tests, pin and stack; None when either is unknown."""
    out: Costs = []
    for p in planned:
        seconds = [j.expected for j in (p.pin, p.stack) if j is not None]
        out.append((p.part.name, None if None in seconds else sum(s or 0.0 for s in seconds)))
    return out


def _show_plan(
    ui: Ui, planned: list[broad.PartPlan], shards: dict[str, int], by: str, options: Options
) -> Exit:
    costs = dict(_costs(planned))
    rows = []
    for p in planned:
        row: dict[str, Any] = {
            "name": p.part.name,
            "pin_selection": list(p.part.pin),
            "stack_selection": list(p.part.stack),
            "expected_seconds": costs[p.part.name],
        }
        if options.shard is not None:
            row["shard"] = shards[p.part.name]
        rows.append(row)
    data: dict[str, Any] = {
        "mode": options.mode,
        "broad": True,
        "directories": list(options.directories),
        "parts": rows,
        "shards": options.shard.count if options.shard else 1,
    }
    if options.shard is not None:
        data["shard"], data["balanced_by"] = options.shard.index, by
    if options.as_json:
        ui.json(data)
        return Exit.OK
    table = Table(title=f"series test --broad plan: {len(rows)} part(s), {data['shards']} shard(s)")
    for column in ("part", *(["shard"] if options.shard else []), "expected"):
        table.add_column(column, overflow="fold")
    for row in rows:
        seconds = row["expected_seconds"]
        table.add_row(
            row["name"],
            *([str(row["shard"])] if options.shard else []),
            "unknown" if seconds is None else f"{seconds:.1f}s",
        )
    ui.table(table)
    return Exit.OK


def emit(
    ui: Ui,
    report: broad.BroadReport,
    ctx: Context,
    stack: dict[str, Any],
    options: Options,
    by: str,
) -> Exit:
    failed = bool(report.failures)
    cached = sum(r.cached for r in report.runs.values())
    if options.as_json:
        data: dict[str, Any] = {
            "mode": options.mode,
            "broad": True,
            "ok": not failed,
            "pin": {"commit": ctx.pin_commit, "tree": ctx.pin_tree},
            "environment": ctx.env_id,
            "stack": stack,
            "shard": None
            if options.shard is None
            else {"index": options.shard.index, "count": options.shard.count, "balanced_by": by},
            "runs": {"all": len(report.runs), "cached": cached},
            **broad.to_json(report),
        }
        ui.json(data)
        return Exit.FAILED if failed else Exit.OK
    failures = report.failures
    if failures:
        ui.result(f"{len(failures)} test(s) fail on the stack and did not fail at the pin:")
        for v in failures:
            ui.result(f"  {v.verdict}: {v.id}" + (f"\n      {v.message}" if v.message else ""))
    table = Table(
        title=f"series test --broad (pin {ctx.pin_commit[:12]}, stack of "
        f"{len(stack['patches'])} patch(es) {stack['commit'][:12]})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("verdict")
    table.add_column("tests", justify="right")
    for verdict in broad.VERDICTS:
        table.add_row(verdict, str(report.count(verdict)))
    table.add_row("all", str(len(report.verdicts)))
    ui.table(table)
    shown = ", ".join(report.directories)
    ui.result(
        f"{'FAILED' if failed else 'ok'}: {len(report.parts)} part(s) of {shown}; "
        f"{cached} of {len(report.runs)} test runs cached"
    )
    return Exit.FAILED if failed else Exit.OK

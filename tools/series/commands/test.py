"""``series test``: each patch's test subset, compared with the pin, cached, in parallel.

Trees are built in memory in the cache repository (series.stack): with
``--mode stacked`` patch k is tested on the pin plus patches 1..k, with
``alone`` on the pin plus patch k only. Every patch's subset also runs on
the pin itself (the baseline), so a failure can be told new or
pre-existing (series.testreport).

A run is keyed by tree id, selection, package and environment (series.testcache),
so a re-run with nothing changed runs nothing, and editing patch 7 re-runs
7..13 and nothing else. The runs that are left go to a pool of reusable
work trees (series.worktrees), ``--jobs`` at a time, longest first; when
there are fewer runs than cores, a run known to be long gets the spare
cores through pytest-xdist.
"""

from __future__ import annotations

import importlib.util
import os
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from series import stack, testrun, upstream
from series.errors import UsageError
from series.git import Repo
from series.manifest import Patch
from series.series import Series
from series.testcache import ResultCache, digest, fingerprint, run_key
from series.testreport import (
    FAILED,
    NO_APPLY,
    NO_APPLY_ALONE,
    NO_SUBSET,
    PatchReport,
    cached_runs,
    check_junit_path,
    classify,
    problem_lines,
    table,
    to_json,
    write_junit,
)
from series.testrun import RunResult
from series.ui import Ui
from series.worktrees import SlotPool

MODES = ("stacked", "alone")
# Seconds spent inside a selection's tests (its last run, as JUnit counts them)
# below which starting xdist workers, each importing torch and keras again,
# costs more than it saves.
XDIST_MIN_SECONDS = 30.0


@dataclass(frozen=True)
class Job:
    key: str
    label: str
    commit: str
    tree: str
    selection: tuple[str, ...]
    expected: float | None  # seconds inside its tests, from the last run of this selection


@dataclass
class Target:
    report: PatchReport
    job: Job | None = None
    baseline: Job | None = None
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    series: Series
    repo: Repo
    cache: ResultCache
    env_id: str
    package: str
    pin_commit: str
    pin_tree: str


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
) -> int:
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    if jobs is None:
        jobs = available_cores()
    elif jobs < 1:
        raise UsageError(
            f"--jobs {jobs}: at least one test run must go at a time",
            hint=f"pass --jobs 1 or more, or leave it out to use the {available_cores()} "
            "core(s) available",
        )
    if junit is not None:
        check_junit_path(junit)
    patches = series.select(ids)
    ctx = _context(series, ui)
    targets = _plan(ctx, patches, mode)
    results = _execute(ctx, ui, targets, jobs, use_cache)
    reports = [_finish(t, results) for t in targets]
    return _report(ui, reports, mode, ctx, as_json=as_json, junit=junit)


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _context(series: Series, ui: Ui) -> Context:
    manifest = series.manifest
    base = upstream.resolve(manifest.upstream, series.cache_dir, source=None, override=None)
    ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
    repo = upstream.cache_repo(series.cache_dir)
    env = fingerprint()
    return Context(
        series,
        repo,
        ResultCache(series.cache_dir / "tests"),
        digest(env)[:16],
        manifest.upstream.name,
        base.commit,
        repo.tree_of(base.commit),
    )


# -- planning: trees, selections, keys -----------------------------------------


def _plan(ctx: Context, patches: list[Patch], mode: str) -> list[Target]:
    manifest = ctx.series.manifest
    commits: dict[str, str] = {}
    failures: dict[str, str] = {}
    if mode == "stacked" and patches:
        built = stack.build(
            ctx.series, ctx.repo, ctx.pin_commit, ctx.series.upto(patches[-1].id), memo=True
        )
        commits = {s.patch.id: s.commit for s in built.steps}
        if built.failure is not None:
            failures[built.failure.patch.id] = built.failure.describe()
    for patch in patches if mode == "alone" else []:
        built = stack.build(ctx.series, ctx.repo, ctx.pin_commit, [patch], memo=True)
        if built.failure is not None:
            failures[patch.id] = built.failure.describe()
        else:
            commits[patch.id] = built.tip
    targets = []
    for patch in patches:
        report = PatchReport(patch, manifest.index(patch.id) + 1, mode)
        commit = commits.get(patch.id)
        if commit is None:
            report.status = NO_APPLY_ALONE if mode == "alone" else NO_APPLY
            report.detail = failures.get(patch.id, "an earlier patch does not apply")
            if mode == "alone" and patch.applies_alone:
                report.detail += " (series.toml says applies_alone = true)"
            targets.append(Target(report))
            continue
        report.commit, report.tree = commit, ctx.repo.tree_of(commit)
        targets.append(_target(ctx, report))
    return targets


def _target(ctx: Context, report: PatchReport) -> Target:
    subset = report.patch.subset
    if not subset:
        report.status = NO_SUBSET
        return Target(report)
    assert report.commit is not None and report.tree is not None
    present = _present(ctx.repo, report.commit, subset)
    at_pin = _present(ctx.repo, ctx.pin_commit, present)
    target = Target(report, missing=tuple(s for s in subset if s not in present))
    if present:
        target.job = _job(ctx, report.patch.id, report.commit, report.tree, present)
    if at_pin:
        target.baseline = _job(ctx, f"pin/{report.patch.id}", ctx.pin_commit, ctx.pin_tree, at_pin)
    return target


def _present(repo: Repo, commit: str, selection: tuple[str, ...]) -> tuple[str, ...]:
    there = repo.existing_paths(commit, testrun.files_of(selection))
    return tuple(s for s in selection if s.split("::", 1)[0].rstrip("/") in there)


def _job(ctx: Context, label: str, commit: str, tree: str, selection: tuple[str, ...]) -> Job:
    return Job(
        run_key(tree, selection, ctx.package, ctx.env_id),
        label,
        commit,
        tree,
        selection,
        ctx.cache.last_duration(selection, ctx.env_id),
    )


# -- running ----------------------------------------------------------------------


def _execute(
    ctx: Context, ui: Ui, targets: list[Target], jobs: int, use_cache: bool
) -> dict[str, RunResult]:
    wanted: dict[str, Job] = {}
    for target in targets:
        for job in (target.job, target.baseline):
            if job is not None:
                wanted.setdefault(job.key, job)
    results: dict[str, RunResult] = {}
    pending = []
    for job in wanted.values():
        found = _cached(ctx.cache, job.key) if use_cache else None
        if found is not None:
            results[job.key] = found
        else:
            pending.append(job)
    ui.status(
        f"testing {len(targets)} patch(es): {len(wanted)} run(s), "
        f"{len(results)} cached, {len(pending)} to run, {jobs} at a time"
    )
    if pending:
        results.update(_schedule(ctx, ui, pending, jobs))
    return results


def _cached(cache: ResultCache, key: str) -> RunResult | None:
    data = cache.get(key)
    try:
        return None if data is None else RunResult.from_json(data)
    except (KeyError, TypeError, ValueError, IndexError):
        return None  # an entry with the right format number but damaged: run again


def _schedule(ctx: Context, ui: Ui, pending: list[Job], jobs: int) -> dict[str, RunResult]:
    """Longest first; spare cores go to xdist for runs known to be long."""
    pending.sort(key=lambda j: -(j.expected or 0.0))
    xdist = importlib.util.find_spec("xdist") is not None
    pool = SlotPool(ctx.repo, ctx.series.cache_dir / "worktrees")
    results: dict[str, RunResult] = {}
    running: dict[Future[RunResult], tuple[Job, int, TaskID]] = {}
    free = jobs
    with _progress(ui) as progress, ThreadPoolExecutor(max_workers=jobs) as executor:
        overall = progress.add_task(f"{len(pending)} test runs", total=len(pending))
        try:
            while pending or running:
                while pending and free > 0:
                    job = pending.pop(0)
                    spare = free - 1 - len(pending)
                    long_run = (job.expected or 0.0) >= XDIST_MIN_SECONDS
                    workers = 1 + spare if xdist and spare > 0 and long_run else 1
                    free -= workers
                    task = progress.add_task(_describe(job, workers), total=None)
                    future = executor.submit(_run_job, ctx, pool, job, workers)
                    running[future] = (job, workers, task)
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    job, workers, task = running.pop(future)
                    free += workers
                    progress.remove_task(task)
                    progress.advance(overall)
                    result = future.result()  # a ProofError stops everything
                    results[job.key] = result
                    ui.status(_finished(job, result))
        except BaseException:
            pending.clear()
            for future in running:
                future.cancel()
            raise
    return results


def _run_job(ctx: Context, pool: SlotPool, job: Job, workers: int) -> RunResult:
    with pool.slot(job.commit) as slot:
        result = testrun.run(
            slot.path,
            key=job.key,
            tree=job.tree,
            selection=job.selection,
            package=ctx.package,
            workers=workers,
            log=ctx.cache.log_path(job.key),
        )
    if not result.crashed:
        ctx.cache.put(job.key, result.to_json())
        ctx.cache.note_duration(job.selection, ctx.env_id, result.test_seconds)
    return result


def _progress(ui: Ui) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=ui.err,
        transient=True,
        disable=not ui.err.is_terminal,
    )


def _describe(job: Job, workers: int) -> str:
    shown = ", ".join(s.removeprefix("keras/src/") for s in job.selection[:2])
    more = f" +{len(job.selection) - 2}" if len(job.selection) > 2 else ""
    return f"{job.label}: {shown}{more}" + (f" (xdist -n {workers})" if workers > 1 else "")


def _finished(job: Job, result: RunResult) -> str:
    outcomes = [t.outcome for t in result.tests.values()]
    bad = sum(o in ("failed", "error") for o in outcomes)
    how = "crashed" if result.crashed else f"{len(outcomes)} tests, {bad} failed or errored"
    return f"  ran {job.label} ({job.tree[:10]}): {how} in {result.duration:.1f}s"


# -- results ------------------------------------------------------------------------


def _finish(target: Target, results: dict[str, RunResult]) -> PatchReport:
    report = target.report
    if report.status in (NO_APPLY, NO_APPLY_ALONE, NO_SUBSET):
        return report
    run = results.get(target.job.key) if target.job else None
    report.baseline = results.get(target.baseline.key) if target.baseline else None
    report.run = run or RunResult("", report.tree or "", (), 0.0, 0, "")
    report.tests = classify(report.patch, report.run, report.baseline, target.missing)
    if report.failed:
        report.status = FAILED
    return report


def _report(
    ui: Ui,
    reports: list[PatchReport],
    mode: str,
    ctx: Context,
    *,
    as_json: bool,
    junit: Path | None,
) -> int:
    failed = any(r.failed for r in reports)
    if junit is not None:
        write_junit(junit, reports)
        ui.status(f"wrote JUnit XML to {junit}")
    if as_json:
        ui.json(
            {
                "mode": mode,
                "ok": not failed,
                "pin": {"commit": ctx.pin_commit, "tree": ctx.pin_tree},
                "environment": ctx.env_id,
                "patches": [to_json(r) for r in reports],
            }
        )
        return 1 if failed else 0
    problems = problem_lines(reports)
    if problems:
        ui.result(f"{len(problems)} problem(s):")
        for line in problems:
            ui.result(f"  {line}")
    ui.table(table(reports, f"series test --mode {mode} (pin {ctx.pin_commit[:12]})"))
    alone = [r.patch.id for r in reports if r.status == NO_APPLY_ALONE]
    if alone:
        ui.result(f"cannot apply alone (needs earlier patches): {', '.join(alone)}")
    cached, runs = cached_runs(reports)
    ui.result(f"{'FAILED' if failed else 'ok'}: {cached} of {runs} test runs cached")
    return 1 if failed else 0

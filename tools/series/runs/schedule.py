"""Running the planned test jobs: cached results first, then a pool of slots.

The runs that are not cached go to a pool of reusable work trees
(series.runs.slots), ``--jobs`` at a time, longest first; when there are
fewer runs than cores, a run known to be long gets the spare cores through
pytest-xdist.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from series.runs import pytest_run
from series.runs.cache import ResultCache
from series.runs.plan import Context, Job, Target
from series.runs.pytest_run import RunResult
from series.runs.slots import SlotPool
from series.ui import Ui

# Seconds spent inside a selection's tests (its last run, as JUnit counts them)
# below which starting xdist workers, each importing torch and keras again,
# costs more than it saves.
XDIST_MIN_SECONDS = 30.0


def execute(
    ctx: Context, ui: Ui, targets: list[Target], jobs: int, use_cache: bool
) -> dict[str, RunResult]:
    planned = [j for t in targets for j in (t.job, t.baseline) if j is not None]
    return run_jobs(ctx, ui, planned, jobs, use_cache, f"testing {len(targets)} patch(es)")


def run_jobs(
    ctx: Context, ui: Ui, planned: list[Job], jobs: int, use_cache: bool, what: str
) -> dict[str, RunResult]:
    """Each distinct job's result (by key): from the cache, else run in slots."""
    wanted: dict[str, Job] = {}
    for job in planned:
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
        f"{what}: {len(wanted)} run(s), "
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
        result = pytest_run.run(
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
        console=ui.err.console,
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

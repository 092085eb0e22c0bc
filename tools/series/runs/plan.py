"""Planning ``series test``: which trees to test, with which selections, under which keys.

With mode ``stacked`` patch k is tested on the pin plus patches 1..k, with
``alone`` on the pin plus patch k only; every patch's subset also runs on
the pin itself (the baseline), so a failure can be told new or
pre-existing (series.runs.report). A run is keyed by tree id, selection,
package and environment (series.runs.cache), so a re-run with nothing
changed runs nothing, and editing patch 7 re-runs patch 7 and every patch after
it, and nothing else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from series.errors import UsageError
from series.git import Repo
from series.manifest import Patch
from series.runs import pytest_run
from series.runs.cache import ResultCache, digest, fingerprint, run_key
from series.runs.pytest_run import RunResult
from series.runs.report import (
    FAILED,
    NO_APPLY,
    NO_APPLY_ALONE,
    NO_SUBSET,
    NO_TESTS,
    PatchReport,
    classify,
)
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series

MODES = ("stacked", "alone")


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


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def jobs_or_cores(jobs: int | None) -> int:
    """``--jobs`` checked, or the cores available when it was not given."""
    if jobs is None:
        return available_cores()
    if jobs < 1:
        raise UsageError(
            f"--jobs {jobs}: at least one test run must go at a time",
            hint=f"pass --jobs 1 or more, or leave it out to use the {available_cores()} "
            "core(s) available",
        )
    return jobs


def context(series: Series, ui: Ui) -> Context:
    manifest = series.manifest
    base = series.pin(ui)
    repo = series.cache
    env = fingerprint()
    return Context(
        series,
        repo,
        ResultCache(series.cache_dir / "tests"),
        digest(env)[:16],
        manifest.upstream.name,
        base.commit,
        repo.objects.tree_of(base.commit),
    )


def plan(ctx: Context, patches: list[Patch], mode: str) -> list[Target]:
    manifest = ctx.series.manifest
    commits: dict[str, str] = {}
    failures: dict[str, str] = {}
    if mode == "stacked" and patches:
        built = ctx.series.stack(ctx.pin_commit, ctx.series.upto(patches[-1].id))
        commits = built.commits
        if built.failure is not None:
            failures[built.failure.patch.id] = built.failure.describe()
    for patch in patches if mode == "alone" else []:
        built = ctx.series.stack(ctx.pin_commit, [patch])
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
        report.commit, report.tree = commit, ctx.repo.objects.tree_of(commit)
        targets.append(_target(ctx, report))
    return targets


def _target(ctx: Context, report: PatchReport) -> Target:
    subset = report.patch.subset
    if not subset:
        if report.patch.no_tests:
            report.status, report.detail = NO_TESTS, report.patch.no_tests
        else:
            report.status = NO_SUBSET
            report.detail = (
                f"series.toml gives {report.patch.id} neither a subset nor a reason: add "
                'subset = ["keras/src/..._test.py"], or no_tests = "why it has none"'
            )
        return Target(report)
    assert report.commit is not None and report.tree is not None
    present = _present(ctx.repo, report.commit, subset)
    at_pin = _present(ctx.repo, ctx.pin_commit, present)
    target = Target(report, missing=tuple(s for s in subset if s not in present))
    if present:
        target.job = job(ctx, report.patch.id, report.commit, report.tree, present)
    if at_pin:
        target.baseline = job(ctx, f"pin/{report.patch.id}", ctx.pin_commit, ctx.pin_tree, at_pin)
    return target


def _present(repo: Repo, commit: str, selection: tuple[str, ...]) -> tuple[str, ...]:
    there = repo.objects.existing_paths(commit, pytest_run.files_of(selection))
    return tuple(s for s in selection if s.split("::", 1)[0].rstrip("/") in there)


def job(ctx: Context, label: str, commit: str, tree: str, selection: tuple[str, ...]) -> Job:
    return Job(
        run_key(tree, selection, ctx.package, ctx.env_id),
        label,
        commit,
        tree,
        selection,
        ctx.cache.last_duration(selection, ctx.env_id),
    )


def finish(target: Target, results: dict[str, RunResult]) -> PatchReport:
    report = target.report
    if report.status in (NO_APPLY, NO_APPLY_ALONE, NO_SUBSET, NO_TESTS):
        return report
    run = results.get(target.job.key) if target.job else None
    report.baseline = results.get(target.baseline.key) if target.baseline else None
    report.run = run or RunResult("", report.tree or "", (), 0.0, 0, "")
    report.tests = classify(report.patch, report.run, report.baseline, target.missing)
    if report.failed:
        report.status = FAILED
    return report

"""check-conflicts, start to finish: the stack on its pin, the matrix, the --onto replay.

All of it happens in the per-user cache repository: the user's checkout,
index and refs are never touched. A revision fetched for ``--onto`` lands
under a scratch ref prefix of the run, deleted when the merges are done,
also after a failure (``UpstreamSource.scratch``).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from series.conflicts import alone
from series.conflicts.analysis import analyse
from series.conflicts.pinstack import build_stack
from series.conflicts.report import report
from series.errors import SeriesError
from series.merge import Merger, resolve_target
from series.ui import Ui
from series.upstream import Base

if TYPE_CHECKING:
    from series.project import Series


def check(
    series: Series,
    ui: Ui,
    *,
    onto: str | None,
    url: str | None,
    source: str | None,
    matrix: bool,
    merge_mode: str,
) -> dict[str, Any]:
    """The whole report as the ``--json`` dict (docs/check-conflicts.md)."""
    started = time.perf_counter()
    # A git --upstream has the pin's real commit too, as a rule: take it from there.
    git_url = url if onto and url and not onto.startswith("sdist:") and source != "sdist" else None
    base = _pin(series, ui, source, git_url)
    repo = series.cache
    stacked = build_stack(series, base.commit)
    built = len(stacked.nodes) - 1
    ui.status(
        f"stack: {built} of {len(stacked.steps)} patches on {base.commit[:12]}"
        f" ({stacked.reused} memoised)"
    )
    with ExitStack() as fetched:  # what --onto fetched is deleted once the merges are done
        target = None
        if onto:
            upstream = series.upstream(ui, url)
            scratch = fetched.enter_context(upstream.scratch(repo))
            target = resolve_target(
                upstream, onto, base=base, into=repo, scratch=scratch, announce=True
            )
            ui.status(f"onto: {target.label}; upstream since the pin: {target.range}")
        with repo.merge.scratch_objects() as env:
            merger = Merger(repo, env, merge_mode)
            analysis = analyse(merger, stacked, target, matrix=matrix)
    seconds = time.perf_counter() - started
    stats = {
        "merges": merger.merges,
        "batches": merger.batches,
        "merge_mode": merger.mode,
        "memoised": stacked.reused,
        "seconds": round(seconds, 3),
    }
    ui.status(f"{merger.merges} merges in {merger.batches} batches, {seconds:.2f} s")
    data = report(series, base, stacked, analysis, target, onto, stats, matrix=matrix)
    alone.remember(series, base.commit, data["matrix"])
    return data


def _pin(series: Series, ui: Ui, source: str | None, git_url: str | None) -> Base:
    """The pin, from the --onto source when it has it; else as series.toml says."""
    if git_url is not None:
        try:
            return series.pin(ui, source=source, override=git_url)
        except SeriesError:
            pass  # not there: the usual source, and --onto reports the URL's problem
    return series.pin(ui, source=source)

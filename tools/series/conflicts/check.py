"""check-conflicts, start to finish: the stack on its pin, the matrix, the --onto replay.

All of it happens in the per-user cache repository: the user's checkout,
index and refs are never touched. A revision fetched for ``--onto`` lands
under a scratch ref prefix of the run, deleted when the merges are done,
also after a failure (``UpstreamSource.scratch``).

check-conflicts takes no project lock (it writes only the cache), so a
command that writes series.toml and patches/ (a rebase, an export) may end
while it runs: series.toml read at the start and the patch files read once
the pin is there could then be of two states of the project, neither of
which the report would be about. The work is done within
``series.unchanged.one_state``: before it reports or keeps anything, the
run reads both again, and anything else than what it merged is refused,
named, with the way on (run it again); so is a patch file gone under it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from series.conflicts import alone
from series.conflicts.analysis import analyse
from series.conflicts.pinstack import build_stack
from series.conflicts.report import report
from series.merge import Merger, target_of
from series.ui import Ui
from series.unchanged import one_state

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
    with one_state(series, "check-conflicts"):  # else reported of two states
        started = time.perf_counter()
        repo = series.cache
        # One entry into series.upstream: the pin now, REV once the stack is built.
        with series.upstream(ui, url).onto(onto, source=source, into=repo) as found:
            base = found.base
            stacked = build_stack(series, base.commit)
            built = len(stacked.nodes) - 1
            ui.status(
                f"stack: {built} of {len(stacked.steps)} patches on {base.commit[:12]}"
                f" ({stacked.reused} memoised)"
            )
            revision = found.revision()
            target = None
            if revision is not None:
                target = target_of(revision, repo)
                ui.status(f"onto: {target.label}; upstream since the pin: {target.range}")
            with repo.merge.scratch_objects() as env:
                merger = Merger(repo, env, merge_mode)
                analysis = analyse(
                    merger,
                    stacked,
                    target,
                    matrix=matrix,
                    recorded=series.root,
                    cache_dir=series.cache_dir,
                    say=ui.status,
                )
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
    alone.remember(series, base.commit, data["matrix"], stacked.data)
    return data

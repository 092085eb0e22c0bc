"""check-conflicts, start to finish: the stack on its pin, the matrix, the --onto replay.

All of it happens in the per-user cache repository: the user's checkout,
index and refs are never touched. A revision fetched for ``--onto`` lands
under a scratch ref prefix of the run, deleted when the merges are done,
also after a failure (``UpstreamSource.scratch``).

check-conflicts takes no project lock (it writes only the cache), so a
command that writes series.toml and patches/ (a rebase, an export) may end
while it runs: series.toml read at the start and the patch files read once
the pin is there could then be of two states of the project, neither of
which the report would be about. Before it reports, the run reads both
again (:func:`_changed`): anything else than what it merged is refused,
named, with the way on (run it again); so is a patch file gone under it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from series.conflicts import alone
from series.conflicts.analysis import analyse
from series.conflicts.pinstack import build_stack
from series.conflicts.report import report
from series.errors import SeriesError
from series.manifest import load
from series.merge import Merger, target_of
from series.ui import Ui

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
    repo = series.cache
    # One entry into series.upstream: the pin now, REV once the stack is built.
    with series.upstream(ui, url).onto(onto, source=source, into=repo) as found:
        base = found.base
        try:  # the patch files read, once
            stacked = build_stack(series, base.commit)
        except FileNotFoundError:  # one gone under the run: another command's work?
            _refuse_changed(series, {})
            raise
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
    _refuse_changed(series, stacked.data)
    alone.remember(series, base.commit, data["matrix"], stacked.data)
    return data


def _changed(series: Series, merged: dict[str, bytes]) -> list[str]:
    """The project files that are not now what the run read: series.toml when it no
    longer says what it said at the start, each patch file whose bytes are not those
    merged (``merged``: patch id -> bytes; a patch not in it is not compared)."""
    changed = []
    try:
        now = load(series.root / "series.toml", missing_ok=True, kept=series.cache_dir)
    except (SeriesError, OSError):
        now = None
    if now != series.manifest:
        changed.append("series.toml")
    for patch in series.manifest.patches:
        if patch.id not in merged:
            continue
        try:
            data = series.patch_path(patch).read_bytes()
        except OSError:
            data = None
        if data != merged[patch.id]:
            changed.append(patch.file)
    return changed


def _refuse_changed(series: Series, merged: dict[str, bytes]) -> None:
    """Raise when the project changed under the run (:func:`_changed`)."""
    changed = _changed(series, merged)
    if changed:
        raise SeriesError(
            f"{', '.join(changed)} changed while check-conflicts ran",
            why="another command (a rebase, an export, an editor) wrote the project meanwhile: "
            "what this run read was not one state of the series, so it reports nothing",
            hint="run it again once that command has ended",
        )

"""One state of the project, or no report: what a check without the lock read, read again.

check-conflicts, test, lint, prove, bench and scorecard write only the
per-user cache, so they take no project lock (series.project), and a
command that writes series.toml and patches/ (a rebase's end, an export)
may end while they run: series.toml, read as the run starts, and the patch
files, read once the pin is there, could then be of two states of the
project, and the report of neither (docs/hardening.md, rows 302, 500-505
and 510-511). So the work
of such a run is done within :func:`one_state`: at its end the run reads
series.toml and every patch file the stack was built from
(``Series.read``) again, and anything else than what it read is refused,
named, with the way on (run it again); so is a patch file gone under it,
which is not a disk's fault. A report printed after that is of one state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from series.errors import SeriesError
from series.manifest import load

if TYPE_CHECKING:
    from series.project import Series


@contextmanager
def one_state(series: Series, command: str) -> Iterator[None]:
    """Raise at the end of the block when the project changed under it (:func:`changed`),
    or at a file gone in it when the project did (``command``: the command, named)."""
    try:
        yield
    except FileNotFoundError:  # a patch file gone under the run: another command's work?
        _refuse(series, command)
        raise
    _refuse(series, command)


def changed(series: Series) -> list[str]:
    """The project files that are not now what the run read: series.toml when it no
    longer says what it said at the start, each patch file whose bytes are not those
    the stack was built from (a patch not built is not compared)."""
    out = []
    try:
        now = load(series.root / "series.toml", missing_ok=True, kept=series.cache_dir)
    except (SeriesError, OSError):
        now = None
    if now != series.manifest:
        out.append("series.toml")
    for patch in series.manifest.patches:
        if patch.id not in series.read:
            continue
        try:
            data = series.patch_path(patch).read_bytes()
        except OSError:
            data = None
        if data is None or data != series.read[patch.id]:
            out.append(patch.file)
    return out


def _refuse(series: Series, command: str) -> None:
    files = changed(series)
    if files:
        raise SeriesError(
            f"{', '.join(files)} changed while {command} ran",
            why="another command (a rebase, an export, an editor) wrote the project meanwhile: "
            "what this run read was not one state of the series, so it reports nothing",
            hint="run it again once that command has ended",
        )

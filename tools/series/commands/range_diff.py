"""``series range-diff [ID] [--since REV]``: how each patch changed between two versions.

The work is in series.stack.rangediff; docs/range-diff.md is the manual.
"""

from __future__ import annotations

from series.commands.options import JSON, REV, Option
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported: see series.records
if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (
    Option("ID", "only this patch (default: all)", key="patch_id", nargs="?"),
    Option(
        "--since",
        "the old version: this commit of the project repository (default: docs/range-diff.md)",
        type=REV,
        metavar="REV",
    ),
    JSON,
)


def run(
    series: Series,
    ui: Ui,
    *,
    patch_id: str | None = None,
    since: str | None = None,
    as_json: bool = False,
) -> Exit:
    from series.stack.rangediff import report

    # A plain range-diff that nothing changed since the last one is answered before the
    # CLI is imported (series.stack.rangediff_kept); this one keeps what it writes.
    plain = (patch_id, since, as_json) == (None, None, False)
    keeping = _Keeping.start(series, ui) if plain else None
    old, new, rows = report(series, ui, since, patch_id, keeping.seen if keeping else None)
    if as_json:
        ui.json(
            {
                "format": 1,
                "old": old.label,
                "new": new.label,
                "patches": [r.to_json() for r in rows],
            }
        )
        return Exit.OK
    lines = [f"range-diff: {old.label} -> {new.label}"]
    for r in rows:
        note = f" ({r.note})" if r.note else ""
        lines.append(f"{r.id:<4} {r.kind}{note}  {r.title}")
        lines += [f"    {line}" for line in r.text.splitlines()]
    ui.result("\n".join(lines))
    if keeping is not None:
        keeping.done(series, ui)
    return Exit.OK


class _Keeping:
    """What a plain range-diff reads and writes, for series.stack.rangediff_kept to keep."""

    def __init__(self, series: Series, ui: Ui) -> None:
        import os

        from series.stack import rangediff_kept as kept
        from series.stack.branches_kept import Tee

        self.kept = kept
        self.root, self.cache = str(series.root), os.path.abspath(series.cache_dir)
        self.checkout = series.manifest.checkout  # resolved by rangediff_kept each time
        self.seen: kept.Seen = {}  # for the digest after: files not written since, read once
        self.before = kept.digest(self.root, self.cache, self.checkout, self.seen)
        self.streams = (ui.out.file, ui.err.file)
        tees = Tee(ui.out.file), Tee(ui.err.file)
        ui.out.file, ui.err.file = tees  # type: ignore[assignment]  # a file, as far as it goes

    @classmethod
    def start(cls, series: Series, ui: Ui) -> _Keeping | None:
        """None where rangediff_kept would not answer: a log asked for (``-v``,
        ``SERIES_DEBUG``), a fault injected, a terminal."""
        from series.stack.branches_kept import may_keep

        if not may_keep(ui.out.file, ui.err.file):
            return None
        try:
            return cls(series, ui)
        except OSError:  # a file that cannot be read: the run says so, keeping nothing
            return None

    def done(self, series: Series, ui: Ui) -> None:
        """Keep what was written, when nothing changed under the run and the pins were
        found in the cache."""
        import sys

        from series.stack.branches_kept import Tee
        from series.stack.rangediff import RESOLVED

        out, err = ui.out.file, ui.err.file
        ui.out.file, ui.err.file = self.streams
        if RESOLVED or "logging" in sys.modules or self.before is None:
            return
        if self.kept.digest(self.root, self.cache, self.checkout, self.seen) != self.before:
            return
        if not _parsed_is_now(series):
            return
        assert isinstance(out, Tee) and isinstance(err, Tee)
        text = self.kept.entry(self.before, self.checkout, "".join(out.said), "".join(err.said))
        if text is None:
            return
        self.kept.write(self.kept.record_path(self.root, self.cache), text)


def _parsed_is_now(series: Series) -> bool:
    """Whether series.toml as it is now (the bytes in the digest, read after the run's
    parse) parses to the manifest the run answered from: a save in between would key the
    old parse's answer by the new bytes.

    Sure without a parse when the file has not changed since series.entry was imported,
    before the run parsed it (series.entry.STARTED; none when it was not: in-process
    runs): its change time, read after the digest's read, is before that by more than
    any file system's clock tick (series.code.RACY_NS, the rule series.code's digest
    follows), and a write sets it to the time of the write."""
    import os
    import sys

    from series.code import RACY_NS
    from series.errors import SeriesError
    from series.manifest import load  # loaded already: the run parsed series.toml

    started = getattr(sys.modules.get("series.entry"), "STARTED", 0)
    try:
        if started and os.stat(series.root / "series.toml").st_ctime_ns < started - RACY_NS:
            return True
        return load(series.root / "series.toml") == series.manifest
    except (OSError, ValueError, SeriesError):
        return False

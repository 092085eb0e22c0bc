"""``series range-diff [ID] [--since REV]``: how each patch changed between two versions.

The work is in series.stack.rangediff; docs/range-diff.md is the manual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.commands.options import JSON, REV, Option
from series.errors import Exit

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

    old, new, rows = report(series, ui, since, patch_id)
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
    return Exit.OK

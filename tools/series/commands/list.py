"""``series list``: the series as a table, read from the manifest and patch files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from series.commands.options import ENVELOPE
from series.errors import Exit

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (ENVELOPE,)


def run(series: Series, ui: Ui, *, as_json: bool = False) -> Exit:
    from rich.table import Table

    rows: list[dict[str, Any]] = []
    for pos, patch in enumerate(series.manifest.patches, 1):
        files = [s.path for s in series.stat(patch)]
        rows.append(
            {
                "position": pos,
                "id": patch.id,
                "pr": patch.pr,
                "state": patch.state,
                "state_note": patch.state_note,
                "title": patch.title,
                "files": files,
                "subset": list(patch.subset),
                "branch": patch.branch,
                "file": patch.file,
            }
        )
    if as_json:
        ui.json({"patches": rows})
        return Exit.OK
    table = Table(title=f"{len(rows)} patches on {series.manifest.upstream.ref}")
    for column in ("#", "id", "PR", "upstream", "title", "files", "subset"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            str(row["position"]),
            str(row["id"]),
            f"#{row['pr']}" if row["pr"] else "-",
            str(row["state"]),
            str(row["title"]),
            str(len(row["files"])),
            "\n".join(s.removeprefix("keras/src/") for s in row["subset"]) or "-",
        )
    ui.table(table)
    return Exit.OK

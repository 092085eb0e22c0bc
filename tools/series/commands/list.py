"""``series list``: the series as a table, read from the manifest and patch files."""

from __future__ import annotations

from series.commands.options import ENVELOPE
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from typing import Any

    from series.project import Series
    from series.ui import Ui

OPTIONS = (ENVELOPE,)


def run(series: Series, ui: Ui, *, as_json: bool = False) -> Exit:
    from series.ui import Grid

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
    title = f"{len(rows)} patches on {series.manifest.upstream.ref}"
    table = Grid(title, ("#", "id", "PR", "title", "files", "subset"))
    for row in rows:
        pr = f"#{row['pr']}" if row["pr"] else "-"
        table.add_row(
            str(row["position"]),
            str(row["id"]),
            f"{pr} {row['state']}",
            _cut(str(row["title"]), TITLE),
            str(len(row["files"])),
            _subset(row["subset"]),
        )
    ui.table(table)
    return Exit.OK


# The table fits 100 columns: long titles are cut and the subset is counted;
# `series show ID` and --json have them whole.
TITLE = 44


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _subset(subset: list[str]) -> str:
    """``2 files``; ``20 tests, 1 file`` when node ids are named (``3 tests + 2 files``
    when whole files are named too); ``-`` for none."""
    if not subset:
        return "-"
    named = [s.split("::", 1)[0] for s in subset if "::" in s]
    whole = len(subset) - len(named)
    if not named:
        return _count(whole, "file")
    if not whole:
        return f"{_count(len(named), 'test')}, {_count(len(set(named)), 'file')}"
    return f"{_count(len(named), 'test')} + {_count(whole, 'file')}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("s" if n != 1 else "")

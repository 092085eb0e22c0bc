"""What ``series prove`` found: one table row per patch, the flagged ones named, or JSON."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from series.errors import Exit
from series.runs.prove import (
    BEHAVIOUR,
    BROKEN,
    GUARD,
    KINDS,
    STRUCTURAL,
    ProveReport,
)
from series.runs.report import show_problems
from series.runs.testcode import TEST_DIRS
from series.ui import Ui

TEST_FILE_RULE = (
    "test_*.py, *_test.py, conftest.py, and any file under a directory named "
    + " or ".join(TEST_DIRS)
)


def to_json(report: ProveReport) -> dict[str, Any]:
    run, reverted = report.run, report.reverted
    return {
        "id": report.patch.id,
        "position": report.position,
        "status": report.status,
        "failed": report.failed,
        "detail": report.detail,
        "exempt": report.patch.no_behaviour_test or None,
        "commit": report.commit,
        "tree": report.tree,
        "reverted": {"commit": report.reverted_commit, "tree": report.reverted_tree},
        "production": report.production,
        "test_files": report.test_files,
        "selection": list(report.selection),
        "introduced": sorted(report.introduced),
        "counts": {kind: report.count(kind) for kind in KINDS},
        "cached": None if run is None else run.cached,
        "reverted_cached": None if reverted is None else reverted.cached,
        "log": None if run is None else run.log,
        "reverted_log": None if reverted is None else reverted.log,
        "tests": [
            {
                "id": t.id,
                "class": t.kind,
                "with": t.with_patch,
                "without": t.without,
                "message": t.message,
                "known": t.known or None,
            }
            for t in report.tests
        ],
    }


HEADERS = {BEHAVIOUR: "behav", STRUCTURAL: "struct", GUARD: "guard", BROKEN: "broken"}


def table(reports: list[ProveReport], title: str) -> Table:
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    out.add_column("patch")
    for column in ("tests", *(HEADERS.get(k, "skip") for k in KINDS), "cached"):
        out.add_column(column, justify="right")
    out.add_column("status", no_wrap=True)
    for r in reports:
        ran = r.run is not None
        counts = [len(r.tests), *(r.count(k) for k in KINDS)]
        out.add_row(
            r.patch.id,
            *(str(n) if ran else "-" for n in counts),
            _cached(r),
            r.status,
        )
    return out


def _cached(report: ProveReport) -> str:
    runs = [r.cached for r in (report.run, report.reverted) if r is not None]
    if not runs:
        return "-"
    return "yes" if all(runs) else "no" if not any(runs) else "part"


SHOWN = 5  # broken tests named per patch; --json has them all


def problem_lines(reports: list[ProveReport]) -> list[str]:
    lines = []
    for report in reports:
        if report.failed:
            lines.append(f"{report.patch.id}: {report.status}: {report.detail}")
        for test in report.broken[:SHOWN]:
            first = next(iter(test.message.strip().splitlines()), "")
            lines.append(f"{report.patch.id}: broken: {test.id}\n    {first}")
        if len(report.broken) > SHOWN:
            lines.append(f"{report.patch.id}: ... {len(report.broken) - SHOWN} more (--json)")
        known = report.count(BROKEN) - len(report.broken)
        if known:
            lines.append(f"{report.patch.id}: {known} broken test(s) fail at the pin too")
    return lines


def emit(ui: Ui, reports: list[ProveReport], pin: tuple[str, str, str], *, as_json: bool) -> Exit:
    """Print the reports (table or JSON); the exit status."""
    pin_commit, pin_tree, env_id = pin
    failed = any(r.failed for r in reports)
    if as_json:
        ui.json(
            {
                "ok": not failed,
                "pin": {"commit": pin_commit, "tree": pin_tree},
                "environment": env_id,
                "test_files": TEST_FILE_RULE,
                "patches": [to_json(r) for r in reports],
            }
        )
        return Exit.FAILED if failed else Exit.OK
    show_problems(ui, problem_lines(reports))
    ui.table(table(reports, f"series prove (pin {pin_commit[:12]})"))
    flagged = sum(r.failed for r in reports)
    ui.result(f"{'FAILED' if failed else 'ok'}: {flagged} of {len(reports)} patch(es) flagged")
    return Exit.FAILED if failed else Exit.OK

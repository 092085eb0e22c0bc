"""The check-conflicts report: one dict for ``--json``, tables for people.

The dict is the contract (docs/check-conflicts.md documents every key); the
tables are rendered from it, so what a person reads is what a machine gets.
Problems (anything that makes the exit status 3) are decided here, in one
place.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from series.conflicts.analysis import Analysis, Replayed
from series.errors import Exit
from series.evidence import Remainder
from series.merge import Stacked, Target
from series.project import Series
from series.ui import Ui
from series.upstream import Base

FORMAT = 1
# Matrix cells: diagonal, then the pair results.
CELL = {True: "A", False: "!", "commute": ".", "conflict": "X", "needs": "n", "n/a": "-"}
LEGEND = (
    "diagonal: A applies alone on the pin, ! does not. Pairs: . commute (both apply alone "
    "and merge cleanly), X conflict when both are applied, n the later applies only on top "
    "of the earlier, - not applicable (one does not apply alone)"
)


def report(
    series: Series,
    base: Base,
    stacked: Stacked,
    analysis: Analysis,
    target: Target | None,
    onto: str | None,
    stats: dict[str, Any],
    *,
    matrix: bool,
) -> dict[str, Any]:
    problems: list[str] = []
    notes: list[str] = []
    stack_rows = _stack(stacked, problems, notes)
    data: dict[str, Any] = {
        "format": FORMAT,
        "ok": True,
        "exit_code": 0,
        "pin": {
            "commit": base.commit,
            "label": base.label,
            "source": base.source,
            "reason": base.reason,
        },
        "stack": stack_rows,
        "matrix": _matrix(analysis, problems, notes) if matrix else None,
        "onto": _onto(stacked, analysis, target, onto, problems, notes) if target else None,
        "problems": problems,
        "notes": notes,
        "stats": stats,
    }
    data["ok"] = not problems
    data["exit_code"] = int(Exit.CONFLICT if problems else Exit.OK)
    return data


def _stack(stacked: Stacked, problems: list[str], notes: list[str]) -> list[dict[str, Any]]:
    rows = []
    for pos, st in enumerate(stacked.steps, 1):
        rows.append(
            {
                "id": st.patch.id,
                "position": pos,
                "status": st.status,
                "commit": st.commit,
                "three_way": st.three_way,
                "files": list(st.files),
                "detail": st.detail,
            }
        )
        if st.status == "conflict":
            where = ", ".join(st.files) or st.detail
            problems.append(f"{st.patch.id} does not apply on the pin ({where})")
        elif st.status == "empty":
            # legitimate (a patch kept for its message), but also what a patch
            # file truncated after its header looks like
            notes.append(f"{st.patch.id} changes nothing: its patch file has no diff")
    return rows


def _matrix(analysis: Analysis, problems: list[str], notes: list[str]) -> dict[str, Any]:
    alone = []
    for a in analysis.alone:
        expected = a.patch.applies_alone
        alone.append(
            {
                "id": a.patch.id,
                "applies": a.applies,
                "expected": expected,
                "tree": a.tree,
                "files": list(a.files),
            }
        )
        if expected is True and not a.applies:
            problems.append(
                f"{a.patch.id} does not apply alone on the pin ({', '.join(a.files)}), "
                "but series.toml says applies_alone = true (fix the patch, or set "
                "applies_alone = false)"
            )
        elif expected is False and a.applies:
            notes.append(
                f"{a.patch.id} applies alone now; series.toml says applies_alone = false "
                "(the record is out of date: set applies_alone = true)"
            )
    pairs = [
        {"a": p.a, "b": p.b, "result": p.result, "files": list(p.files)} for p in analysis.pairs
    ]
    return {"ids": [a["id"] for a in alone], "alone": alone, "pairs": pairs}


def _onto(
    stacked: Stacked,
    analysis: Analysis,
    target: Target | None,
    onto: str | None,
    problems: list[str],
    notes: list[str],
) -> dict[str, Any]:
    assert target is not None
    rows = [_replayed(r) for r in analysis.replayed]
    for st in stacked.steps[len(rows) :]:
        # not on the stack (an earlier patch does not apply on the pin): same keys, no facts
        note = "not replayed: an earlier patch does not apply on the pin"
        rows.append(_replayed(Replayed(st.patch, "not-checked", "not-checked", note=note)))
    for pos, row in enumerate(rows, 1):
        row["position"] = pos
    for r in analysis.replayed:
        _judge(r, onto, problems, notes)
    return {
        "rev": onto,
        "commit": target.node.commit,
        "label": target.label,
        "range": target.range,
        "upstream_commits": len(target.commits),
        "patches": rows,
    }


def _judge(r: Replayed, onto: str | None, problems: list[str], notes: list[str]) -> None:
    """A replay conflict is a problem; a patch found upstream, in whole or in part, a note."""
    ev = f"{r.evidence[0].kind} {r.evidence[0].commit[:12]}" if r.evidence else ""
    where = ", ".join(r.files)
    rem = r.remainder
    if r.replay == "conflict" and r.status == "partly-upstream" and rem is not None:
        if rem.conflicts:
            problems.append(
                f"{r.patch.id} conflicts on {onto} ({where}), and upstream holds part of it "
                f"({_given(rem)}); what remains: {_remaining(rem)}"
            )
        else:
            problems.append(
                f"{r.patch.id} is partly upstream in another form ({_given(rem)}); what remains: "
                f"{_remaining(rem)}. A rebase stops there with the remainder proposed"
            )
    elif r.replay == "conflict" and r.status == "already-upstream":
        problems.append(
            f"{r.patch.id} is upstream in another form ({ev}) and conflicts on {onto} "
            f"({where}): drop it, or keep what upstream lacks"
        )
    elif r.replay == "conflict":
        why = "by itself" if r.cause == "self" else f"because {', '.join(r.blocked_by)} does"
        problems.append(f"{r.patch.id} conflicts on {onto} {why} ({where})")
    elif r.replay == "resolved":
        notes.append(f"{r.patch.id} conflicts on {onto} ({where}), resolved by {r.resolution}")
    elif r.status == "already-upstream":
        notes.append(f"{r.patch.id} is already upstream ({ev}): drop it when moving the pin")
    elif r.status == "partly-upstream" and rem is not None:
        notes.append(
            f"{r.patch.id} is partly upstream ({_given(rem)}): what remains is "
            f"{_remaining(rem)}; a rebase keeps only that"
        )


def _given(rem: Remainder) -> str:
    """Which hunks upstream holds, by which commits."""
    parts = []
    for h in rem.given:
        how = "in its own lines" if h.state == "upstream" else "in another form"
        by = " by " + ", ".join(c[:12] for c in h.commits) if h.commits else ""
        parts.append(f"{h.unit.label} {how}{by}")
    return "; ".join(parts)


def _remaining(rem: Remainder) -> str:
    return ", ".join(h.unit.label for h in rem.remaining)


def upstream_part(rem: Remainder | None) -> dict[str, Any] | None:
    """The ``upstream`` key of a replayed patch (docs/check-conflicts.md)."""
    if rem is None:
        return None
    files: dict[str, list[dict[str, Any]]] = {}
    for h in rem.hunks:
        files.setdefault(h.unit.path, []).append(
            {
                "hunk": h.unit.header,
                "lines": h.unit.label,
                "state": h.state,
                "commits": list(h.commits),
            }
        )
    return {
        "verdict": rem.verdict,
        "clean": rem.clean,
        "remainder_tree": rem.tree,
        "commits": list(rem.commits),
        "remaining": sorted({h.unit.path for h in rem.remaining}),
        "files": [{"path": path, "hunks": hunks} for path, hunks in files.items()],
    }


def _replayed(r: Replayed) -> dict[str, Any]:
    return {
        "id": r.patch.id,
        "pr": r.patch.pr,
        "status": r.status,
        "replay": r.replay,
        "cause": r.cause,
        "blocked_by": list(r.blocked_by),
        "files": list(r.files),
        "conflicts": [
            {"kind": m.kind, "paths": list(m.paths), "message": m.text} for m in r.conflicts
        ],
        "evidence": [
            {"kind": e.kind, "commit": e.commit, "subject": e.subject} for e in r.evidence
        ],
        "upstream_commits": [
            {"commit": c.commit, "subject": c.subject, "files": list(c.files)} for c in r.upstream
        ],
        "tree": r.tree,
        "note": r.note,
        "resolution": r.resolution,
        "upstream": upstream_part(r.remainder),
    }


# -- for people -------------------------------------------------------------------


def render(ui: Ui, data: dict[str, Any]) -> None:
    steps = data["stack"]
    broken = [s for s in steps if s["status"] not in ("clean", "empty")]
    if not broken:
        empty = [s["id"] for s in steps if s["status"] == "empty"]
        verb = "changes" if len(empty) == 1 else "change"
        nothing = f" ({', '.join(empty)} {verb} nothing)" if empty else ""
        ui.result(
            f"on the pin ({data['pin']['label']}): all {len(steps)} patches apply in order{nothing}"
        )
    else:
        table = Table(title=f"on the pin ({data['pin']['label']})")
        for column in ("#", "id", "status", "where"):
            table.add_column(column, overflow="fold")
        for s in broken:
            where = ", ".join(s["files"]) or s["detail"]
            table.add_row(str(s["position"]), s["id"], s["status"], where)
        ui.table(table)
    if data["onto"]:
        ui.table(_onto_table(data["onto"]))
    if data["matrix"]:
        ui.table(_matrix_table(data["matrix"]))
        ui.result(LEGEND)
    for note in data["notes"]:
        ui.result(f"note: {note}")
    if data["problems"]:
        ui.result(f"{len(data['problems'])} problem(s), exit {data['exit_code']}:")
        for problem in data["problems"]:
            ui.result(f"  {problem}")
    else:
        ui.result("ok: the series fits")


def _onto_table(onto: dict[str, Any]) -> Table:
    table = Table(title=f"replayed onto {onto['label']} (upstream since the pin: {onto['range']})")
    for column in ("#", "id", "PR", "status", "details"):
        table.add_column(column, overflow="fold")
    for row in onto["patches"]:
        status = row["status"]
        if status == "conflict":
            status += " (by itself)" if row["cause"] == "self" else " (after an earlier one)"
        pr = f"#{row['pr']}" if row.get("pr") else "-"
        table.add_row(str(row["position"]), row["id"], pr, status, _details(row))
    return table


def _details(row: dict[str, Any]) -> str:
    lines = []
    if row.get("files"):
        lines.append("files: " + ", ".join(row["files"]))
    if row.get("blocked_by"):
        lines.append("caused by the conflict of " + ", ".join(row["blocked_by"]))
    for c in row.get("upstream_commits", [])[:3]:
        lines.append(f"upstream {c['commit'][:12]} {c['subject']}")
    for e in row.get("evidence", []):
        lines.append(f"{e['kind']}: {e['commit'][:12]} {e['subject']}")
    part = row.get("upstream")
    if part and part["verdict"] != "none":
        for f in part["files"]:
            for h in f["hunks"]:
                by = " by " + ", ".join(c[:12] for c in h["commits"]) if h["commits"] else ""
                lines.append(f"{h['lines']}: {_STATE[h['state']]}{by}")
    if row.get("replay") and row["replay"] != row["status"] and row["status"] != "not-checked":
        lines.append(f"replay: {row['replay']}")
    if row.get("note"):
        lines.append(row["note"])
    return "\n".join(lines)


_STATE = {
    "upstream": "upstream has it",
    "other-form": "upstream has it in another form",
    "missing": "remains",
    "conflict": "remains, conflicts",
}


def _matrix_table(matrix: dict[str, Any]) -> Table:
    ids = matrix["ids"]
    cells: dict[tuple[str, str], str] = {}
    for a in matrix["alone"]:
        cells[(a["id"], a["id"])] = CELL[a["applies"]]
    for p in matrix["pairs"]:
        cells[(p["a"], p["b"])] = cells[(p["b"], p["a"])] = CELL[p["result"]]
    table = Table(title="pairwise on the pin")
    table.add_column("")
    for pid in ids:
        table.add_column(pid, justify="center")
    for row in ids:
        table.add_row(row, *(cells.get((row, col), " ") for col in ids))
    return table

"""``series status``: where the checkout stands, at a glance or as ``--json`` (docs/status.md).

What it reads is in series.status.describe; this module prints it.
"""

from __future__ import annotations

from pathlib import Path

from series.commands.options import DIR, JSON
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from typing import Any

    from series.project import Series
    from series.ui import Ui

OPTIONS = (DIR, JSON)


def run(series: Series, ui: Ui, *, directory: Path | None = None, as_json: bool = False) -> Exit:
    from series.status import describe

    report = describe(series, series.checkout(directory))
    if as_json:
        ui.json(report)
    else:
        ui.result("\n".join(_lines(report)))
    return Exit.OK


def _lines(r: dict[str, Any]) -> list[str]:
    pin = r["pin"]
    stand_in = f", sdist stand-in {pin['sdist']}" if pin["sdist"] else ", no sdist stand-in"
    lines = [f"pin:        {pin['ref']} ({pin['commit'][:12]}), source {pin['source']}{stand_in}"]
    c = r["checkout"]
    if c is None:
        return [*lines, "checkout:   none", f"next:       {r['next']}"]
    head = c["head"].removeprefix("refs/heads/")
    lines += [
        f"checkout:   {c['path']} on {c['base'][:12]} (from {c['source']})",
        f"branch:     {c['branch']} at {(c['tip'] or '-')[:12]}; HEAD {head}",
    ]
    applied = [p["id"] for p in r["patches"] if p["applied"]]
    missing = [p["id"] for p in r["patches"] if not p["applied"]]
    lines.append(f"applied:    {len(applied)} of {len(r['patches'])}" + _ids(missing, "not: "))
    lines.append(
        f"unexported: {len(r['unexported'])}" + "".join(f"\n  {u}" for u in r["unexported"])
    )
    dirty = r["uncommitted"]
    lines.append(f"uncommitted: {len(dirty)}" + "".join(f"\n  {d}" for d in dirty[:10]))
    drift = r["drift"]
    if drift is None or not drift["known"]:
        why = drift["why"] if drift else "no checkout state"
        lines.append(f"drift:      not checked: {why}")
    else:
        what = ", ".join(drift["patches"]) or "none"
        pin_note = "; the checkout is not on the pin of series.toml" if drift["pin"] else ""
        lines.append(f"drift:      patches/ vs checkout: {what}{pin_note}")
    if r["interrupted_move"]:
        lines.append("interrupted: the files did not follow the branch's last move")
    if r["backups"]:
        newest = max(r["backups"], key=lambda b: b["ref"])["ref"]
        lines.append(
            f"backups:    {len(r['backups'])} ref(s) of kept work, newest {newest} "
            f"(git -C {c['path']} log REF)"
        )
    if r["replaced"]:
        lines.append(
            f"replaced:   {len(r['replaced'])} object(s) by refs/replace/ in the checkout, "
            "not read by series: it reads the objects themselves "
            f"(git -C {c['path']} --no-replace-objects log)"
        )
    if r["grafted"]:
        lines.append(
            f"grafted:    {len(r['grafted'])} commit(s) given other parents by "
            ".git/info/grafts, not read by series: it reads the commits themselves"
        )
    rb = r["rebase"]
    if rb is not None:
        done = sum(1 for s in rb["steps"] if s["status"] != "pending")
        where = (
            f"stopped at {rb['stopped_at']} ({', '.join(rb['files'])})"
            if rb["stopped_at"]
            else "interrupted"
        )
        if rb["stop"] == "edit":
            where = f"stopped at {rb['stopped_at']} for you to change it"
        if rb["written"] is False:
            where = f"stopped at {rb['stopped_at']}, nothing of it written into the checkout"
        if rb["kind"] == "edit":
            plan = " ".join(
                f"{s['action']} {s['id']}" for s in rb["steps"] if s["action"] != "pick"
            )
            lines.append(f"edit:       {plan}: {done} of {len(rb['steps'])} done, {where}")
        else:
            lines.append(
                f"rebase:     onto {rb['label']}: {done} of {len(rb['steps'])} done, {where}"
            )
    git = r["git_in_progress"]
    if git is not None:
        lines.append(
            f"git:        a git {git['command']} is in progress ({git['marker']}): {git['end']}"
        )
    lines.append(f"next:       {r['next']}")
    return lines


def _ids(ids: list[str], label: str) -> str:
    return f" ({label}{', '.join(ids)})" if ids else ""

"""``series show ID``: one patch, the way a reviewer wants to read it."""

from __future__ import annotations

from series.errors import Exit
from series.manifest import Patch
from series.project import FileStat, MailInfo, Series
from series.ui import Ui


def run(
    series: Series, ui: Ui, *, patch_id: str, diff: bool = False, as_json: bool = False
) -> Exit:
    manifest = series.manifest
    patch = manifest.by_id(patch_id)
    position = manifest.index(patch.id) + 1
    info = series.mail(patch)
    stats = series.stat(patch)
    if as_json:
        ui.json(
            {
                "id": patch.id,
                "position": position,
                "title": info.subject,
                "author": f"{info.author.name} <{info.author.email}>",
                "date": info.author.date,
                "message": info.body,
                "pr": patch.pr,
                "pr_url": patch.pr_url,
                "state": patch.state,
                "state_note": patch.state_note,
                "branch": patch.branch,
                "file": patch.file,
                "files": [{"path": s.path, "added": s.added, "deleted": s.deleted} for s in stats],
                "subset": list(patch.subset),
                "applies_alone": patch.applies_alone,
                "pin_failures": [
                    {"tests": f.tests, "reason": f.reason} for f in patch.pin_failures
                ],
                "diff": info.diff.decode("utf-8", "replace") if diff else None,
            }
        )
        return Exit.OK
    ui.result("\n".join(_lines(patch, position, len(manifest.patches), info, stats)))
    if diff:
        ui.out.file.write("\n" + info.diff.decode("utf-8", "replace"))
    return Exit.OK


def _lines(
    patch: Patch, position: int, count: int, info: MailInfo, stats: list[FileStat]
) -> list[str]:
    lines = [
        f"{patch.id}  ({position} of {count})  {info.subject}",
        f"Author:   {info.author.name} <{info.author.email}>",
        f"Date:     {info.author.date}",
        f"Upstream: {patch.pr_url or 'no PR'}  [{patch.state}]"
        + (f" {patch.state_note}" if patch.state_note else ""),
        f"Branch:   {patch.branch}",
        f"Alone:    {_alone(patch.applies_alone)}",
        f"File:     {patch.file}",
        "",
        *(f"    {line}" if line else "" for line in info.body.splitlines()),
        "",
    ]
    width = max((len(s.path) for s in stats), default=0)
    for s in stats:
        counts = "binary" if s.added is None else f"+{s.added} -{s.deleted}"
        lines.append(f" {s.path:<{width}}  {counts}")
    lines.append("")
    lines.append("Test subset (KERAS_BACKEND=torch):")
    lines += [f"  {t}" for t in patch.subset] or ["  (none)"]
    if patch.pin_failures:
        lines.append("Fail at the pin too (not this patch's fault):")
        lines += [f"  {f.tests}  -- {f.reason}" for f in patch.pin_failures]
    return lines


def _alone(value: bool | None) -> str:
    if value is None:
        return "not recorded (series check-conflicts computes it)"
    return "applies on the bare pin" if value else "needs earlier patches of the series"

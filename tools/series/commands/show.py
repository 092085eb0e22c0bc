"""``series show ID``: one patch, the way a reviewer wants to read it."""

from __future__ import annotations

from series.commands.options import ENVELOPE, Option
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from typing import Any

    from series.manifest import Patch
    from series.project import FileStat, MailInfo, Series
    from series.ui import Ui

OPTIONS = (
    Option("id", "the patch id, e.g. P1", key="patch_id"),
    Option("--diff", "include the diff", action="store_true"),
    Option(
        "--no-pager",
        "do not page --diff on a terminal (default: $GIT_PAGER, $PAGER or less)",
        key="pager",
        action="store_false",
    ),
    ENVELOPE,
)


def run(
    series: Series,
    ui: Ui,
    *,
    patch_id: str,
    diff: bool = False,
    as_json: bool = False,
    pager: bool = True,
) -> Exit:
    from series.conflicts import alone

    manifest = series.manifest
    patch = manifest.by_id(patch_id)
    position = manifest.index(patch.id) + 1
    info = series.mail(patch)
    stats = series.stat(patch)
    computed = alone.recall(series, patch)
    if as_json:
        ui.json(_json(patch, position, info, stats, computed, diff))
        return Exit.OK
    text = "\n".join(_lines(patch, (position, len(manifest.patches)), info, stats, computed))
    if diff:  # long: through the pager on a terminal, like git show
        ui.page(text + "\n\n" + info.diff.decode("utf-8", "replace"), pager=pager)
    else:
        ui.result(text)
    return Exit.OK


def _json(
    patch: Patch,
    position: int,
    info: MailInfo,
    stats: list[FileStat],
    computed: dict[str, Any] | None,
    diff: bool,
) -> dict[str, Any]:
    return {
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
        "applies_alone_computed": computed,
        "pin_failures": [{"tests": f.tests, "reason": f.reason} for f in patch.pin_failures],
        "diff": info.diff.decode("utf-8", "replace") if diff else None,
    }


def _lines(
    patch: Patch,
    where: tuple[int, int],
    info: MailInfo,
    stats: list[FileStat],
    computed: dict[str, Any] | None,
) -> list[str]:
    lines = [
        f"{patch.id}  ({where[0]} of {where[1]})  {info.subject}",
        f"Author:   {info.author.name} <{info.author.email}>",
        f"Date:     {info.author.date}",
        f"Upstream: {patch.pr_url or 'no PR'}  [{patch.state}]"
        + (f" {patch.state_note}" if patch.state_note else ""),
        f"Branch:   {patch.branch}",
        f"Alone:    {_alone(patch.applies_alone, computed)}",
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


def _alone(recorded: bool | None, computed: dict[str, Any] | None) -> str:
    """The record in series.toml, labelled as one, and what check-conflicts last found."""
    words = {True: "applies on the bare pin", False: "needs earlier patches of the series"}
    text = (
        "not recorded in series.toml"
        if recorded is None
        else f"{words[recorded]} (as recorded in series.toml)"
    )
    if computed is None:
        return text + "; not computed yet (series check-conflicts computes it)"
    found = bool(computed.get("applies"))
    pin = str(computed.get("pin", ""))[:12]
    if recorded is not None and found != recorded:
        return (
            f"{text}; but check-conflicts found it {'applies' if found else 'does not apply'} "
            f"alone on {pin} ({computed.get('when')}): the record is out of date"
        )
    return f"{text}; check-conflicts: {words[found]} ({pin}, {computed.get('when')})"

"""What the rebase says and records of a patch upstream holds in whole or in part.

series.stack.upstream_parts weighs a patch against upstream when the rebase
starts (the remainder engine, series.evidence) and leaves its answer in the
plan (series.stack.rebase_plan.Part); what a stop says of it and the
``partly_upstream`` records of series.toml are made here from that Part
alone, so that ``--continue`` and ``--skip``, which walk on from a saved plan,
load none of the engine.
"""

from __future__ import annotations

from pathlib import Path

from series.errors import ConflictError
from series.manifest import UpstreamPart
from series.stack.rebase_plan import Part


def records(part: Part, onto: str) -> list[UpstreamPart]:
    """The ``partly_upstream`` records of series.toml for a reduced patch."""
    return [UpstreamPart(c, tuple(h.split(", ")), onto) for c, h in part.took]


def stop_lines(pid: str, part: Part, drop_merged: bool) -> list[str]:
    """What an ordinary stop says of a patch upstream holds in whole or in part."""
    if part.verdict == "full":
        lines = [f"upstream holds all of {pid}:", *part.given]
        lines.append(
            f"`series rebase --skip` drops {pid} (series.toml records why); a rebase with "
            "--drop-merged drops it without stopping"
        )
        return lines
    lines = [f"{pid} is partly upstream; upstream holds:", *part.given, "what remains:"]
    lines += list(part.remaining)
    if not drop_merged:
        lines.append(
            f"to keep only what remains: `series rebase --abort`, then start again with "
            f"--drop-merged; `series rebase --skip` drops all of {pid}"
        )
    return lines


def proposal_error(pid: str, title: str, part: Part, onto: str, where: Path) -> ConflictError:
    """The stop at a patch upstream holds part of in another form."""
    why = [f"{pid} is partly upstream, in another form; given to upstream, hunk by hunk:"]
    why += [*part.given, "what remains (the proposed remainder):", *part.remaining]
    why.append(
        f"{where} holds the proposed remainder, without conflict markers: upstream's side "
        f"where the two overlap, {pid}'s side elsewhere (nothing is unmerged)"
    )
    why.append(
        f"a remainder may no longer work on its own (it may use what upstream took "
        f"in another form): `series test {pid}` runs its tests"
    )
    return ConflictError(
        f"rebase stopped: {pid} ({title}) is partly upstream on {onto}",
        why="\n".join(why),
        hint=f"check the remainder (edit and `git -C {where} add` what is not right), then "
        f"`series rebase --continue` (recorded under resolutions/{pid}/ and replayed next "
        f"time); `series rebase --skip` drops all of {pid}; `series rebase --abort` puts "
        "everything back",
    )

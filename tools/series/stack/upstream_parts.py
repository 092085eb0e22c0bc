"""What the rebase does with a patch that upstream holds in whole or in part.

The remainder engine (series.evidence.weigh) says, hunk by hunk, what the
new upstream holds of a patch; this module turns its answer into the
rebase's action for the step and into the records the rebase leaves:

* ``drop``: upstream holds all of it (``--drop-merged``): nothing of the
  patch leaves the series that upstream does not hold, checked by merges,
  never by a PR number alone;
* ``reduce``: upstream holds part of it in the patch's own lines; git's
  merge already is the patch reduced to the rest, so it is picked as it
  is, and the summary and series.toml say what upstream took;
* ``propose``: upstream holds part of it in another form (the merge
  conflicts only with the commits that carry the evidence,
  ``--drop-merged``): the rebase stops with the proposed remainder checked
  out (upstream's side where the two overlap, the patch's elsewhere);
* ``plain``: anything else, as before (picked, empty, or a conflict stop,
  whose message then says what upstream holds).

``parts`` are the ``partly_upstream`` records of series.toml, ``trailers``
the ``Partly-Upstream`` trailers of the patch's message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from series.evidence import Ask, Remainder, weigh
from series.git import LogEntry, TreeMerge
from series.manifest import UpstreamPart
from series.merge import Merger, Node
from series.stack.rebase_plan import Part


def weigh_series(
    merger: Merger,
    patches: Sequence[tuple[str, Node, Node]],
    onto: Node,
    evidence: Mapping[str, Sequence[str]],
    commits: Sequence[LogEntry],
) -> dict[str, Remainder]:
    """What upstream holds of each patch (id, parent, commit) with ``evidence``, on ``onto``.

    Weighed when the rebase starts, each patch on the new base alone: what
    upstream took of a patch is in upstream's lines, not in the patches
    before it.
    """
    asks = [
        Ask(pid, parent, patch, onto, tuple(evidence[pid]))
        for pid, parent, patch in patches
        if evidence.get(pid)
    ]
    return weigh(merger, asks, commits)


def action(rem: Remainder | None, merge: TreeMerge, *, drop_merged: bool) -> str:
    """drop | reduce | propose | plain (module docstring)."""
    if rem is None or rem.verdict == "none":
        return "plain"
    if rem.verdict == "full":
        return "drop" if drop_merged else "plain"
    if merge.clean:
        return "reduce"
    if drop_merged and not rem.conflicts:
        return "propose"
    return "plain"


def took(rem: Remainder) -> dict[str, list[str]]:
    """upstream commit -> the hunks it took ("path:a-b in its own lines|in another form")."""
    out: dict[str, list[str]] = {}
    for h in rem.given:
        how = "in its own lines" if h.state == "upstream" else "in another form"
        for commit in h.commits or ("",):
            out.setdefault(commit, []).append(f"{h.unit.label} {how}")
    return out


def given_lines(rem: Remainder, subjects: dict[str, str]) -> list[str]:
    """One line per hunk upstream holds, with the commit that took it."""
    lines = []
    for h in rem.given:
        how = "in its own lines" if h.state == "upstream" else "in another form"
        by = "; ".join(f"{c[:12]} {subjects.get(c, '')}".rstrip() for c in h.commits)
        lines.append(f"  {h.unit.label}: upstream has it {how}" + (f" ({by})" if by else ""))
    return lines


def remaining_lines(rem: Remainder) -> list[str]:
    return [f"  {h.unit.label}" for h in rem.remaining]


def parts(rem: Remainder, onto: str) -> list[UpstreamPart]:
    """The ``partly_upstream`` records of series.toml for ``rem``."""
    return [UpstreamPart(c, tuple(hunks), onto) for c, hunks in took(rem).items() if c]


def trailers(rem: Remainder) -> list[tuple[str, str]]:
    """(commit, what it took) for the ``Partly-Upstream`` trailers."""
    return [(c, ", ".join(hunks)) for c, hunks in took(rem).items() if c]


def summary(rem: Remainder) -> str:
    """For the summary table: what upstream took, what is left."""
    given = "; ".join(f"{c[:12]}: {', '.join(h)}" for c, h in took(rem).items())
    left = ", ".join(h.unit.label for h in rem.remaining)
    return f"upstream took {given}; kept {left}"


def part_of(rem: Remainder, subjects: Mapping[str, str]) -> Part | None:
    """The plan's record of ``rem`` (None: upstream holds none of it)."""
    if rem.verdict not in ("full", "partial"):
        return None
    return Part(
        rem.verdict,
        bool(rem.other_form),
        bool(rem.conflicts),
        tuple(trailers(rem)),
        tuple(given_lines(rem, dict(subjects))),
        tuple(remaining_lines(rem)),
    )

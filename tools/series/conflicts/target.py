"""The ``--onto`` target of check-conflicts and rebase: the upstream revision as a merge node.

Getting the revision and the upstream commits since the pin is the
upstream package's (series.upstream); this only turns its answer into
the :class:`~series.conflicts.analysis.Target` the analysis reads.
"""

from __future__ import annotations

from series.conflicts.analysis import Target
from series.conflicts.merger import Node
from series.git import Repo
from series.upstream import Base, UpstreamSource


def resolve_target(
    upstream: UpstreamSource,
    onto: str,
    *,
    base: Base,
    into: Repo,
    scratch: str,
    announce: bool = False,
) -> Target:
    """``onto`` as a merge node in ``into``, with the upstream commits since ``base``.

    ``announce``: say first where REV comes from (the network may wait).
    """
    rev = upstream.revision(onto, base=base, into=into, scratch=scratch, announce=announce)
    node = Node(into.tree_of(rev.commit), rev.commit)
    return Target(rev.label, node, rev.revs, rev.range, rev.commits)

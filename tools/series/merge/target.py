"""The ``--onto`` target of check-conflicts and rebase: the upstream revision as a merge node.

Getting the revision and the upstream commits since the pin is the
upstream package's (series.upstream); this only turns its answer into
the :class:`Target` the merges and the evidence read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from series.git.history import LogEntry
from series.git.repo import Repo
from series.merge.merger import Node

TYPE_CHECKING = False  # the upstream's machinery (fetch, sdist) is not loaded by a resume
if TYPE_CHECKING:
    from series.upstream import Base, Revision, UpstreamSource


@dataclass
class Target:
    label: str
    node: Node
    revs: list[str]  # the upstream commits since the pin, as rev-list arguments
    range: str
    commits: list[LogEntry] = field(default_factory=list)


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
    return target_of(rev, into)


def target_of(rev: Revision, into: Repo) -> Target:
    """A revision series.upstream found in ``into``, as a merge target."""
    node = Node(into.objects.tree_of(rev.commit), rev.commit)
    return Target(rev.label, node, rev.revs, rev.range, rev.commits)

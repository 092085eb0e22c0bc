"""The ``--onto`` target of check-conflicts and rebase: the upstream revision as a merge node.

Getting the revision and the upstream commits since the pin is the
upstream package's (series.upstream); this only turns its answer into
the :class:`~series.conflicts.analysis.Target` the analysis reads.
"""

from __future__ import annotations

from pathlib import Path

from series.conflicts.analysis import Target
from series.conflicts.merger import Node
from series.git import Repo
from series.manifest import Manifest
from series.upstream import Base
from series.upstream.revision import drop_scratch, resolve_revision, scratch_prefix

__all__ = ["drop_scratch", "resolve_target", "scratch_prefix"]


def resolve_target(
    manifest: Manifest,
    cache_dir: Path,
    repo: Repo,
    base: Base,
    onto: str,
    url: str | None,
    scratch: str,
) -> Target:
    rev = resolve_revision(manifest, cache_dir, repo, base, onto, url, scratch)
    node = Node(repo.tree_of(rev.commit), rev.commit)
    return Target(rev.label, node, rev.revs, rev.range, rev.commits)

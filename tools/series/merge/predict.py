"""Predicting a replay in batches, with work linear in the number of patches.

A replay (check-conflicts ``--onto``, rebase) cherry-picks patch k onto
the result after patch k-1: one merge per patch, each needing the one
before. Both replay through a merge stream (series.git.mergetree.MergeStream:
one long-lived process answering one merge at a time); where that cannot
answer, each merge would take a git process of its own. To run the
replay in two batches instead,
the tree after each patch is *predicted* first, then every step is
*verified* against the prediction before it: where prediction and
verification agree, the replay is known without a process per patch.

Predicting the tree after patch k as one merge of the whole stack up to
k into the revision makes patch j's files merged again for every k >= j:
about N^2/2 content merges where upstream touched the patched files
(9 s at 200 patches over 5,000 upstream commits). So the patches go in
chunks of ``CHUNK``: within a chunk that starts after patch c, whose
tree ``onto`` is known (the revision itself, or the verified prediction
of the chunk before), the tree after patch k is predicted as the merge
of the patches c+1..k into ``onto`` over patch c's commit. Each patch's
files are merged at most ``CHUNK`` times, and a stack of ``CHUNK``
patches or fewer is predicted exactly as before, in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from series.git.mergetree import TreeMerge
from series.merge.merger import Job, Node

CHUNK = 16


def predict_jobs(nodes: Sequence[Node], start: int, onto: Node) -> list[Job]:
    """The predictions of the chunk after patch ``start`` (``nodes[0]`` is the pin)."""
    end = min(len(nodes) - 1, start + CHUNK)
    return [Job(nodes[start], onto, nodes[k]) for k in range(start + 1, end + 1)]


def verify_jobs(
    nodes: Sequence[Node], start: int, onto: Node, predicted: Sequence[TreeMerge]
) -> list[Job | None]:
    """Each step of the chunk cherry-picked onto the prediction before it (None: none clean)."""
    jobs: list[Job | None] = []
    for i in range(len(predicted)):
        k = start + 1 + i
        prev = onto if i == 0 else clean_node(predicted[i - 1])
        jobs.append(Job(nodes[k - 1], prev, nodes[k]) if prev else None)
    return jobs


def clean_node(merge: TreeMerge) -> Node | None:
    return Node(merge.tree) if merge.clean else None

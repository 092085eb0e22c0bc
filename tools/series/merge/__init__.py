"""The merge engine: three-way merges of trees, in memory, in batches.

* :mod:`~series.merge.merger`: merge jobs (``Node``, ``Job``) and the
  batched ``git merge-tree`` that runs them (``Merger``);
* :mod:`~series.merge.stacked`: the series as merge inputs (``Stacked``, ``PinStep``);
* :mod:`~series.merge.predict`: a replay predicted and verified in batches,
  chunk by chunk, so the work grows linearly with the patches;
* :mod:`~series.merge.target`: the ``--onto`` revision (from series.upstream)
  as a merge target (``Target``, ``resolve_target``).
* :mod:`~series.merge.resolutions`: recorded resolutions of conflicted
  merges (``resolutions/<id>/``): looked up and replayed, and recorded.

Used by check-conflicts (series.conflicts) and rebase (series.stack.rebase)
alike; it imports no workflow (tests/test_architecture.py).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from series.merge.merger import Job, Merger, Node
    from series.merge.stacked import PinStep, Stacked
    from series.merge.target import Target, resolve_target, target_of

__all__ = ["Job", "Merger", "Node", "PinStep", "Stacked", "Target", "resolve_target", "target_of"]


def __getattr__(name: str) -> Any:
    """A name of the engine, its module imported on first use: a rebase's resume
    (``--skip``, ``--continue``) loads the merges and the recorded resolutions, not the
    series as merge inputs (``stacked``, with the manifest's records) nor ``--onto``'s
    target (``target``)."""
    if name in ("Job", "Merger", "Node"):
        from series.merge import merger

        value = getattr(merger, name)
    elif name in ("PinStep", "Stacked"):
        from series.merge import stacked

        value = getattr(stacked, name)
    elif name in ("Target", "resolve_target", "target_of"):
        from series.merge import target

        value = getattr(target, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value

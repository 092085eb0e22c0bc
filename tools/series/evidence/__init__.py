"""The upstream evidence engine: which patches upstream already has, and why we think so.

* :mod:`~series.evidence.find`: patch-ids and PR numbers in the upstream
  commits since the pin (``Evidence``, ``find_evidence``);
* :mod:`~series.evidence.patchids`: the patch-ids of commits, kept in the
  per-user cache by commit id (rebase reads them there first);
* :mod:`~series.evidence.hunks`: a patch's diff cut into single hunks;
* :mod:`~series.evidence.remainder`: per hunk, what the new upstream holds
  (in the patch's lines or in another form) and lacks, and the patch
  reduced to what it lacks (``Ask``, ``Hunk``, ``Remainder``, ``weigh``).

Used by check-conflicts (series.conflicts) and rebase (series.stack.rebase)
alike; it imports no workflow (tests/test_architecture.py).
"""

from series.evidence.find import Evidence, find_evidence
from series.evidence.remainder import Ask, Hunk, Remainder, weigh

__all__ = ["Ask", "Evidence", "Hunk", "Remainder", "find_evidence", "weigh"]

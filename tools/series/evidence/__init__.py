"""The upstream evidence engine: which patches upstream already has, and why we think so.

* :mod:`~series.evidence.find`: patch-ids and PR numbers in the upstream
  commits since the pin (``Evidence``, ``find_evidence``).

Used by check-conflicts (series.conflicts) and rebase (series.stack.rebase)
alike; it imports no workflow (tests/test_architecture.py).
"""

from series.evidence.find import Evidence, find_evidence

__all__ = ["Evidence", "find_evidence"]

"""Conflicts: does the series still fit its pin, and another upstream?

* :mod:`~series.conflicts.pinstack`: the stack on its pin, as merge inputs
  (merged by series.merge);
* :mod:`~series.conflicts.analysis`: the matrix and the replay (the verdicts);
* :mod:`~series.conflicts.report`: the report dict and its tables;
* :mod:`~series.conflicts.check`: all of it, for ``series check-conflicts``.
"""

from series.conflicts.check import check
from series.conflicts.report import render

__all__ = ["check", "render"]

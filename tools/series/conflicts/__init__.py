"""Conflicts: does the series still fit its pin, and another upstream?

* :mod:`~series.conflicts.pinstack`: the stack on its pin, as merge inputs
  (merged by series.merge);
* :mod:`~series.conflicts.analysis`: the matrix and the replay (the verdicts);
* :mod:`~series.conflicts.report`: the report dict and its tables;
* :mod:`~series.conflicts.check`: all of it, for ``series check-conflicts``;
* :mod:`~series.conflicts.alone`: what check-conflicts last found about each
  patch alone, which ``series show`` reads.

The package imports none of them itself: ``series show`` reads ``alone``
without loading the merge and evidence engines.
"""

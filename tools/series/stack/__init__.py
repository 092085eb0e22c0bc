"""The stack workflows: a checkout written from the patches, and back.

* :mod:`~series.stack.apply`: the stack (built by :mod:`series.builder`) -> a checkout;
* :mod:`~series.stack.export`: a checkout's commits -> patch files and manifest;
* :mod:`~series.stack.branches`: one branch per patch (``series branches``);
* :mod:`~series.stack.rebase`: the series moved onto a new upstream (``series rebase``);
* :mod:`~series.stack.rangediff`: what a rebase changed, per patch (``series range-diff``).
"""

"""The stack: patch files turned into commits, memoised, and written back.

* :mod:`~series.stack.build`: patch files -> commits, in memory, as ``git am -3``;
* :mod:`~series.stack.memo`: the memo of built commits in the cache repository;
* :mod:`~series.stack.export`: a checkout's commits -> patch files and manifest;
* :mod:`~series.stack.message`: the ``Series-Id`` trailer.

Nothing here knows the ``Series`` object: callers hand over the patches
with the paths of their files (:class:`~series.stack.build.PatchFile`).
"""

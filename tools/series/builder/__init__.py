"""The stack builder: patch files turned into commits, and nothing above ``git/``.

* :mod:`~series.builder.build`: patch files -> commits, in memory, as ``git am -3``;
* :mod:`~series.builder.memo`: the memo of built commits in the cache repository;
* :mod:`~series.builder.message`: the ``Series-Id`` trailer.

It imports only ``series.git``, ``series.errors`` and ``series.refnames``
(tests/test_architecture.py): callers hand over the patches with the paths
of their files (:class:`~series.builder.build.PatchFile`), any entry with an
``id``, and get the same entries back.
"""

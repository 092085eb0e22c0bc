"""Every way of getting an upstream revision, in the per-user cache or a checkout.

A command gets one :class:`UpstreamSource` from its ``Series`` and asks it
for the pin or for a revision. Below it: ``fetch`` (the one fetch routine
and the policy that says how deep, whether to deepen to the pin, whether
to remember an unreachable URL, whether to fall back to every ref),
``pin`` (the pinned base, from git or the sdist), ``revision`` (``--onto
REV`` and the upstream commits since the pin), ``unreachable`` (network
patience, remembering an upstream that did not answer) and
``sdist_download`` (a release sdist fetched as a file). git/remote.py is
the git-level primitive this package is the policy above.
"""

from __future__ import annotations

from series.upstream.pin import Base, cache_repo, import_sdist, resolve
from series.upstream.rangelog import range_log
from series.upstream.refs import SCRATCH
from series.upstream.revision import Revision
from series.upstream.source import Onto, UpstreamSource

__all__ = [
    "SCRATCH",
    "Base",
    "Onto",
    "Revision",
    "UpstreamSource",
    "cache_repo",
    "import_sdist",
    "range_log",
    "resolve",
]

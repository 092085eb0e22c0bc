"""Every way of getting an upstream revision, in the per-user cache or a checkout.

``pin`` (the pinned base, from git or the sdist), ``revision`` (``--onto
REV`` and the upstream commits since the pin), ``unreachable`` (network
patience, remembering an upstream that did not answer) and
``sdist_download`` (a release sdist fetched as a file).
"""

from __future__ import annotations

from series.upstream.pin import Base, cache_repo, fetch_base, import_sdist, pin_refspecs, resolve

__all__ = ["Base", "cache_repo", "fetch_base", "import_sdist", "pin_refspecs", "resolve"]

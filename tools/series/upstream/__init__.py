"""Every way of getting an upstream revision, in the per-user cache or a checkout.

A command gets one :class:`UpstreamSource` from its ``Series`` and asks it
for the pin or for a revision. Below it: ``fetch`` (the one fetch routine
and the policy that says how deep, whether to deepen to the pin, whether
to remember an unreachable URL, whether to fall back to every ref),
``pin`` (the pinned base, from git or the sdist), ``base`` (the pin as the
cache has it already: no fetch, no sdist), ``revision`` (``--onto REV`` and
the upstream commits since the pin), ``unreachable`` (network patience,
remembering an upstream that did not answer) and ``sdist_download`` (a
release sdist fetched as a file). git/remote.py is the git-level primitive
this package is the policy above.

The names below are loaded when first used (``__getattr__``), as the git
layer's are: ``series range-diff`` and ``series branches`` ask
:func:`cached_pin` and import neither the fetch nor the sdist machinery
when the cache has the pin.
"""

from __future__ import annotations

from types import ModuleType

TYPE_CHECKING = False  # typing is not imported: a range-diff loads this package
if TYPE_CHECKING:
    from typing import Any

    from series.upstream.base import Base, cache_repo, cached_pin, pack_cache, pin_kept
    from series.upstream.pin import import_sdist, resolve
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
    "cached_pin",
    "import_sdist",
    "pack_cache",
    "pin_kept",
    "range_log",
    "resolve",
]


def __getattr__(name: str) -> Any:
    """A name of the package, its module imported on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_module(name), name)
    globals()[name] = value
    return value


def _module(name: str) -> ModuleType:
    if name in ("Base", "cache_repo", "cached_pin", "pack_cache", "pin_kept"):
        from series.upstream import base

        return base
    if name in ("import_sdist", "resolve"):
        from series.upstream import pin

        return pin
    if name == "range_log":
        from series.upstream import rangelog

        return rangelog
    if name == "SCRATCH":
        from series.upstream import refs

        return refs
    if name == "Revision":
        from series.upstream import revision

        return revision
    from series.upstream import source

    return source

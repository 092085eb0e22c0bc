"""The names of the refs that hold upstream revisions in the cache repository.

``refs/series/git/<commit>`` is a pinned commit fetched from git (or kept
by ``series rebase`` when it moved the pin), ``refs/series/sdist/<name>-
<sha256 prefix>`` an sdist imported as a commit, ``refs/series/scratch/``
the revisions one check-conflicts run fetched for ``--onto`` (deleted when
it ends), ``refs/series/checkout/<commit>`` a checkout's base brought back
into a new cache. No other module spells them (tests/test_architecture.py).
"""

from __future__ import annotations

from series.refnames import UPSTREAM_ROOT

GIT = UPSTREAM_ROOT + "git/"
SDIST = UPSTREAM_ROOT + "sdist/"
SCRATCH = UPSTREAM_ROOT + "scratch/"
CHECKOUT = UPSTREAM_ROOT + "checkout/"


def git_pin(commit: str) -> str:
    """The ref that keeps the upstream commit ``commit``, fetched from git."""
    return f"{GIT}{commit}"


def sdist(name: str, digest: str) -> str:
    """The ref that keeps the import of the sdist ``name`` whose sha256 is ``digest``."""
    return f"{SDIST}{name}-{digest[:16]}"


def checkout_base(commit: str) -> str:
    """The ref that keeps a checkout's base ``commit``, copied back from the checkout."""
    return f"{CHECKOUT}{commit}"

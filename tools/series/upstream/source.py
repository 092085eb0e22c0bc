"""``UpstreamSource``: the one object through which a command gets upstream revisions.

Built once per command from the ``Series`` (:meth:`series.project.Series.upstream`):
series.toml's ``[upstream]``, the per-user cache, the ``--upstream``
override and the status line the UI prints. It answers the pin's base
(:meth:`pin`: git or the sdist, ``auto``'s fallback, the memory of an
unreachable URL), a revision with the upstream commits since the pin
(:meth:`revision`: what ``--onto`` needs, fetched under a run's
:meth:`scratch` refs or the caller's own), and keeps a revision found in
a checkout in the cache (:meth:`keep`). Every fetch goes through
series.upstream.fetch with the policy that says how.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from series.errors import SeriesError
from series.git import Repo
from series.manifest import Upstream
from series.upstream.base import Base, cache_repo
from series.upstream.pin import keep, resolve
from series.upstream.revision import Revision, drop_scratch, resolve_revision, scratch_prefix
from series.upstream.unreachable import stall

Say = Callable[[str], None]


def _quiet(text: str) -> None:
    pass


@dataclass(frozen=True)
class Onto:
    """What :meth:`UpstreamSource.onto` found: the pin, and REV on demand."""

    source: UpstreamSource
    base: Base
    rev: str | None
    into: Repo
    scratch: str

    def revision(self) -> Revision | None:
        """REV in ``into`` with the upstream commits since the pin (None without REV)."""
        if self.rev is None:
            return None
        return self.source.revision(
            self.rev, base=self.base, into=self.into, scratch=self.scratch, announce=True
        )


@dataclass(frozen=True)
class UpstreamSource:
    pinned: Upstream  # series.toml's [upstream]
    cache_dir: Path
    override: str | None = None  # --upstream: a URL, a path or an sdist archive
    say: Say = _quiet  # a line before anything that may wait (a lock, the network)

    @property
    def cache(self) -> Repo:
        return cache_repo(self.cache_dir)

    def pin(self, *, source: str | None = None, why: str = "--source") -> Base:
        """The pinned base in the cache repository (``why``: where ``source`` came from)."""
        return resolve(
            self.pinned,
            self.cache_dir,
            source=source,
            override=self.override,
            why=why,
            say=self.say,
        )

    @contextmanager
    def scratch(self, repo: Repo) -> Iterator[str]:
        """A ref prefix of its own in ``repo`` for what one run fetches; deleted at the end."""
        prefix = scratch_prefix()
        try:
            yield prefix
        finally:
            drop_scratch(repo, prefix, self.say)

    @staticmethod
    def patience() -> str:
        """How long a fetch waits, as the announcement before one says it."""
        return f"gives up after {stall()} s without data (SERIES_NET_TIMEOUT)"

    def revision(
        self, rev: str, *, base: Base, into: Repo, scratch: str, announce: bool = False
    ) -> Revision:
        """REV in ``into`` (fetched under ``scratch``) and the upstream commits since ``base``.

        ``announce``: say first where it comes from and how long a fetch waits.
        """
        if announce and not rev.startswith("sdist:"):
            where = self.override or self.pinned.repository
            self.say(
                f"onto: {rev} from the cache, else fetched from {where}; a fetch {self.patience()}"
            )
        return resolve_revision(
            self.pinned,
            self.cache_dir,
            rev,
            base=base,
            repo=into,
            url=self.override,
            scratch=scratch,
            say=self.say,
        )

    @contextmanager
    def onto(self, rev: str | None, *, source: str | None, into: Repo) -> Iterator[Onto]:
        """The pin, and REV when there is one: everything check-conflicts asks of upstream.

        The pin comes from the ``--upstream`` URL when REV is fetched from
        git there (a git URL has the pin's real commit too, as a rule), else,
        or when the URL does not have it, as series.toml says. REV is
        fetched when :meth:`Onto.revision` asks for it, under a scratch
        prefix of the run in ``into``, deleted when the block ends.
        """
        sdist = (rev is not None and rev.startswith("sdist:")) or source == "sdist"
        base = None
        if rev is not None and self.override and not sdist:
            # not there: the usual source, and REV reports the URL's problem
            with contextlib.suppress(SeriesError):
                base = self.pin(source=source)
        if base is None:
            base = replace(self, override=None).pin(source=source)
        self.say(f"upstream: {base.label} [{base.source}: {base.reason}]")
        if rev is None:
            yield Onto(self, base, None, into, "")
            return
        with self.scratch(into) as prefix:
            yield Onto(self, base, rev, into, prefix)

    def keep(self, commit: str, *, source: Path, ref: str, pin: bool = True) -> str | None:
        """Keep ``commit``, ``ref`` in the repository at ``source``, in the cache.

        ``pin``: as a git pin, else as a checkout's base. None when it is
        kept, else why not (git's words).
        """
        return keep(self.cache, source, ref, commit, pin=pin)

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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from series.git import Repo
from series.manifest import Upstream
from series.upstream.pin import Base, cache_repo, keep, resolve
from series.upstream.revision import Revision, drop_scratch, resolve_revision, scratch_prefix
from series.upstream.unreachable import stall

Say = Callable[[str], None]


def _quiet(text: str) -> None:
    pass


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
        )

    def keep(self, commit: str, *, source: Path, ref: str, pin: bool = True) -> str | None:
        """Keep ``commit``, ``ref`` in the repository at ``source``, in the cache.

        ``pin``: as a git pin, else as a checkout's base. None when it is
        kept, else why not (git's words).
        """
        return keep(self.cache, source, ref, commit, pin=pin)

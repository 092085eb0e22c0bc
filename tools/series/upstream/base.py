"""The pinned upstream base, and the pin as the per-user cache has it already.

:class:`Base` is what every way of getting the pin answers
(series.upstream.pin: git or the sdist); :func:`cache_repo` is the per-user
cache repository it lands in. :func:`cached_pin` is the pin when a fetch
from git left it in the cache: what :func:`series.upstream.pin.resolve`
answers then, found without importing the fetch and sdist machinery or
taking the cache's lock (a ref is read whole, and nothing takes a pinned
commit out of the cache). A command whose git work is a few queries
(``series range-diff``, ``series branches``) asks it first, and resolves
only when it answers None; :func:`pin_kept`, whether a pin is kept already, is
asked as lightly. :func:`pack_cache` packs the loose objects that
building stacks leaves in the cache repository, once there are many.
"""

from __future__ import annotations

from pathlib import Path

from series.errors import SeriesError
from series.git.objects import loose, misnamed_loose
from series.git.repo import Repo  # not through series.git: it imports every part
from series.git.run import EnvironmentFault
from series.locks import attempt
from series.logs import debug
from series.manifest import Upstream
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast
from series.upstream import refs
from series.upstream.unreachable import forget, recall


class Base(NamedTuple):
    commit: str  # the upstream commit, present in the cache repository
    source: str  # "git" or "sdist"
    label: str  # what it is, for people
    reason: str  # why this source was used


def cache_repo(cache_dir: Path) -> Repo:
    """The cache repository of ``cache_dir``, made when missing; its loose objects
    checked once per process (:func:`check_loose`)."""
    path = cache_dir / "upstream.git"
    if not (path / "HEAD").is_file():
        Repo.init(path, bare=True)
    check_loose(path)
    return Repo(path)


_checked: set[Path] = set()  # the cache repositories whose loose objects this process checked


def check_loose(path: Path) -> None:
    """Refuse the cache repository at ``path`` when a loose object's file holds another
    object than its name says (series.git.objects.misnamed_loose): git would read it as
    the object named, merge it and pack it, and an answer would rest on it. Checked once
    per process, before its first use: what the process writes there itself is git's.
    The packs are not read here: git checks a pack against its index as it opens it.
    Costs the listing of the fan-out directories (none when all is packed, as after a
    build: :func:`pack_cache`), and the inflating and hashing of each loose object."""
    if path in _checked:
        return
    bad = misnamed_loose(path / "objects")
    if bad is not None:
        name, holds = bad
        raise EnvironmentFault(
            "corrupt",
            path,
            f"the git repository {path} is damaged",
            why=f"objects/{name} does not hold the object its name says ({holds})",
            hint=f"delete {path} and run the command again",
        )
    _checked.add(path)


def pin_kept(repo: Repo, commit: str) -> bool:
    """Whether the cache repository ``repo`` keeps ``commit`` as a git pin already (kept
    by a fetch of it, or by ``series rebase``): what series.upstream.pin.keep finds first,
    found without importing the fetch. A rebase onto a pin the cache has asks this alone."""
    return repo.objects.rev(refs.git_pin(commit)) == commit


# Loose objects the cache repository may hold before :func:`pack_cache` packs them: a
# stack of the project's 13 patches built on a new base writes about 100.
LOOSE_LIMIT = 128


def pack_cache(repo: Repo, cache_dir: Path) -> bool:
    """Pack the loose objects of the cache repository ``repo`` (in ``cache_dir``) once
    there are about LOOSE_LIMIT of them; whether it did.

    Every commit of a stack a command builds is written as loose objects, one file
    each, and each one a later ``git range-diff`` or ``diff-tree`` reads is a file
    opened and inflated whole: packed, the same reads cost a third less. Done under the
    cache's lock (``upstream.lock``, as a fetch and ``series cache clean`` take it),
    and not waited for: when another run holds it, the packing is left to a later
    build. git's repack keeps every object and is safe to kill
    (series.git.objects.Objects.repack).
    """
    if loose(repo.path / "objects") < LOOSE_LIMIT:
        return False
    try:
        with attempt(cache_dir / "upstream.lock") as held:
            if held:
                repo.objects.repack(whole=False)
            return held
    except (SeriesError, OSError) as exc:  # the command's work is done; a later build packs
        debug("series.upstream", "cache not packed: %s", getattr(exc, "message", exc))
        return False


def cached_pin(
    upstream: Upstream, repo: Repo, cache_dir: Path, *, source: str | None = None
) -> Base | None:
    """The pin from git, when ``repo`` (the cache) has it already; else None (resolve it).

    What ``resolve(upstream, cache_dir, source=source, override=None)`` answers
    when its fetch finds the pinned ref there: not for the sdist, nor where
    ``auto`` remembers the repository as unreachable (resolve falls back to the
    sdist then); like that fetch, it forgets a remembered failure of the URL.
    """
    wanted = source or upstream.source
    url = upstream.repository
    if wanted == "sdist" or (wanted == "auto" and recall(cache_dir, url) is not None):
        return None
    if repo.objects.rev(refs.git_pin(upstream.commit)) != upstream.commit:
        return None
    forget(cache_dir, url)
    return Base(upstream.commit, "git", f"{url} {upstream.ref} ({upstream.commit[:12]})", "cached")

"""An upstream revision (``--onto REV``) and the upstream commits since the pin.

The revision comes from the cache repository, from ``--upstream`` or from
the manifest's repository (fetched under a scratch ref prefix that is
deleted when the run ends, ``UpstreamSource.scratch``; rebase names its
own), or, for
``sdist:VERSION``, from a PyPI sdist imported like the pin's stand-in.
"upstream since the pin" is the range of commits the revision has that
the pin has not: the evidence that a patch is already upstream, and the
commits that touched a patch's files, are looked for there.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from series.errors import Exit, SeriesError, UsageError
from series.git import ZERO, LogEntry, RefMoved, Repo
from series.git.history import Head
from series.manifest import Sdist, Upstream
from series.pids import alive
from series.upstream.base import Base
from series.upstream.fetch import DEPTH, Policy, Want, fetch
from series.upstream.pin import pin_refspecs, resolve
from series.upstream.rangelog import range_log
from series.upstream.refs import SCRATCH

SCAN_LIMIT = 2000  # upstream commits read when REV shares no history with the pin
INCOMPLETE = "series-incomplete"  # in a git directory: the fetches that did not end

_HEX = re.compile(r"^[0-9a-f]{7,40}$")


def scratch_prefix() -> str:
    return f"{SCRATCH}{os.getpid()}-{os.urandom(4).hex()}/"


@dataclass(frozen=True)
class Revision:
    """An upstream revision in a repository, and the upstream commits since the pin."""

    label: str
    commit: str
    revs: list[str]  # the upstream commits since the pin, as rev-list arguments
    range: str
    commits: list[LogEntry]


def resolve_revision(
    pinned: Upstream,
    cache_dir: Path,
    onto: str,
    *,
    base: Base,
    repo: Repo,
    url: str | None,
    scratch: str,
    say: Callable[[str], None] | None = None,
) -> Revision:
    """``onto`` in ``repo`` (from ``url``, else ``pinned.repository``) and what came since ``base``.

    A git REV is fetched under ``scratch`` as ``<scratch>onto``; ``sdist:VERSION``
    is imported into the cache. The files of the upstream commits are read
    from ``cache_dir`` where it has them (series.upstream.rangelog);
    ``say`` prints its warning about a cache file it did not trust.
    """
    if onto.startswith("sdist:"):
        commit, label = _sdist(pinned, cache_dir, onto.removeprefix("sdist:"), url)
        real = None
    else:
        real = base.commit if base.source == "git" else pinned.commit
        commit = _fetch(repo, onto, url, pinned, scratch, real)
        label = f"{onto} ({commit[:12]})" + (f" from {url}" if url else "")
    revs, described, unrelated, heads = _range(repo, base.commit, commit, real)
    limit = SCAN_LIMIT if unrelated else None
    commits = (
        range_log(repo, revs, cache_dir=cache_dir, max_count=limit, say=say, heads=heads)
        if revs
        else []
    )
    if not unrelated and revs:
        described += f", {len(commits)} commits"
    return Revision(label, commit, revs, described, commits)


def _sdist(pinned: Upstream, cache_dir: Path, version: str, archive: str | None) -> tuple[str, str]:
    package = pinned.sdist.package if pinned.sdist else pinned.name
    other = pinned._replace(
        ref=f"v{version}",
        commit=ZERO,  # no git commit is known for it
        sdist=Sdist(package, version, None),
    )
    try:
        found = resolve(other, cache_dir, source="sdist", override=archive)
    except SeriesError as exc:
        raise UsageError(
            f"cannot get the {package} {version} sdist for --onto",
            why=f"{exc.message}\n{exc.why}",
            hint=exc.hint or "check the version, or pass --upstream FILE.tar.gz",
        ) from None
    return found.commit, found.label


def _fetch(
    repo: Repo, rev: str, url: str | None, pinned: Upstream, scratch: str, real: str | None
) -> str:
    """REV in ``repo``, fetched with no more history than the range since the pin needs."""
    if url is None:
        local = repo.objects.rev(rev)
        if local is not None:
            return local  # in the cache already: no source was named to fetch it from
    source = url or pinned.repository
    if Path(source).exists():
        source = str(Path(source).resolve())
    wanted = f"{scratch}onto"
    pin_specs = [] if real is None or repo.objects.has(real) else pin_refspecs(pinned)
    known, deepen_pin, exclude = _remote_commits(repo, source, rev, pinned, real)
    # A commit here whose fetch did not end (a full disk, a kill) may lack its trees:
    # only a fetch, whose connectivity check git does, makes it whole.
    mark = _incomplete(repo, known) if known is not None else None
    here = (
        known is not None
        and not (mark is not None and os.path.lexists(mark))
        and repo.objects.rev(known) == known
    )
    if mark is not None and not (here and not pin_specs):
        mark.parent.mkdir(exist_ok=True)  # an empty file made at once: no temporary file
        mark.touch()

    def have() -> bool:
        if not here or pin_specs or known is None:
            return False
        # Here already (a warm run): name it, fetch nothing.
        old = repo.refs.value(wanted)
        with repo.refs.transaction(f"series onto: keep {rev} ({known[:12]})") as txn:
            txn.update(wanted, known, old)
        return True

    tries = [[f"+{rev}:{wanted}", *pin_specs[:1], *deepen_pin]]
    if pin_specs:  # the pin is not there: REV alone, the range falls back
        tries.append([f"+{rev}:{wanted}"])
    policy = Policy(
        # A commit here already is fetched without a depth: one would cut its history.
        depth=None if here else DEPTH,
        deepen_to=real,
        exclude=exclude,
        every_ref_under=scratch if _HEX.match(rev) else None,
    )
    fetched = fetch(repo, Want(source, wanted, tries), policy, have=have)
    if fetched.ok and mark is not None:
        mark.unlink(missing_ok=True)  # whole now (git checked what it had)
    commit = (
        repo.objects.rev(wanted)
        if fetched.ok
        else repo.objects.rev(rev)
        if fetched.every_ref
        else None
    )
    if not fetched.ok and commit is None:
        raise _not_fetched(repo, rev, source, fetched.errors[-1] if fetched.errors else "")
    if commit is None:
        raise UsageError(
            f"{rev} in {source} is not a commit",
            hint="name a branch, a tag or a commit id for --onto",
        )
    return commit


def _incomplete(repo: Repo, commit: str) -> Path | None:
    """The mark, in the git directory of ``repo`` (the cache repository, or a checkout a
    rebase fetches into), of a fetch of ``commit`` that has not ended (written before it,
    removed once it succeeded): while it is there, objects of the commit found in the
    repository are not taken for the whole commit. None where the git directory is not
    ``.git`` or the repository itself (a linked work tree): no mark, as before."""
    dot_git = repo.path / ".git"
    if dot_git.is_dir():
        return dot_git / INCOMPLETE / commit
    return repo.path / INCOMPLETE / commit if (repo.path / "HEAD").is_file() else None


def _remote_commits(
    repo: Repo, source: str, rev: str, pinned: Upstream, real: str | None
) -> tuple[str | None, list[str], str | None]:
    """The commit REV names in ``source`` (REV itself if it is a full commit id), the
    refspec that deepens the pin in the same fetch, when it needs it (else none), and
    the source's ref that names the pin (its tag; None if it names another commit).

    A pin that is a shallow root here (a checkout's base is fetched with its tree
    alone) has no parents to meet REV's history at, unless REV descends from it:
    fetching its ref at the same depth brings them with REV, in one fetch, instead
    of a second fetch that deepens afterwards. The ref lands nowhere (no
    destination). The pin's ref is asked in the same ``ls-remote`` as REV: where
    REV's range is longer than the first fetch's depth, it bounds the deepening
    (series.upstream.fetch, ``Policy.exclude``).
    """
    full = _HEX.fullmatch(rev) is not None and len(rev) == 40
    if full:
        return rev, [], None
    tag = pinned.ref if pinned.ref.startswith("refs/") else f"refs/tags/{pinned.ref}"
    if real is None or pinned.ref == "" or tag == rev:
        return repo.remote.rev(source, rev), [], None
    found = repo.remote.revs(source, [rev, tag])
    if found[tag] != real:
        return found[rev], [], None
    shallow = real in repo.history.shallow_roots() and repo.objects.has(real)
    return found[rev], [tag] if shallow else [], tag


def _not_fetched(repo: Repo, rev: str, source: str, failure: str) -> SeriesError:
    """Why ``rev`` could not be fetched: no such revision (2), or no such source (2 or 1)."""
    reachable, answer = repo.remote.reachable(source)
    if reachable:
        return UsageError(
            f"cannot find {rev} in {source}",
            why=failure or "git fetch failed",
            hint="check the revision name, and pass --upstream URL|PATH where it lives",
        )
    if Path(source).exists():
        return UsageError(
            f"{source} is not a git repository, so --onto {rev} cannot be fetched from it",
            why=answer.strip(),
            hint="pass --upstream with the path of a clone that has the revision",
        )
    return SeriesError(
        f"cannot reach {source} to fetch {rev}",
        why=answer.strip() or failure,
        hint="check the network, or pass --upstream PATH of a local clone that has the revision",
        exit_code=Exit.FAILED,
    )


def _range(
    repo: Repo, pin: str, rev: str, real: str | None
) -> tuple[list[str], str, bool, list[Head] | None]:
    """The upstream commits since the pin, as rev-list arguments, what they are, and
    their heads (``History.heads``) when they were read already (None: not read).

    ``real`` is the pin's real upstream commit (the pin itself, or the
    commit an sdist pin stands for): the range is ``REV ^real``, the
    commits REV has that the pin has not, as ``git rebase`` counts them
    (its ``log`` run beside the ``merge-base`` that says whether they share
    history: ``History.base_and_heads``).
    Only when that commit cannot be had are the last SCAN_LIMIT commits
    of REV read instead, and the range says so.
    """
    if rev in (pin, real):
        return [], "none (the revision is the pin)", False, None
    if real is not None and repo.objects.has(real):
        revs = [rev, f"^{real}"]
        merge_base, heads = repo.history.base_and_heads(real, rev, revs).answer()
        if merge_base is not None:
            what = "" if real == pin else " (the commit the sdist pin stands for)"
            return (
                revs,
                f"{real[:12]}{what}..{rev[:12]}, merge base {merge_base[:12]}",
                False,
                heads,
            )
    why = "the pin's upstream commit could not be fetched" if real else "an sdist has no history"
    return (
        [rev, f"^{pin}"],
        f"the last {SCAN_LIMIT} commits of {rev[:12]} ({why}; none shared with the pin)",
        True,
        None,
    )


def drop_scratch(repo: Repo, prefix: str, say: Callable[[str], None]) -> None:
    """Delete the run's scratch refs, and those of runs that were killed (their process
    is gone: named in the prefix, :func:`scratch_prefix`), found in the same listing;
    runs in a ``finally``, so it never raises."""
    found = repo.refs.under(SCRATCH)
    try:
        with repo.refs.transaction("series check-conflicts: drop scratch refs") as txn:
            for name, old in found.items():
                if name.startswith(prefix):
                    txn.delete(name, old)
    except RefMoved as exc:
        say(
            f"warning: could not delete the scratch refs {prefix}* in {repo.path}: "
            f"{exc.why.splitlines()[0]} (they are safe to delete by hand)"
        )
    killed = {n: old for n, old in found.items() if not n.startswith(prefix) and _gone(n)}
    if not killed:
        return
    reason = "series check-conflicts: drop the scratch refs of killed runs"
    # another run sweeping them at once may have deleted them first: no error
    with contextlib.suppress(RefMoved), repo.refs.transaction(reason) as txn:
        for name, old in killed.items():
            txn.delete(name, old)


def _gone(name: str) -> bool:
    """Whether the run that made the scratch ref ``name`` no longer runs."""
    pid = name[len(SCRATCH) :].partition("-")[0]
    return pid.isdigit() and not alive(int(pid))

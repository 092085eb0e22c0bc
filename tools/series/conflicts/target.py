"""The ``--onto`` target of check-conflicts: an upstream revision and the commits since the pin.

The revision comes from the cache repository, from ``--upstream`` or from
the manifest's repository (fetched under a scratch ref prefix that the
caller deletes when the run ends, :func:`drop_scratch`), or, for
``sdist:VERSION``, from a PyPI sdist imported like the pin's stand-in.
"upstream since the pin" is the range of commits the revision has that
the pin has not: the evidence that a patch is already upstream, and the
commits that touched a patch's files, are looked for there.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
from pathlib import Path

from series import upstream
from series.conflicts.analysis import SCAN_LIMIT, Target
from series.conflicts.merger import Node
from series.errors import Exit, SeriesError, UsageError
from series.git import ZERO, RefMoved, Repo
from series.manifest import Manifest, Sdist
from series.ui import Ui

SCRATCH = "refs/series/scratch/"
_HEX = re.compile(r"^[0-9a-f]{7,40}$")


def scratch_prefix() -> str:
    return f"{SCRATCH}{os.getpid()}-{secrets.token_hex(4)}/"


def resolve_target(
    manifest: Manifest,
    cache_dir: Path,
    repo: Repo,
    base: upstream.Base,
    onto: str,
    url: str | None,
    scratch: str,
) -> Target:
    if onto.startswith("sdist:"):
        commit, label = _sdist(manifest, cache_dir, onto.removeprefix("sdist:"), url)
    else:
        commit = _fetch(repo, onto, url, manifest.upstream.repository, scratch)
        label = f"{onto} ({commit[:12]})" + (f" from {url}" if url else "")
    revs, described, unrelated = _range(repo, base.commit, commit, manifest.upstream.commit)
    commits = repo.log_files(revs, max_count=SCAN_LIMIT if unrelated else None) if revs else []
    return Target(label, Node(repo.tree_of(commit), commit), revs, described, commits)


def _sdist(
    manifest: Manifest, cache_dir: Path, version: str, archive: str | None
) -> tuple[str, str]:
    pinned = manifest.upstream
    other = dataclasses.replace(
        pinned,
        ref=f"v{version}",
        commit=ZERO,  # no git commit is known for it
        sdist=Sdist(pinned.sdist.package, version, None),
    )
    try:
        found = upstream.resolve(other, cache_dir, source="sdist", override=archive)
    except SeriesError as exc:
        raise UsageError(
            f"cannot get the {pinned.sdist.package} {version} sdist for --onto",
            why=f"{exc.message}\n{exc.why}",
            hint=exc.hint or "check the version, or pass --upstream FILE.tar.gz",
        ) from None
    return found.commit, found.label


def _fetch(repo: Repo, rev: str, url: str | None, default: str, scratch: str) -> str:
    if url is None:
        local = repo.rev(rev)
        if local is not None:
            return local
    source = url or default
    if Path(source).exists():
        source = str(Path(source).resolve())
    status, failure = repo.fetch(source, [f"+{rev}:{scratch}onto"])
    commit = repo.rev(f"{scratch}onto") if status == 0 else None
    if status != 0:
        if _HEX.match(rev):
            # A commit id that no ref names at its tip: servers refuse to send
            # it alone, so fetch every branch and tag and look for it.
            every = [f"+refs/heads/*:{scratch}heads/*", f"+refs/tags/*:{scratch}tags/*"]
            commit = repo.rev(rev) if repo.fetch(source, every)[0] == 0 else None
        if commit is None:
            raise _not_fetched(repo, rev, source, failure.strip())
    if commit is None:
        raise UsageError(
            f"{rev} in {source} is not a commit",
            hint="name a branch, a tag or a commit id for --onto",
        )
    return commit


def _not_fetched(repo: Repo, rev: str, source: str, failure: str) -> SeriesError:
    """Why ``rev`` could not be fetched: no such revision (2), or no such source (2 or 1)."""
    reachable, unreachable = repo.reachable(source)
    if reachable:
        return UsageError(
            f"cannot find {rev} in {source}",
            why=failure or "git fetch failed",
            hint="check the revision name, and pass --upstream URL|PATH where it lives",
        )
    if Path(source).exists():
        return UsageError(
            f"{source} is not a git repository, so --onto {rev} cannot be fetched from it",
            why=unreachable.strip(),
            hint="pass --upstream with the path of a clone that has the revision",
        )
    return SeriesError(
        f"cannot reach {source} to fetch {rev}",
        why=unreachable.strip() or failure,
        hint="check the network, or pass --upstream PATH of a local clone that has the revision",
        exit_code=Exit.FAILED,
    )


def _range(repo: Repo, pin: str, rev: str, pinned: str) -> tuple[list[str], str, bool]:
    """The upstream commits since the pin, as rev-list arguments, and what they are."""
    if rev == pin:
        return [], "none (the revision is the pin)", False
    if repo.is_ancestor(pin, rev):
        return [rev, f"^{pin}"], f"{pin[:12]}..{rev[:12]}", False
    if pinned != pin and repo.has_object(pinned) and repo.is_ancestor(pinned, rev):
        return (
            [rev, f"^{pinned}"],
            f"{pinned[:12]}..{rev[:12]} (the commit the pin stands for)",
            False,
        )
    return [rev, f"^{pin}"], f"{rev[:12]} and its history (none shared with the pin)", True


def drop_scratch(repo: Repo, prefix: str, ui: Ui) -> None:
    """Delete the run's scratch refs; runs in a ``finally``, so it never raises."""
    try:
        with repo.transaction("series check-conflicts: drop scratch refs") as txn:
            for name, old in repo.refs(prefix).items():
                txn.delete(name, old)
    except RefMoved as exc:
        ui.status(
            f"warning: could not delete the scratch refs {prefix}* in {repo.path}: "
            f"{exc.why.splitlines()[0]} (they are safe to delete by hand)"
        )

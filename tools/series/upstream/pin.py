"""Materialise the pinned upstream commit, from git or from the PyPI sdist.

Both sources land in one per-user bare cache repository
(``$XDG_CACHE_HOME/keras-series/upstream.git``), so a second run fetches or
downloads nothing:

* ``git``: fetch the pinned ref (or the commit itself) from the repository
  URL, a local mirror or a clone, and check that it is the pinned commit.
* ``sdist``: take ``<package>==<version>`` from the package index (as data:
  series.upstream.sdist_download, never pip, which would run the sdist's
  ``setup.py``; kept in the cache), check its sha256, and import
  its tree as one commit with a fixed identity and date, like
  ``gbp import-orig``: the same sdist always gives the same commit id.

``auto`` tries git first and falls back to the sdist, saying why.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

from series.errors import Exit, SeriesError, UsageError
from series.git import ZERO, EnvironmentFault, Ident, Repo
from series.git.run import scratch_dir
from series.locks import exclusive
from series.manifest import Upstream
from series.upstream import refs
from series.upstream.base import Base, cache_repo, pin_kept
from series.upstream.fetch import Memory, Policy, RememberedUnreachable, Want, fetch
from series.upstream.unreachable import advice, stall, ttl

Say = Callable[[str], None]

IMPORTER = "keras-series import"
IMPORTER_EMAIL = "import@keras-series.invalid"


def _quiet(text: str) -> None:
    pass


def resolve(
    upstream: Upstream,
    cache_dir: Path,
    *,
    source: str | None,
    override: str | None,
    why: str = "--source",
    say: Say = _quiet,
) -> Base:
    """Find or make the upstream base commit in the cache repository.

    ``why`` says where an explicit ``source`` came from, for the report;
    ``say`` gets a line before anything that may wait (a lock, the network).
    Runs under a lock: two runs at once on a new cache would both create it.
    """
    with exclusive(cache_dir / "upstream.lock", say=say, what="fetching the upstream base"):
        return _resolve(upstream, cache_dir, source=source, override=override, why=why, say=say)


def _resolve(
    upstream: Upstream,
    cache_dir: Path,
    *,
    source: str | None,
    override: str | None,
    why: str,
    say: Say,
) -> Base:
    repo = cache_repo(cache_dir)
    wanted = source or upstream.source
    if source is None:
        why = "upstream.source in series.toml"
    if override and override.endswith((".tar.gz", ".tgz")):
        if wanted == "git":
            raise UsageError(
                f"--upstream {override} is an sdist archive, but --source git was asked for",
                hint="drop --source, or pass a git URL or path",
            )
        return _sdist(upstream, repo, cache_dir, Path(override), "an sdist archive was named")
    if wanted == "sdist":
        return _sdist(upstream, repo, cache_dir, None, why)
    url = override or upstream.repository
    memory = Memory(cache_dir, url, consult=wanted == "auto")
    try:
        return _git(upstream, repo, override, memory, say)
    except RememberedUnreachable as exc:
        git_error: SeriesError = exc
        reason = f"git: {exc.why}"
    except EnvironmentFault:
        raise  # a disk or a damaged repository: falling back would only hide it
    except SeriesError as exc:
        if wanted == "git" and upstream.sdist is None:
            raise SeriesError(
                exc.message,
                why=f"{exc.why}\nno sdist stands in for this pin: series.toml has no "
                "[upstream.sdist] (series rebase removes it; docs/rebase.md)",
                hint="pass --upstream PATH of a clone that has the pinned commit; once "
                "fetched, the per-user cache keeps it",
            ) from None
        if wanted == "git":
            raise
        git_error = exc
        first = exc.why.splitlines()[0] if exc.why else exc.message
        reason = (
            f"git was not reachable ({first}); falling back to the sdist as "
            f'upstream.source = "auto" allows. {advice(ttl())}'
        )
        say(f"upstream: {url} did not answer; using the sdist instead")
    try:
        return _sdist(upstream, repo, cache_dir, None, reason)
    except SeriesError as exc:
        raise SeriesError(
            "cannot materialise the upstream base",
            why=f"git: {git_error.message}: {git_error.why}\nsdist: {exc.message}: {exc.why}",
            hint="pass --upstream PATH to a local clone or to keras-*.tar.gz",
        ) from None


def _git(
    upstream: Upstream, repo: Repo, override: str | None, memory: Memory, say: Say = _quiet
) -> Base:
    url = override or upstream.repository
    ref = refs.git_pin(upstream.commit)
    label = f"{url} {upstream.ref} ({upstream.commit[:12]})"
    if override and Path(override).exists():
        url = str(Path(override).resolve())

    def accept(tried: str) -> str | None:
        got = repo.objects.rev(ref)
        if got == upstream.commit:
            return None
        if repo.objects.has(upstream.commit):
            with repo.refs.transaction("series upstream: pin the upstream commit") as txn:
                txn.update(ref, upstream.commit, repo.refs.value(ref) or ZERO)
            return None
        return f"{tried.split(':')[0].lstrip('+')} is {got}, not the pinned commit"

    # Only the pin's tree is needed here (depth 1); check-conflicts and
    # rebase deepen the history to the merge base when they need the range.
    fetched = fetch(
        repo,
        Want(url, ref, [[spec] for spec in pin_refspecs(upstream)]),
        Policy(depth=1, memory=memory),
        have=lambda: repo.objects.rev(ref) == upstream.commit,
        accept=accept,
        announce=f"upstream: fetching {upstream.ref} ({upstream.commit[:12]}) from {url}; "
        f"gives up after {stall()} s without data (SERIES_NET_TIMEOUT)",
        say=say,
    )
    if fetched.ok:
        return Base(
            upstream.commit, "git", label, "cached" if fetched.cached else f"fetched from {url}"
        )
    raise SeriesError(
        f"cannot fetch {upstream.commit[:12]} from {url}",
        why=fetched.why(),
        hint="check the URL, or use --source sdist",
    )


def pin_refspecs(upstream: Upstream) -> list[str]:
    """Ways to fetch the pinned commit into ``refs/series/git/<commit>``: the ref, the id."""
    ref = refs.git_pin(upstream.commit)
    tag = upstream.ref if upstream.ref.startswith("refs/") else f"refs/tags/{upstream.ref}"
    return [f"+{tag}:{ref}", f"+{upstream.commit}:{ref}"]


def _sdist(
    upstream: Upstream, repo: Repo, cache_dir: Path, archive: Path | None, reason: str
) -> Base:
    sd = upstream.sdist
    if sd is None:
        raise SeriesError(
            f"no sdist stands in for the pin {upstream.ref} ({upstream.commit[:12]})",
            why="series.toml has no [upstream.sdist]: `series rebase` removed it when it moved "
            "the pin to a commit no release sdist matches",
            hint="fetch the pin with git: pass --upstream PATH of a clone that has it "
            "(once fetched, the per-user cache keeps it and no network is needed)",
        )
    name = f"{sd.package}-{sd.version}"
    named = archive is not None
    if archive is None:
        archive = _download(sd.package, sd.version, cache_dir / "sdist")
    elif not archive.is_file():
        raise UsageError(f"no such sdist archive: {archive}")
    import hashlib  # OpenSSL's, for megabytes; only here (an sdist), not on a rebase's way

    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if sd.sha256 and digest != sd.sha256:
        raise SeriesError(
            f"{archive.resolve()} is not the sdist the manifest pins",
            why=f"sha256 {digest}\nexpected {sd.sha256} (upstream.sdist.sha256)",
            hint=f"check that --upstream names the {name} sdist from the package index; "
            "if the pin itself changed, fix upstream.sdist.sha256"
            if named
            else f"the downloaded file is damaged or was replaced: delete {archive.resolve()} "
            "and run the command again to download it afresh",
            exit_code=Exit.BAD_INPUT if named else Exit.FAILED,
        )
    ref = refs.sdist(name, digest)
    label = f"{sd.package}=={sd.version} sdist (stands in for {upstream.ref})"
    commit = repo.objects.rev(ref)
    if commit is None:
        import tarfile  # an sdist pin's alone: a git pin's commands do not load it

        try:
            commit = import_sdist(repo, archive, name, digest, upstream)
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            raise SeriesError(
                f"{archive.resolve()} is not a readable sdist archive",
                why=f"{type(exc).__name__}: {exc} (the file is truncated or not a .tar.gz)",
                hint=f"check that --upstream names the {name} sdist (a .tar.gz)"
                if named
                else f"the downloaded file is damaged: delete {archive.resolve()} and run "
                "the command again to download it afresh",
                exit_code=Exit.BAD_INPUT if named else Exit.FAILED,
            ) from None
        with repo.refs.transaction(f"series upstream: import {archive.name}") as txn:
            txn.update(ref, commit, ZERO)
        repo.objects.repack()
    return Base(commit, "sdist", label, reason)


def _download(package: str, version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for ext in (".tar.gz", ".tgz"):
        found = dest / f"{package}-{version}{ext}"
        if found.is_file():
            return found
    # Not pip: it runs an sdist's setup.py to read its metadata (series.upstream.sdist_download,
    # with the HTML and URL parsers a git pin's commands do not load).
    from series.upstream.sdist_download import download

    target = dest / f"{package}-{version}.tar.gz"
    return download(package, version, target, timeout=stall())


def import_sdist(repo: Repo, archive: Path, name: str, digest: str, upstream: Upstream) -> str:
    """Import the archive's tree as one commit; same archive, same commit id."""
    import tarfile  # an sdist pin's alone (as in _sdist)

    with scratch_dir("series-import-", ram=False) as tmp:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            tar.extractall(tmp, filter="data")
        tops = {Path(m.name).parts[0] for m in members if m.name}
        if len(tops) != 1:
            raise SeriesError(f"{archive.name} does not have one top-level directory")
        tree = repo.index.tree_from_directory(Path(tmp) / tops.pop())
    newest = max((m.mtime for m in members), default=0)
    when = Ident(IMPORTER, IMPORTER_EMAIL, f"@{int(newest)} +0000")
    message = (
        f"Import {name} from its sdist\n\n"
        f"Stands in for {upstream.repository} {upstream.ref} ({upstream.commit}).\n"
        f"sdist sha256: {digest}\n"
    )
    return repo.objects.commit_tree(tree, [], message, when)


def keep(repo: Repo, source: Path, ref: str, commit: str, *, pin: bool) -> str | None:
    """Keep ``commit`` (``ref`` of the repository at ``source``) in the cache: None, or why not.

    ``pin``: as a git pin (``series rebase`` keeps the pin it moved to, so
    that ``series apply`` needs no network for it), else as a checkout's
    base brought back into a new cache. Its tree is all the cache needs of it,
    as of a pin fetched from upstream (a depth of one): not the history the
    checkout has of it (a rebase deepens that to the old pin, hundreds of
    commits). A commit the cache has already is named, not fetched again
    with a depth (that would cut the history the cache has of it).
    """
    name = refs.git_pin(commit) if pin else refs.checkout_base(commit)
    if pin_kept(repo, commit) if pin else repo.objects.rev(name) == commit:
        return None  # kept already (the same pin again): a fetch would bring nothing

    def accept(tried: str) -> str | None:
        return None if not pin or repo.objects.rev(name) == commit else "no ref"

    want = Want(str(source), name, [[f"+{ref}:{name}"]])
    depth = None if repo.objects.has(commit) else 1
    fetched = fetch(repo, want, Policy(depth=depth), accept=accept)
    return None if fetched.ok else fetched.why() or "no ref"

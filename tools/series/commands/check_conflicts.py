"""``series check-conflicts``: does the series still fit? Merge-tree dry runs, no checkout.

It answers three questions (series.conflicts does the work): does the stack
apply on its pin; which patches apply alone and which pairs commute; and,
with ``--onto REV``, how each patch fares when the series is replayed onto
another upstream revision. All of it happens in the per-user cache
repository: the user's checkout, index and refs are never touched. A REV
fetched from ``--upstream`` lands under a scratch ref
(``refs/series/scratch/<run>/``) that is deleted in a ``finally`` block.

Exit status: 0 when everything fits; 3 (Exit.CONFLICT) when a patch does
not apply on the pin, conflicts on the replay, or does not apply alone
although series.toml says ``applies_alone = true``; 2 (Exit.BAD_INPUT) for
a REV, URL or option that cannot be used; 1 when the place REV should be
fetched from cannot be reached. Options are checked before any work is
done, so a typo costs nothing. docs/check-conflicts.md has the report
format.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import time
from pathlib import Path

from series import upstream
from series.conflict_report import render, report
from series.conflicts import SCAN_LIMIT, Target, analyse
from series.errors import Exit, SeriesError, UsageError
from series.git import ZERO, GitFailed, Repo
from series.manifest import Sdist
from series.merges import Merger, Node
from series.series import Series
from series.stackmemo import build_stack
from series.ui import Ui

SCRATCH = "refs/series/scratch/"
_ARCHIVES = (".tar.gz", ".tgz")
_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/:]+:)")  # scheme://..., or scp-style host:path


def run(
    series: Series,
    ui: Ui,
    *,
    onto: str | None = None,
    upstream_url: str | None = None,
    source: str | None = None,
    matrix: bool = True,
    as_json: bool = False,
    merge_mode: str = "auto",
) -> int:
    _check_options(onto, upstream_url)
    started = time.perf_counter()
    base = upstream.resolve(
        series.manifest.upstream, series.cache_dir, source=source, override=None
    )
    ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
    repo = upstream.cache_repo(series.cache_dir)
    stacked = build_stack(series, repo, base.commit)
    built = len(stacked.nodes) - 1
    ui.status(
        f"stack: {built} of {len(stacked.steps)} patches on {base.commit[:12]}"
        f" ({stacked.reused} memoised)"
    )
    scratch = f"{SCRATCH}{os.getpid()}-{secrets.token_hex(4)}/"
    try:
        target = _target(series, repo, base, onto, upstream_url, scratch) if onto else None
        if target:
            ui.status(f"onto: {target.label}; upstream since the pin: {target.range}")
        with repo.scratch_objects() as env:
            merger = Merger(repo, env, merge_mode)
            analysis = analyse(merger, stacked, target, matrix=matrix)
    finally:
        if onto:
            _drop_scratch(repo, scratch, ui)
    seconds = time.perf_counter() - started
    stats = {
        "merges": merger.merges,
        "batches": merger.batches,
        "merge_mode": merger.mode,
        "memoised": stacked.reused,
        "seconds": round(seconds, 3),
    }
    data = report(series, base, stacked, analysis, target, onto, stats, matrix=matrix)
    ui.status(f"{merger.merges} merges in {merger.batches} batches, {seconds:.2f} s")
    if as_json:
        ui.json(data)
    else:
        render(ui, data)
    return int(data["exit_code"])


def _check_options(onto: str | None, url: str | None) -> None:
    """Refuse option combinations that cannot work, before the pin is even resolved."""
    if url and not onto:
        raise UsageError(
            "--upstream names where the --onto revision lives, and no --onto was given",
            hint="add --onto REV (the pin itself comes from series.toml; see --source)",
        )
    if not onto:
        return
    if onto == "sdist:":
        raise UsageError(
            "--onto sdist: needs a version",
            why="sdist:VERSION names a release of the package on the package index",
            hint="e.g. --onto sdist:3.15.2",
        )
    if url is None:
        return
    archive = url.endswith(_ARCHIVES)
    if onto.startswith("sdist:") and not archive:
        raise UsageError(
            f"with --onto {onto}, --upstream must name the sdist archive",
            why=f"{url} is not a .tar.gz",
            hint="pass the keras-VERSION.tar.gz file, or drop --upstream to download it",
        )
    if archive and not onto.startswith("sdist:"):
        raise UsageError(
            f"--upstream {url} is an sdist archive, but --onto {onto} is a git revision",
            hint="use --onto sdist:VERSION with an archive",
        )
    if not _URL.match(url) and not Path(url).exists():
        raise UsageError(
            f"--upstream {url} does not exist",
            why="it is neither an existing file or directory nor a URL",
            hint="pass the path of a clone (or archive), or a URL such as https://host/repo.git",
        )


def _target(
    series: Series,
    repo: Repo,
    base: upstream.Base,
    onto: str,
    url: str | None,
    scratch: str,
) -> Target:
    if onto.startswith("sdist:"):
        commit, label = _sdist(series, onto.removeprefix("sdist:"), url)
    else:
        commit = _fetch(repo, onto, url, series.manifest.upstream.repository, scratch)
        label = f"{onto} ({commit[:12]})" + (f" from {url}" if url else "")
    revs, described, unrelated = _range(repo, base.commit, commit, series.manifest.upstream.commit)
    commits = repo.log_files(revs, max_count=SCAN_LIMIT if unrelated else None) if revs else []
    return Target(label, Node(repo.tree_of(commit), commit), revs, described, commits)


def _sdist(series: Series, version: str, archive: str | None) -> tuple[str, str]:
    pinned = series.manifest.upstream
    other = dataclasses.replace(
        pinned,
        ref=f"v{version}",
        commit=ZERO,  # no git commit is known for it
        sdist=Sdist(pinned.sdist.package, version, None),
    )
    try:
        found = upstream.resolve(other, series.cache_dir, source="sdist", override=archive)
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
    fetch = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", source]
    try:
        repo.git(*fetch, f"+{rev}:{scratch}onto")
        commit = repo.rev(f"{scratch}onto")
    except GitFailed as exc:
        commit, failure = None, exc.stderr.strip()
        if _HEX.match(rev):
            # A commit id that no ref names at its tip: servers refuse to send
            # it alone, so fetch every branch and tag and look for it.
            status, _, _ = repo.git_status(
                *fetch, f"+refs/heads/*:{scratch}heads/*", f"+refs/tags/*:{scratch}tags/*"
            )
            commit = repo.rev(rev) if status == 0 else None
        if commit is None:
            raise _not_fetched(repo, rev, source, failure) from None
    if commit is None:
        raise UsageError(
            f"{rev} in {source} is not a commit",
            hint="name a branch, a tag or a commit id for --onto",
        )
    return commit


def _not_fetched(repo: Repo, rev: str, source: str, failure: str) -> SeriesError:
    """Why ``rev`` could not be fetched: no such revision (2), or no such source (2 or 1)."""
    status, _, unreachable = repo.git_status("ls-remote", "--heads", source)
    if status == 0:
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


def _drop_scratch(repo: Repo, prefix: str, ui: Ui) -> None:
    # Runs in a ``finally``: a failure here must not hide the error that got us here.
    try:
        names = repo.refs(prefix)
        repo.update_refs([f"delete {name}" for name in names], "series check-conflicts: done")
    except GitFailed as exc:
        ui.status(
            f"warning: could not delete the scratch refs {prefix}* in {repo.path}: "
            f"{exc.stderr.strip()} (they are safe to delete by hand)"
        )

"""What ``series branches`` builds on: upstream's real pinned commit, and a fork that has it.

A pull request is the diff between two branches of one repository, and
GitHub takes a branch as its base, never a tag. So the branches are built
on the pinned upstream commit itself, wherever the checkout came from:

* a checkout made from git has it (its base is that commit);
* a checkout made from the sdist stands on a synthetic "Import ... from its
  sdist" commit that shares no history with upstream (a pull request from
  it would carry the whole tree), so the pinned commit is fetched, with
  git, from ``--upstream`` or series.toml's ``upstream.repository``
  (series.upstream, the per-user cache). When it cannot be had, nothing is
  built and the command says why and how to get it.

The first pull request's base is a branch at that commit,
``<prefix>upstream-<ref>`` (:func:`base_branch`), made and pushed with the
others. The pin is fetched without its history (depth 1); a push from such
a repository needs the remote to have that history already (a fork has
it), else git's receive-pack refuses it ("shallow update not allowed").
:func:`check_history` asks the remote first, with and without
``--dry-run``, so the dry run says what the push will do and a push that
would be refused changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series import upstream
from series.errors import RefusedError, SeriesError
from series.git import EnvironmentFault, Repo
from series.ui import Ui
from series.upstream import Base

if TYPE_CHECKING:
    from series.checkout import Checkout, CheckoutState
    from series.project import Series


def upstream_base(
    series: Series, ui: Ui, checkout: Checkout, state: CheckoutState, url: str | None
) -> Base:
    """The pinned upstream commit from git, in the cache; refused when it cannot be had.

    The cache has it from an earlier run, mostly: then it is said as ``Series.pin``
    says it, without the fetch machinery (series.upstream.cached_pin)."""
    if url is None:
        pinned = series.manifest.upstream
        base = upstream.cached_pin(pinned, series.cache, series.cache_dir, source="git")
        if base is not None:
            ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
            return base
    if state.source == "git":
        return series.pin(ui, source="git", override=url, why="the checkout was made from git")
    why = "the branches need upstream's history (the checkout was made from the sdist)"
    try:
        return series.pin(ui, source="git", override=url, why=why)
    except EnvironmentFault:
        raise  # a disk or a damaged cache: say that, not "unreachable"
    except SeriesError as exc:
        pinned = series.manifest.upstream
        where = url or pinned.repository
        raise SeriesError(
            "cannot make pull-request branches: upstream's pinned commit could not be fetched",
            why=f"the checkout {checkout.path} was made from the sdist, whose commit shares no "
            "history with upstream: a pull request from a branch on it would carry the whole "
            f"tree; so the branches go on {pinned.ref} ({pinned.commit[:12]}) itself, fetched "
            f"from {where}, and that failed:\n{exc.message}" + (f"\n{exc.why}" if exc.why else ""),
            hint="pass --upstream URL|PATH of a repository or clone that has "
            f"{pinned.commit[:12]} (a fork of upstream has it), or run where {where} can be "
            "reached; nothing was changed",
        ) from None


BASE_PREFIX = "upstream-"


def base_branch(prefix: str, ref: str) -> str:
    """The branch at the pin, the first pull request's base: ``<prefix>upstream-<ref>``."""
    for kind in ("refs/tags/", "refs/heads/"):
        ref = ref.removeprefix(kind)
    return f"{prefix}{BASE_PREFIX}{ref}"


def check_history(ui: Ui, repo: Repo, pin: str, remote: str, heads: dict[str, str]) -> None:
    """Refuse (exit 4) a push that ``remote`` would refuse for lack of the pin's history.

    The checkout holds the pin without its parents when it was fetched
    shallow; the remote must then have the commits where that history
    stops. A remote branch at the pin says so; else the remote is asked for
    each by id.
    """
    cut = [c for c in sorted(repo.history.shallow_roots()) if repo.history.merge_base(c, pin) == c]
    if not cut or pin in heads.values():
        return
    ui.status(f"branches: asking {remote} whether it has upstream's {pin[:12]}")
    for commit in cut:
        has, err = repo.remote.has(remote, commit)
        if not has:
            _refuse(repo, pin, remote, commit, err)


def _refuse(repo: Repo, pin: str, remote: str, commit: str, err: str) -> None:
    said = err.strip().splitlines()[-1] if err.strip() else "it does not have it"
    raise RefusedError(
        f"{remote} does not have the history below the pin: pushing there would be refused",
        why=f"the checkout {repo.path} is shallow: series fetched upstream's {pin[:12]} without "
        f"its history (it stops at {commit[:12]}), and {remote} does not have {commit[:12]} "
        f'either ({said}); git refuses such a push ("shallow update not allowed"); nothing '
        "was changed, locally or on the remote",
        hint=f"push to a fork of upstream (it has the history), or push the upstream history "
        f"to {remote} first, or make the checkout whole: git -C {repo.path} fetch --unshallow "
        "<upstream URL>; then run `series branches --push` again",
    )

"""``series apply``: the pinned upstream plus the stack, as commits in a checkout.

The stack is built in memory (series.stack, memoised in the per-user cache
repository and fetched from there) and only then does anything visible
change: the branch moves with one compare-and-swap, and the work tree
follows with ``read-tree -m -u``, which rewrites only files that differ. A
re-run with nothing changed computes the same commit ids and touches nothing.

Before changing anything it refuses when work could be lost: uncommitted
changes, commits that were never exported, a checkout on another branch, or
a directory that is not a series checkout. ``--force`` goes on, but first
stashes uncommitted changes and keeps a backup ref of the old tip.
"""

from __future__ import annotations

import time
from pathlib import Path

from series import stack, upstream
from series.errors import ConflictError, RefusedError
from series.git import Repo
from series.series import (
    BACKUP_PREFIX,
    BASE_REF,
    SYNCED_REF,
    Checkout,
    CheckoutState,
    Series,
    refuse_dirty,
)
from series.ui import Ui

EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n.ruff_cache/\n"


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    to: str | None = None,
    source: str | None = None,
    upstream_url: str | None = None,
    force: bool = False,
) -> int:
    checkout = series.checkout(directory)
    patches = series.upto(to)
    state = _check_safe(checkout, force, ui)
    why = "--source"
    if source is None and upstream_url is None and state is not None:
        # Never switch the base silently: every commit id would change.
        source, why = state.source, "the source this checkout was made from"
    base = upstream.resolve(
        series.manifest.upstream, series.cache_dir, source=source, override=upstream_url, why=why
    )
    ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
    # Built (and memoised) in the cache repository, then copied over: a
    # fresh checkout or an unchanged series costs one local fetch.
    cache = upstream.cache_repo(series.cache_dir)
    built = stack.build(series, cache, base.commit, patches, memo=True)
    repo = _open(checkout, cache)
    repo.fetch_from(cache, built.tip)
    upstream.fetch_base(repo, cache, base, BASE_REF)
    old = checkout.tip()
    new = built.tip
    unchanged = old == new and checkout.on_branch() and state is not None
    if not unchanged:
        repo.update_ref(
            checkout.branch_ref,
            new,
            old or "0" * 40,
            f"series apply: {len(built.steps)} patches",
        )
        repo.checkout_tree(old if checkout.on_branch() else None, new)
        repo.git("symbolic-ref", "HEAD", checkout.branch_ref)
    repo.git("update-ref", "-m", "series apply", SYNCED_REF, new)
    checkout.write_state([s.patch.id for s in built.steps], base.source)
    for step in built.steps:
        how = " (3-way)" if step.three_way else ""
        ui.status(f"  {step.patch.id:<4} {step.commit[:12]}{how}  {step.patch.title}")
    if built.failure is not None:
        f = built.failure
        where = "\n".join(
            [
                *(f"conflict: {p}" for p in f.conflicted),
                *(f"hunk failed: {h}" for h in f.failed_hunks),
            ]
        )
        raise ConflictError(
            f"patch {f.patch.id} ({f.patch.file}) does not apply",
            why=f"{where or f.stderr}\nthe checkout {checkout.path} has the stack up to the "
            "patch before it",
            hint=f"git -C {checkout.path} am -3 {series.patch_path(f.patch)}, resolve, "
            "commit, then `series export`",
        )
    verb = "up to date" if unchanged else "applied"
    ui.result(
        f"{verb}: {len(built.steps)} patches on {base.commit[:12]} in {checkout.path} "
        f"(branch {checkout.branch} at {new[:12]})"
    )
    return 0


def _open(checkout: Checkout, cache: Repo) -> Repo:
    if checkout.exists():
        return checkout.repo
    repo = Repo.clone_local(cache, checkout.path)
    exclude = repo.git_dir / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text(EXCLUDES, encoding="utf-8")
    return repo


def _check_safe(checkout: Checkout, force: bool, ui: Ui) -> CheckoutState | None:
    path = checkout.path
    if not checkout.exists():
        if path.exists() and any(path.iterdir()):
            raise RefusedError(
                f"refusing to apply into {path}: it is not empty and not a series checkout",
                hint="choose another --dir, or move that directory away",
            )
        return None
    state = checkout.state()
    if state is None:
        raise RefusedError(
            f"refusing to apply into {path}: it is a git repository series did not make",
            hint="choose another --dir; series only rewrites checkouts it made",
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    if not checkout.on_branch() and not force:
        raise RefusedError(
            f"refusing to apply: {path} is not on branch {checkout.branch}",
            why=f"HEAD is {checkout.repo.symbolic_head() or 'detached'}",
            hint=f"git -C {path} switch {checkout.branch}, or pass --force",
        )
    if checkout.repo.dirty():
        if not force:
            refuse_dirty(checkout, "apply")
        checkout.repo.git(
            "stash",
            "push",
            "--include-untracked",
            "-m",
            f"series apply --force {stamp}",
        )
        ui.status(
            f"saved uncommitted changes: git -C {path} stash show -p stash@{{0}} "
            f"(message 'series apply --force {stamp}')"
        )
    lost = checkout.unexported(state)
    tip = checkout.tip()
    if lost and tip is not None:
        if not force:
            raise RefusedError(
                f"refusing to apply: {len(lost)} commit(s) on {checkout.branch} "
                "were never exported",
                why="\n".join(
                    checkout.repo.git("log", "--oneline", "-1", c).strip() for c in lost[:10]
                ),
                hint="run `series export` to keep them, or pass --force "
                "(series keeps a backup ref of them)",
            )
        backup = f"{BACKUP_PREFIX}{stamp}"
        checkout.repo.update_ref(backup, tip, None, "series apply --force: backup")
        ui.status(f"kept the old tip {tip[:12]} as {backup} in {path}")
    return state

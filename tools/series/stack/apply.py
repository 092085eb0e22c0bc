"""Apply: the pinned upstream plus the stack, as commits in a checkout.

The stack is built in memory (``Series.stack``, memoised in the per-user
cache repository, and fetched from there) and only then does anything
visible change: the branch, the base, the synced tip and the state move
in one compare-and-swap transaction (series.checkout), and the work tree
follows with ``read-tree -m -u``, which rewrites only files that differ. A
re-run with nothing changed computes the same commit ids and touches
nothing.

Before changing anything it refuses when work could be lost
(series.checkout.guard_apply): uncommitted changes, commits that were
never exported, a checkout on another branch, or a directory that is not
a series checkout. ``--force`` goes on, but first stashes uncommitted
changes, and the write keeps what HEAD and the branch held that nothing
else reaches under a backup ref (series.backup), in its own transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from series.checkout import Checkout, CheckoutState, guard_apply, move_in, staging
from series.errors import ConflictError
from series.git import Repo
from series.stack import verified
from series.stack.export_files import refuse_if_interrupted

if TYPE_CHECKING:  # a re-run answered by what was kept imports neither builder nor upstream
    from series.backup import Kept
    from series.builder.build import Built, Failure
    from series.manifest import Patch
    from series.project import Series
    from series.ui import Ui
    from series.upstream import Base

EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n.ruff_cache/\n"


def apply(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    patches: list[Patch],
    *,
    source: str | None,
    upstream_url: str | None,
    force: bool,
    digest: str | None = None,
) -> dict[str, Any]:
    """Apply ``patches`` into ``checkout``; what was done (the ``--json`` payload).

    ``digest``: what a plain re-run reads, as series.stack.verified told it
    before this run (commands/apply.py asks it first); what this run says
    is kept under it when the run changed nothing.
    """
    old = checkout.tip() if checkout.exists() else None  # what the checks below see
    refuse_if_interrupted(series.root, "apply", old)
    state = guard_apply(checkout, force, ui)
    why = "--source"
    if source is None and upstream_url is None and state is not None:
        # Never switch the base silently: every commit id would change.
        source, why = state.source, "the source this checkout was made from"
    with ui.progress("materialising the upstream base and building the stack ..."):
        base = series.pin(ui, source=source, override=upstream_url, why=why)
        built = series.stack(base.commit, patches)
    # A new checkout is made beside its place and renamed in when complete,
    # so a kill leaves no half-made ./work that later runs would refuse.
    target = staging(checkout) if state is None else checkout
    with ui.progress(f"writing the checkout {checkout.path} ..."):
        unchanged, kept = _write(series, target, (state, old), base, built)
    if kept is not None:
        ui.status(kept.describe(checkout.path))
    if target is not checkout:
        move_in(target, checkout, ui)
    lines = []
    for step in built.steps:
        how = " (3-way)" if step.three_way else ""
        lines.append(f"  {step.patch.id:<4} {step.commit[:12]}{how}  {step.patch.title}")
        ui.status(lines[-1])
    if built.failure is not None:
        raise _conflict(series, checkout, built.failure)
    verb = "up to date" if unchanged else "applied"
    result = (
        f"{verb}: {len(built.steps)} patches on {base.commit[:12]} in {checkout.path} "
        f"(branch {checkout.branch} at {built.tip[:12]})"
    )
    ui.result(result)
    done = {
        "checkout": str(checkout.path),
        "branch": checkout.branch,
        "base": base.commit,
        "source": base.source,
        "tip": built.tip,
        "applied": [s.patch.id for s in built.steps],
        "up_to_date": unchanged,
        "kept": kept.ref if kept is not None else None,
    }
    if unchanged and kept is None:  # kept only if the run wrote nothing (the digest says)
        verified.keep(series, checkout, "apply", digest, (lines, result, done))
    return done


def _write(
    series: Series,
    checkout: Checkout,
    prior: tuple[CheckoutState | None, str | None],
    base: Base,
    built: Built[Patch],
) -> tuple[bool, Kept | None]:
    """Bring the stack into ``checkout`` and record it; whether nothing had changed.

    ``prior`` is the state and tip the safety checks saw: the refs are
    compared against them, not against what is there now.
    """
    state, old = prior
    repo = _open(checkout, series.cache)
    repo.remote.copy_from(series.cache, [built.tip])  # the tip's history holds the base
    new = built.tip
    unchanged = old == new and checkout.on_branch() and state is not None
    applied = tuple(s.patch.id for s in built.steps)
    recorded = state is not None and (state.base, state.synced, state.applied, state.source) == (
        base.commit,
        new,
        applied,
        base.source,
    )
    kept = None
    if not (unchanged and recorded):
        kept = checkout.prepare_write(
            "apply",
            prior=state,
            tip=(old, new),
            base=base.commit,
            applied=list(applied),
            source=base.source,
            move_files=not unchanged,
        ).commit()
    return unchanged, kept


def _conflict(series: Series, checkout: Checkout, f: Failure[Patch]) -> ConflictError:
    where = "\n".join(
        [
            *(f"conflict: {p}" for p in f.conflicted),
            *(f"hunk failed: {h}" for h in f.failed_hunks),
        ]
    )
    return ConflictError(
        f"patch {f.patch.id} ({f.patch.file}) does not apply",
        why=f"{where or f.stderr}\nthe checkout {checkout.path} has the stack up to the "
        "patch before it",
        hint=f"git -C {checkout.path} am -3 {series.patch_path(f.patch)}, resolve, "
        "commit, then `series export`",
    )


def _open(checkout: Checkout, cache: Repo) -> Repo:
    if checkout.exists():
        return checkout.repo
    repo = Repo.clone_local(cache, checkout.path)
    exclude = repo.git_dir / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text(EXCLUDES, encoding="utf-8")
    return repo

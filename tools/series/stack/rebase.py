"""``series rebase --onto``: check that the series can move, fetch REV, plan, and start.

The start refuses where the rebase could lose work or rebase something
else than the series, fetches REV into the checkout
(``refs/series/rebase/onto``, through series.upstream), gathers the
evidence that upstream already has a patch (series.evidence), and turns
it all into a plan (series.stack.rebase_plan: pick or drop each patch).
Its first transaction saves the state and a snapshot of series.toml and
patches/ (series.stack.snapshot); then the driver
(series.stack.rebase_driver) walks the plan: it finishes, or stops at a
conflict. ``--continue`` and ``--skip`` are series.stack.rebase_resume's,
``--abort`` series.stack.rebase_abort's.

The sequencer's modules, from the bottom: rebase_plan (the state as
data), rebase_step (the pure step function), rebase_state (the state in
the checkout's refs), rebase_finish (the end), rebase_driver (the
effects), and this module and rebase_resume above the driver (rebase_abort
beside it, below rebase_resume, using no driver). None imports one above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series import manifest_kept
from series.builder.message import series_id
from series.checkout import (
    BASE_REF,
    Checkout,
    finish_cut_move,
    refuse_dirty,
    refuse_git_in_progress,
)
from series.errors import RefusedError, UsageError
from series.evidence import Evidence, find_evidence
from series.git import CommitInfo, Repo
from series.git.run import light_processes
from series.manifest import Patch
from series.manifest_write import keep_pin_moved
from series.merge import Merger, Node, PinStep, Stacked, Target, resolutions, resolve_target
from series.stack import rebase_state as rstate
from series.stack import upstream_parts
from series.stack.rebase_driver import Run, drive
from series.stack.rebase_plan import Part, Upstream, begin, plan_rebase
from series.stack.snapshot import save_project
from series.ui import Ui
from series.upstream import Base

if TYPE_CHECKING:
    from series.project import Series


def start(
    series: Series, ui: Ui, checkout: Checkout, *, onto: str, url: str | None, drop_merged: bool
) -> None:
    """Begin a rebase onto ``onto``; finishes, or stops at a conflict (ConflictError).

    Its git processes start without importing GitPython (series.git.run.light_processes:
    the same processes; the import cost more CPU than any of them but the merges).
    """
    with light_processes():
        _start(series, ui, checkout, onto=onto, url=url, drop_merged=drop_merged)


def _start(
    series: Series, ui: Ui, checkout: Checkout, *, onto: str, url: str | None, drop_merged: bool
) -> None:
    cstate = checkout.require()
    repo = checkout.repo
    if rstate.load(repo) is not None:
        raise RefusedError(
            f"a rebase is already in progress in {checkout.path}",
            hint="`series status` says where it stands; `series rebase --continue`, "
            "`--skip` or `--abort`",
        )
    if onto.startswith("sdist:"):
        raise UsageError(
            "series rebase moves the series to a git commit; an sdist has no history",
            hint="name a branch, tag or commit of upstream with --onto (and --upstream)",
        )
    finish_cut_move(checkout, ui)
    guard(series, checkout, cstate.applied)
    tip = checkout.tip()
    assert tip is not None
    target = _target(series, ui, repo, Base(cstate.base, cstate.source, "", ""), onto, url)
    if target is None:
        ui.result(f"nothing to do: the series already sits on {onto}")
        return
    infos, files_by_commit = repo.history.commit_infos_files(cstate.base, tip)
    patches = [(series_id(i.message) or "?", i.commit) for i in infos]
    found = _evidence(series, ui, repo, cstate.base, files_by_commit, infos, patches, target)
    evidence = {pid: Upstream(e[0].kind, e[0].commit, e[0].subject) for pid, e in found.items()}
    parts = _parts(repo, infos, patches, found, target)
    onto_commit = str(target.node.commit)
    saved = save_project(repo, series.root, [series.patch_path(p) for p in series.manifest.patches])
    _keep_pin_moved(series, repo, saved, onto, onto_commit)
    state = begin(
        onto=onto_commit,
        onto_tree=target.node.tree,
        onto_rev=onto,
        onto_label=target.label,
        url=url,
        tip=tip,
        base=cstate.base,
        saved=saved,
        drop_merged=drop_merged,
        plan=plan_rebase(patches, evidence, drop_merged=drop_merged, parts=parts),
    )
    with repo.refs.transaction(f"series rebase: start onto {onto} ({onto_commit[:12]})") as txn:
        rstate.save(repo, txn, state, None)
        txn.update(rstate.SAVED_REF, saved, None)
    ui.status(f"rebase: {len(patches)} patches onto {target.label}; upstream since: {target.range}")
    run = Run(series, ui, checkout, {i.commit: i for i in infos}, lambda: target.commits)
    drive(run, state)


def _keep_pin_moved(series: Series, repo: Repo, saved: str, ref: str, commit: str) -> None:
    """series.toml as the end of this rebase writes it when only the pin moves, read and
    kept now (series.manifest_write ``keep_pin_moved``): the end, often in a later
    ``--continue``, then takes it from the cache instead of importing tomllib. From the
    text the start saved, as the end reads it (series.stack.rebase_finish ``_saved``)."""
    text = repo.objects.blob_read(saved, "series.toml").decode("utf-8")
    data = manifest_kept.recall(series.cache_dir, text)  # kept by this run's own parse
    if data is not None:
        keep_pin_moved(
            series.manifest, text, ref=ref, commit=commit, kept=series.cache_dir, data=data
        )


def guard(
    series: Series,
    checkout: Checkout,
    applied: tuple[str, ...],
    *,
    verb: str = "rebase",
    unexported_ok: bool = False,
) -> None:
    """Refuse where a replay could lose work or replay something else than the series.

    ``verb``: rebase or edit; ``unexported_ok``: commits made since the last
    export are part of what is replayed (``series edit --squash`` takes its
    fixups from them).
    """
    refuse_git_in_progress(checkout, verb)
    if not checkout.on_branch():
        raise RefusedError(
            f"refusing to {verb}: {checkout.path} is not on branch {checkout.branch}",
            hint=f"git -C {checkout.path} switch {checkout.branch}",
        )
    refuse_dirty(checkout, verb)
    # resolutions/ leading out: refused before any step
    resolutions.check_recorded(series.root, [p.id for p in series.manifest.patches])
    state = checkout.require()
    lost = checkout.unexported(state)
    if lost and not unexported_ok:
        raise RefusedError(
            f"refusing to {verb}: {len(lost)} commit(s) on {checkout.branch} were never exported",
            why="\n".join(checkout.repo.history.oneline(c) for c in lost[:10]),
            hint=f"run `series export` first, so patches/ holds what is {verb.rstrip('e')}ed"
            + ("; fixups: `series edit --squash`" if verb == "edit" else ""),
        )
    ids = [p.id for p in series.manifest.patches]
    if list(applied) != ids:
        raise RefusedError(
            f"refusing to {verb}: the checkout does not hold the whole series",
            why=f"applied: {', '.join(applied) or 'none'}\nseries.toml: {', '.join(ids)}",
            hint="run `series apply` (the whole series) first",
        )
    if not series.cache.objects.has(state.base):  # a new cache: bring the base back
        series.upstream().keep(state.base, source=checkout.path, ref=BASE_REF, pin=False)
    built = series.stack(state.base)
    if built.tip != state.synced:
        raise RefusedError(
            f"refusing to {verb}: patches/ differ from the checkout",
            why="the patch files were changed since the last apply or export",
            hint="`series apply` to take patches/ into the checkout, or `series export` "
            "to write the checkout over them",
        )


def _target(
    series: Series, ui: Ui, repo: Repo, base: Base, onto: str, url: str | None
) -> Target | None:
    """REV fetched into the checkout (None: the series sits on it already)."""
    upstream = series.upstream(ui, url)
    if url:
        ui.status(f"rebase: fetching {onto} from {url}; {upstream.patience()}")
    else:
        where = series.manifest.upstream.repository
        ui.status(
            f"rebase: {onto} from the checkout, else fetched from {where}; "
            f"a fetch {upstream.patience()}"
        )
    try:
        target = resolve_target(upstream, onto, base=base, into=repo, scratch=rstate.PREFIX)
    except BaseException:
        _drop_refs(repo)
        raise
    if target.node.commit == base.commit:
        _drop_refs(repo)
        return None
    return target


def _drop_refs(repo: Repo) -> None:
    with repo.refs.transaction("series rebase: drop the fetched revision") as txn:
        for name, old in repo.refs.under(rstate.PREFIX).items():
            if name != rstate.LAST_REF:
                txn.delete(name, old)


def _evidence(
    series: Series,
    ui: Ui,
    repo: Repo,
    base: str,
    files_by_commit: dict[str, tuple[str, ...]],
    infos: list[CommitInfo],
    patches: list[tuple[str, str]],
    target: Target,
) -> dict[str, tuple[Evidence, ...]]:
    """patch id -> the upstream commits found to have it (series.evidence);
    ``files_by_commit``: the files each patch's commit changes."""
    nodes = [Node(repo.objects.tree_of(base), base)]
    steps = []
    for (pid, _), info in zip(patches, infos, strict=True):
        nodes.append(Node(info.tree, info.commit, info.parent))
        steps.append(PinStep(_patch(series, pid), "clean", info.commit))
    files = {pid: files_by_commit.get(commit, ()) for pid, commit in patches}
    stacked = Stacked(nodes[0], steps, nodes, files)
    found = find_evidence(repo, stacked, target, series.cache_dir, ui.status)
    return {pid: e for pid, e in found.items() if e}


def _parts(
    repo: Repo,
    infos: list[CommitInfo],
    patches: list[tuple[str, str]],
    found: dict[str, tuple[Evidence, ...]],
    target: Target,
) -> dict[str, Part]:
    """What upstream holds of each patch with evidence, hunk by hunk (series.evidence)."""
    if not found:
        return {}
    trees = {i.commit: i.tree for i in infos}
    trees.update((i.parent, repo.objects.tree_of(i.parent)) for i in infos if i.parent not in trees)
    weighed = upstream_parts.weigh_series(
        Merger(repo, repo.merge.hermetic()),
        [
            (pid, Node(trees[i.parent], i.parent), Node(i.tree, i.commit, i.parent))
            for (pid, _), i in zip(patches, infos, strict=True)
        ],
        target.node,
        {pid: [e.commit for e in ev] for pid, ev in found.items()},
        target.commits,
    )
    subjects = {c.commit: c.subject for c in target.commits}
    parts = {pid: upstream_parts.part_of(rem, subjects) for pid, rem in weighed.items()}
    return {pid: part for pid, part in parts.items() if part is not None}


def _patch(series: Series, pid: str) -> Patch:
    for p in series.manifest.patches:
        if p.id == pid:
            return p
    return Patch(pid, pid, "", "", "unsubmitted")

"""``series rebase``: move the series to a new upstream commit, patch by patch, in memory.

The sequencer replays the checkout's commits (pin..tip) onto REV as
``git rebase --onto REV PIN`` would: each patch is a merge of the commit so
far and the patch's commit over the patch's parent (``merge-tree``, no
index, no work tree), committed with ``commit-tree``. Nothing visible moves
while patches apply. At the first conflict that no recorded resolution
(series.stack.resolutions) answers, the state is written (one ref
transaction, series.stack.rebase_state), HEAD is detached at the commit
so far and the conflicted files are written into the checkout with
markers; ``--continue``, ``--skip`` and ``--abort`` pick it up from there.

Every step after a ``kill -9`` is either not done or done again the same
way: the state changes only in transactions, each file write is atomic,
and moving files is recognised when it was cut short. The end
(series.stack.rebase_finish) writes patches/ and series.toml, then moves
the branch, the checkout state and the rebase state in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from series.builder.message import series_id
from series.checkout import BASE_REF, Checkout, finish_cut_move, refuse_dirty
from series.errors import ConflictError, RefusedError, UsageError
from series.evidence import Evidence, find_evidence
from series.git import HERMETIC, ZERO, CommitInfo, Repo, TreeMerge
from series.manifest import Patch
from series.merge import Job, Merger, Node, PinStep, Stacked, Target, resolve_target
from series.stack import rebase_state as rstate
from series.stack import resolutions
from series.stack.rebase_state import RebaseState, StepState, Stop
from series.stack.snapshot import save_project
from series.ui import Ui
from series.upstream import Base

if TYPE_CHECKING:
    from series.project import Series


@dataclass
class Context:
    series: Series
    ui: Ui
    checkout: Checkout
    state: RebaseState
    infos: dict[str, CommitInfo]
    evidence: dict[str, tuple[Evidence, ...]] = field(default_factory=dict)
    commits: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)

    @property
    def repo(self) -> Repo:
        return self.checkout.repo


def start(
    series: Series, ui: Ui, checkout: Checkout, *, onto: str, url: str | None, drop_merged: bool
) -> None:
    """Begin a rebase onto ``onto``; finishes, or stops at a conflict (ConflictError)."""
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
    infos = repo.commit_infos(cstate.base, tip)
    steps = [StepState(series_id(i.message) or "?", i.commit) for i in infos]
    onto_commit = str(target.node.commit)
    saved = save_project(repo, series.root, [series.patch_path(p) for p in series.manifest.patches])
    state = RebaseState(
        onto=onto_commit,
        onto_rev=onto,
        onto_label=target.label,
        url=url,
        tip=tip,
        base=cstate.base,
        saved=saved,
        drop_merged=drop_merged,
        steps=steps,
        current=onto_commit,
    )
    with repo.transaction(f"series rebase: start onto {onto} ({onto_commit[:12]})") as txn:
        rstate.save(repo, txn, state, None)
        txn.update(rstate.SAVED_REF, saved, None)
    ui.status(f"rebase: {len(steps)} patches onto {target.label}; upstream since: {target.range}")
    ctx = Context(series, ui, checkout, state, {i.commit: i for i in infos})
    _with_target(ctx, target)
    replay(ctx)


def guard(
    series: Series,
    checkout: Checkout,
    applied: tuple[str, ...],
    *,
    verb: str = "rebase",
    unexported_ok: bool = False,
) -> None:
    """Refuse where a replay could lose work or replay something else than the series.

    ``unexported_ok``: commits made since the last export are part of what
    is replayed (``series edit --squash`` takes its fixups from them).
    """
    if not checkout.on_branch():
        raise RefusedError(
            f"refusing to {verb}: {checkout.path} is not on branch {checkout.branch}",
            hint=f"git -C {checkout.path} switch {checkout.branch}",
        )
    refuse_dirty(checkout, verb)
    for p in series.manifest.patches:  # resolutions/ leading out: refused before any step
        resolutions.recorded(series.root, p.id)
    state = checkout.require()
    lost = checkout.unexported(state)
    if lost and not unexported_ok:
        raise RefusedError(
            f"refusing to {verb}: {len(lost)} commit(s) on {checkout.branch} were never exported",
            why="\n".join(checkout.repo.oneline(c) for c in lost[:10]),
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
    if not series.cache.has_object(state.base):  # a new cache: bring the base back
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
    with repo.transaction("series rebase: drop the fetched revision") as txn:
        for name, old in repo.refs(rstate.PREFIX).items():
            if name != rstate.LAST_REF:
                txn.delete(name, old)


def _with_target(ctx: Context, target: Target) -> None:
    """Evidence that a patch is upstream, and who touched which files, for the report."""
    repo, st = ctx.repo, ctx.state
    nodes = [Node(repo.tree_of(st.base), st.base)]
    steps = []
    for s in st.steps:
        info = ctx.infos[s.commit]
        nodes.append(Node(info.tree, info.commit, info.parent))
        steps.append(PinStep(_patch(ctx, s.id), "clean", info.commit))
    files_by_commit = {e.commit: e.files for e in repo.log_files([st.tip, f"^{st.base}"])}
    files = {s.id: files_by_commit.get(s.commit, ()) for s in st.steps}
    stacked = Stacked(nodes[0], steps, nodes, files)
    ctx.evidence = find_evidence(repo, stacked, target)
    ctx.commits = [(c.commit, c.subject, c.files) for c in target.commits]


def _patch(ctx: Context, pid: str) -> Patch:
    for p in ctx.series.manifest.patches:
        if p.id == pid:
            return p
    return Patch(pid, pid, "", "", "unsubmitted")


def resume_target(ctx: Context) -> None:
    """Rebuild what the report needs from the fetched revision (after --continue, --skip)."""
    st = ctx.state
    revs = [st.onto, f"^{st.base}"]
    real = ctx.series.manifest.upstream.commit
    if ctx.repo.has_object(real) and ctx.repo.merge_base(real, st.onto):
        revs = [st.onto, f"^{real}"]
    commits = ctx.repo.log_files(revs, max_count=2000)
    target = Target(st.onto_label, Node(ctx.repo.tree_of(st.onto), st.onto), revs, "", commits)
    _with_target(ctx, target)


# -- the replay -------------------------------------------------------------------


def replay(ctx: Context) -> None:
    """Replay every pending step; stop at a conflict nothing resolves, else finish.

    The merges are speculated in two batches (as check-conflicts does):
    predict the tree after patch k as one merge of the stack up to k into
    the target, then cherry-pick every patch onto the prediction before it.
    A step whose prediction matched the real tree before it is exactly the
    cherry-pick; from the first mismatch on, steps are merged one by one.
    Commits are written at the end (or before a stop), all at once.
    """
    from series.stack.rebase_finish import finish

    st, repo = ctx.state, ctx.repo
    merger = Merger(repo, HERMETIC)
    todo = [k for k, step in enumerate(st.steps) if step.status == "pending"]
    actual = repo.tree_of(st.current)
    guesses = _speculate(ctx, merger, todo, actual)
    made: list[tuple[int, str]] = []
    for k in todo:
        step = st.steps[k]
        info = ctx.infos[step.commit]
        evidence = ctx.evidence.get(step.id, ())
        if st.drop_merged and evidence:
            _drop(step, "dropped", "already upstream", evidence)
            continue
        if step.action == "drop":
            _drop(step, "dropped", "dropped by `series edit --drop`", ())
            continue
        if _unchanged(ctx, k, made):  # nothing before it changed: the same commit
            step.status, step.new, st.current = "picked", step.commit, step.commit
            actual = info.tree
        else:
            guess = guesses.get(k)
            if guess is not None and guess[0] == actual:
                merge = guess[1]
            else:
                job = Job(
                    _parent(ctx, info), Node(actual), Node(info.tree, info.commit, info.parent)
                )
                merge = merger.run([job])[0]
            if merge.clean and merge.tree == actual and step.action != "fixup":
                _drop(step, "empty", "it changes nothing on the new base", evidence)
                continue
            if not merge.clean:
                _commit(ctx, made)
                tree = _recorded(ctx, k, merge)
                if tree is None:
                    return
            else:
                tree = merge.tree
            step.status = "picked" if merge.clean else "resolved"
            if step.action == "fixup" and made:  # into the patch before it (edit_plan)
                step.status, k = "squashed", made.pop()[0]
            made.append((k, tree))
            actual = tree
        if step.action == "edit":
            _commit(ctx, made)
            edit_stop(ctx, k)
            return
    _commit(ctx, made)
    finish(ctx)


def _unchanged(ctx: Context, k: int, made: list[tuple[int, str]]) -> bool:
    """Whether step k sits where it was (an edit's patches up to the first change).

    Never for a rebase (the base moved); never for the patch a fixup goes into.
    """
    st = ctx.state
    nxt = st.steps[k + 1] if k + 1 < len(st.steps) else None
    step = st.steps[k]
    return (
        not made
        and step.action in ("pick", "edit")
        and ctx.infos[step.commit].parent == st.current
        and (nxt is None or nxt.action != "fixup")
    )


def edit_stop(ctx: Context, k: int) -> None:
    """Stop on step k for the user to change it: HEAD detached there, named for git status."""
    st, repo = ctx.state, ctx.repo
    index_tree = repo.index_tree()
    assert index_tree is not None, "the checkout was clean when the edit began"
    st.stop = Stop(k, "", "", [], [], index_tree, kind="edit")
    _stop_transaction(ctx, k)
    repo.checkout_tree(index_tree, repo.tree_of(st.current))
    step = st.steps[k]
    where = ctx.checkout.path
    ctx.ui.result(
        f"edit: stopped at {step.id} (HEAD in {where}); change it with `git commit --amend`, "
        f"add patches after it with `git commit`, then `{st.command} --continue` "
        f"(or `{st.command} --abort`)"
    )


def stop_ref(st: RebaseState, k: int) -> str:
    assert st.stop is not None
    return f"{rstate.STOP_PREFIX}{st.stop.kind}-{st.steps[k].id}"


def _stop_transaction(ctx: Context, k: int) -> None:
    """Save the state with its stop; detach HEAD at st.current, logged so that
    ``git status`` says ``HEAD detached at refs/series/stop/<kind>-<id>``."""
    st, repo = ctx.state, ctx.repo
    old_blob = repo.ref_value(rstate.STATE_REF)
    head = repo.head()
    ref = stop_ref(st, k)
    moving = (repo.symbolic_head() or head or "HEAD").removeprefix("refs/heads/")
    # git status reads the last "checkout: moving from A to B" entry of HEAD's reflog.
    with repo.transaction(f"checkout: moving from {moving} to {ref}") as txn:
        rstate.save(repo, txn, st, old_blob)
        for name, old in repo.refs(rstate.STOP_PREFIX).items():
            if name != ref:
                txn.delete(name, old)
        txn.update(ref, st.current, repo.ref_value(ref) or ZERO)
        if head != st.current or repo.symbolic_head() is not None:
            txn.detach_head(st.current, head or ZERO)


def _drop(step: StepState, status: str, why: str, evidence: tuple[Evidence, ...]) -> None:
    step.status, step.note = status, why
    if evidence:
        e = evidence[0]
        step.upstream_commit = e.commit
        step.note += f" (upstream has it, {e.kind}: {e.commit[:12]} {e.subject})"


def _parent(ctx: Context, info: CommitInfo) -> Node:
    parent = ctx.infos.get(info.parent)
    tree = parent.tree if parent is not None else ctx.repo.tree_of(info.parent)
    return Node(tree, info.parent)


def _speculate(
    ctx: Context, merger: Merger, todo: list[int], actual: str
) -> dict[int, tuple[str, TreeMerge]]:
    """step -> (the tree it was merged onto, the merge), for the steps of a fresh start."""
    st = ctx.state
    if not todo or st.current != st.onto or len(todo) != len(st.steps) or st.kind != "rebase":
        return {}
    infos = [ctx.infos[st.steps[k].commit] for k in todo]
    pin = Node(ctx.repo.tree_of(st.base), st.base)
    onto = Node(actual, st.onto)
    predicted = merger.run([Job(pin, onto, Node(i.tree, i.commit, i.parent)) for i in infos])
    ontos = [actual] + [m.tree if m.clean else "" for m in predicted[:-1]]
    jobs = [
        (k, x, Job(_parent(ctx, i), Node(x), Node(i.tree, i.commit, i.parent)))
        for k, x, i in zip(todo, ontos, infos, strict=True)
        if x
    ]
    verified = merger.run([j for _, _, j in jobs])
    return {k: (x, m) for (k, x, _), m in zip(jobs, verified, strict=True)}


def _commit(ctx: Context, made: list[tuple[int, str]]) -> None:
    """Write the commits of the steps replayed so far (one process), onto st.current."""
    if not made:
        return
    st = ctx.state
    chain = []
    for k, tree in made:
        info = ctx.infos[st.steps[k].commit]
        chain.append((tree, info.message, info.author))
    ids = ctx.repo.write_commits(chain, st.current)
    for (k, _), commit in zip(made, ids, strict=True):
        st.steps[k].new = commit
    st.current = ids[-1]
    made.clear()


def _recorded(ctx: Context, k: int, merge: TreeMerge) -> str | None:
    """The tree a recorded resolution gives; else stop the rebase (and return None)."""
    step, repo = ctx.state.steps[k], ctx.repo
    key = resolutions.conflict_key(step.id, merge.entries)
    conflicted = resolutions.conflict_tree(repo, merge, step.id)
    path = resolutions.path_for(ctx.series.root, step.id, key)
    note = ""
    if path.is_file():
        resolved = resolutions.replay(repo, path, key, conflicted)
        if resolved is not None:
            step.resolution = str(path.relative_to(ctx.series.root))
            step.note = "resolved by the recorded resolution"
            ctx.ui.status(f"  {step.id:<4} conflict resolved by {step.resolution}")
            return resolved
        note = f"{path.name} is recorded for this conflict but does not apply to it"
    others = [p for p in resolutions.recorded(ctx.series.root, step.id) if p != path]
    if others and not note:
        names = ", ".join(str(p.relative_to(ctx.series.root)) for p in others)
        note = (
            f"recorded resolution(s) {names} were made for another conflict "
            "(upstream or the patch changed since): not replayed"
        )
    stop(ctx, k, merge, conflicted, key, note)
    return None


def stop(ctx: Context, k: int, merge: TreeMerge, conflicted: str, key: str, note: str) -> None:
    """Write the state, detach HEAD at the commit so far, write the conflict; raise."""
    st, repo = ctx.state, ctx.repo
    files = list(merge.files)
    touched = [f"{c} {subject}" for c, subject, fs in ctx.commits if set(fs) & set(files)][:10]
    index_tree = repo.index_tree()
    assert index_tree is not None, "the checkout was clean when the rebase began"
    stages = [(e.mode, e.oid, e.stage, e.path) for e in merge.entries]
    st.stop = Stop(k, conflicted, key, files, stages, index_tree, touched, note)
    _stop_transaction(ctx, k)
    write_conflict(repo, st.stop)
    raise conflict_error(ctx)


def write_conflict(repo: Repo, s: Stop) -> None:
    """The conflicted files with markers into the work tree, their stages into the index."""
    repo.checkout_tree(s.written_from, s.conflict_tree)
    repo.stage_conflicts(s.stages)


def conflict_error(ctx: Context) -> ConflictError:
    st = ctx.state
    assert st.stop is not None
    s, step = st.stop, st.steps[st.stop.index]
    where = ctx.checkout.path
    why = [f"conflict: {f}" for f in s.files]
    if st.kind == "rebase":
        why += ["upstream commits since the pin that touched them:"] + [
            f"  {u[:12]}{u[40:]}" for u in s.upstream
        ]
    if s.note:
        why.append(s.note)
    why.append(
        f"{where} has the conflicted files with markers; HEAD is {st.onto_rev} with the "
        f"patches before {step.id}"
    )
    files = " ".join(s.files)
    cmd = st.command
    return ConflictError(
        f"{st.kind} stopped: {step.id} ({_patch(ctx, step.id).title}) conflicts with "
        f"{st.onto_label}",
        why="\n".join(why),
        hint=f"resolve, `git -C {where} add {files}`, then `{cmd} --continue` "
        f"(the resolution is recorded under resolutions/{step.id}/ and replayed next time);\n"
        f"`{cmd} --skip` drops {step.id} (series.toml records why); "
        f"`{cmd} --abort` puts everything back",
    )

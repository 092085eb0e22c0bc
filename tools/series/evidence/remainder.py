"""What upstream lacks of a patch, hunk by hunk, and the patch reduced to it.

Upstream often merges a narrower change under a fork patch's PR number, or
writes it differently. Knowing that upstream "has the PR" says nothing of
which lines it took, so every hunk of the patch (series.evidence.hunks) is
put to git on its own: the hunk alone applied to the patch's parent (a
tree), then merged onto the tree the patch is replayed onto (``onto``:
the new upstream, plus the patches before it), over the parent, with
``git merge-tree`` (series.merge). A hunk whose merge is clean and changes
nothing is already there (``upstream``, in the patch's own lines); clean
and changing the tree, upstream lacks it (``missing``); a conflict is
upstream holding it in another form (``other-form``) when the conflict
comes from a commit that carries the evidence, and an ordinary conflict
(``conflict``) otherwise.

Which upstream commit took a hunk is asked the same way, of each
candidate (the evidence commits, then the upstream commits touching the
hunk's file): the hunk merged onto the candidate's parent and onto the
candidate. A candidate took it in the patch's own lines when the hunk is a
no-op on the candidate and not on its parent; in another form when it
merges onto the parent and conflicts on the candidate. A commit that took
a hunk in the patch's own lines is evidence too.

The proposed remainder is the whole patch merged onto ``onto``: git's own
tree where the merge is clean (the same as a plain cherry-pick), and
otherwise the merge with each conflict resolved towards upstream
(``Merger.favour_ours``): upstream's form where the two overlap, the
patch's side elsewhere, no conflict markers.

Every merge of a run goes to one ``merge-tree`` batch; all objects are
written in the merger's scratch store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from series.evidence.hunks import Unit, split
from series.git import LogEntry, TreeMerge
from series.merge import Job, Merger, Node

STATES = ("upstream", "other-form", "missing", "conflict")
_CANDIDATES = 8  # upstream commits asked per hunk


@dataclass(frozen=True)
class Ask:
    """One patch to weigh: its commit on its parent, and the tree it is replayed onto."""

    id: str
    parent: Node  # a commit
    patch: Node
    onto: Node
    evidence: tuple[str, ...] = ()  # upstream commits that carry evidence (PR number, patch-id)


@dataclass(frozen=True)
class Hunk:
    unit: Unit
    state: str  # one of STATES
    commits: tuple[str, ...] = ()  # the upstream commits that took it (or conflict with it)

    @property
    def given(self) -> bool:
        """Upstream holds it, in the patch's lines or in its own."""
        return self.state in ("upstream", "other-form")


@dataclass(frozen=True)
class Remainder:
    id: str
    verdict: str  # full | partial | none
    hunks: tuple[Hunk, ...]
    tree: str  # the proposed remainder on ``onto``
    clean: bool  # git merged the whole patch without a conflict (tree is git's own)
    evidence: tuple[str, ...] = ()  # the commits that carry evidence, found ones included

    @property
    def given(self) -> tuple[Hunk, ...]:
        return tuple(h for h in self.hunks if h.given)

    @property
    def remaining(self) -> tuple[Hunk, ...]:
        return tuple(h for h in self.hunks if not h.given)

    @property
    def other_form(self) -> tuple[Hunk, ...]:
        return tuple(h for h in self.hunks if h.state == "other-form")

    @property
    def conflicts(self) -> tuple[Hunk, ...]:
        return tuple(h for h in self.hunks if h.state == "conflict")

    @property
    def commits(self) -> tuple[str, ...]:
        """The upstream commits that took a part, in order of first mention."""
        seen: dict[str, None] = {}
        for h in self.given:
            seen.update(dict.fromkeys(h.commits))
        return tuple(seen)


@dataclass
class _Plan:
    ask: Ask
    units: list[Unit]
    trees: list[str | None]
    candidates: list[list[str]] = field(default_factory=list)


def weigh(
    merger: Merger, asks: Sequence[Ask], upstream: Sequence[LogEntry]
) -> dict[str, Remainder]:
    """patch id -> what upstream holds of it and what remains (patches with a diff only)."""
    repo = merger.repo
    plans: list[_Plan] = []
    for ask in asks:
        units = split(repo.diffs.trees(ask.parent.tree, ask.patch.tree))
        if not units:
            continue
        trees = repo.index.apply_each(ask.parent.tree, [u.diff for u in units], merger.env)
        plan = _Plan(ask, units, trees)
        for unit in units:
            touching = [c.commit for c in upstream if unit.path in c.files]
            plan.candidates.append(list(dict.fromkeys([*ask.evidence, *touching]))[:_CANDIDATES])
        plans.append(plan)
    nodes = _candidate_nodes(merger, plans)
    jobs: list[Job] = []
    for plan in plans:
        a = plan.ask
        jobs.append(Job(a.parent, a.onto, a.patch))
        for tree, cands in zip(plan.trees, plan.candidates, strict=True):
            hunk = Node(tree or a.patch.tree)
            jobs.append(Job(a.parent, a.onto, hunk))
            for c in cands:
                parent, node = nodes[c]
                jobs += [Job(a.parent, parent or node, hunk), Job(a.parent, node, hunk)]
    results = iter(merger.run(jobs))
    found: dict[str, Remainder] = {}
    for plan in plans:
        found[plan.ask.id] = _judge(merger, plan, nodes, results)
    return found


def _candidate_nodes(merger: Merger, plans: list[_Plan]) -> dict[str, tuple[Node | None, Node]]:
    repo = merger.repo
    nodes: dict[str, tuple[Node | None, Node]] = {}
    for plan in plans:
        for commit in (c for cands in plan.candidates for c in cands):
            if commit in nodes:
                continue
            parent = repo.objects.rev(f"{commit}^")
            pnode = Node(repo.objects.tree_of(parent), parent) if parent else None
            nodes[commit] = (pnode, Node(repo.objects.tree_of(commit), commit))
    return nodes


def _judge(
    merger: Merger,
    plan: _Plan,
    nodes: dict[str, tuple[Node | None, Node]],
    it: Iterator[TreeMerge],
) -> Remainder:
    ask = plan.ask
    whole = next(it)
    rows: list[tuple[Unit, str, list[str], list[str], list[str]]] = []
    for unit, tree, cands in zip(plan.units, plan.trees, plan.candidates, strict=True):
        merged = next(it)
        took, other, blocks = [], [], []
        for c in cands:
            parent, node = nodes[c]
            before, after = next(it), next(it)
            lacks = before.clean and before.tree != (parent or node).tree
            if after.clean and after.tree == node.tree and (parent is None or lacks):
                took.append(c)
            elif lacks and not after.clean:
                other.append(c)
        if tree is None or (merged.clean and merged.tree != ask.onto.tree):
            state = "missing"
        elif merged.clean:
            state = "upstream"
        else:
            state = "conflict"
            blocks = other
        rows.append((unit, state, took, other, blocks))
    evidence = list(ask.evidence)
    for _, state, took, _, _ in rows:
        if state == "upstream":
            evidence += [c for c in took if c not in evidence]
    hunks = []
    for unit, state, took, other, _ in rows:
        commits: list[str] = took if state == "upstream" else []
        if state == "conflict":
            carried = [c for c in other if c in evidence]
            if carried:
                state, commits = "other-form", carried
            else:
                commits = other
        hunks.append(Hunk(unit, state, tuple(commits)))
    given = [h for h in hunks if h.given]
    nothing_left = whole.clean and whole.tree == ask.onto.tree
    verdict = "partial" if given else "none"
    if nothing_left or len(given) == len(hunks):
        verdict = "full"
    tree = whole.tree if whole.clean else merger.favour_ours(whole)
    return Remainder(ask.id, verdict, tuple(hunks), tree, whole.clean, tuple(evidence))

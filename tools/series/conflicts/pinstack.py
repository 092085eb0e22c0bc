"""The stack on its pin, as check-conflicts needs it.

check-conflicts needs the series as commits (the patch files applied in
order on the pin by ``series.builder.build(..., memo=True)``) plus, for each,
its tree, parent and the files it changes, and a per-patch status (clean,
empty, conflict, not checked).

The memo refs are only a cache: a concurrent run may hold their locks, or
prune them, so trees are read from them when they are there and asked of
git otherwise (parents need neither: each stack commit's is the one
before). A patch file that git cannot parse is bad input (exit 2, raised
by series.builder), not a conflict: no rebase would make it apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from series.builder import memo
from series.builder.build import Failure
from series.git import Repo
from series.manifest import Patch
from series.merge import Node, PinStep, Stacked

if TYPE_CHECKING:
    from series.project import Series


def build_stack(series: Series, base: str) -> Stacked:
    patches = list(series.manifest.patches)
    built = series.stack(base, patches)
    repo = series.cache
    refs = repo.refs.commits_under(memo.MEMO)
    info = {commit: tree for commit, tree, _ in refs.values()}
    nodes = [Node(repo.objects.tree_of(base), base)]
    for step in built.steps:
        tree = info.get(step.commit) or repo.objects.tree_of(step.commit)
        nodes.append(Node(tree, step.commit, nodes[-1].commit))
    steps = _pin_steps(patches, nodes, [s.three_way for s in built.steps], built.failure)
    by_commit = _stack_files(repo, nodes)
    files = {st.patch.id: by_commit.get(str(st.commit), ()) for st in steps if st.commit}
    data = {p.id: d for p, d in zip(patches, built.data, strict=False)}
    return Stacked(nodes[0], steps, nodes, files, built.reused, data)


def _pin_steps(
    patches: list[Patch], nodes: list[Node], three: list[bool], failure: Failure[Patch] | None
) -> list[PinStep]:
    steps = []
    for i, patch in enumerate(patches):
        if i + 1 < len(nodes):
            node = nodes[i + 1]
            status = "empty" if node.tree == nodes[i].tree else "clean"
            steps.append(PinStep(patch, status, node.commit, three[i]))
        elif failure is not None and failure.patch.id == patch.id:
            files = failure.conflicted or failure.failed_hunks
            last = failure.stderr.strip().splitlines()[-1:]
            steps.append(PinStep(patch, "conflict", files=tuple(files), detail="".join(last)))
        else:
            after = failure.patch.id if failure else "?"
            steps.append(PinStep(patch, "not-checked", detail=f"{after} does not apply"))
    return steps


def _stack_files(repo: Repo, nodes: list[Node]) -> dict[str, tuple[str, ...]]:
    if len(nodes) < 2:
        return {}
    tip, pin = nodes[-1].commit, nodes[0].commit
    entries = repo.history.log_files([str(tip), f"^{pin}"])
    return {e.commit: e.files for e in entries}

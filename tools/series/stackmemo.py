"""The stack on its pin, built once and memoised in the cache repository.

check-conflicts needs the series as commits (the patch files applied in
order on the pin, by series.stack) on every run, and building them costs
several git processes per patch. So each stack commit is kept under
``refs/series/stack/<key>``, where the key hashes the base, the id and
bytes of every patch up to it, and the source of the code that builds the
commits (stack.py, series.py, git.py): an unchanged series costs one
``for-each-ref``, and after an edit to patch k only k and its successors
are rebuilt. At most MEMO_LIMIT refs are kept; they are a cache, and
deleting the cache directory is always safe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from series import git as git_module
from series import series as series_module
from series import stack
from series.git import Repo
from series.manifest import Patch
from series.merges import Node
from series.series import Series

MEMO = "refs/series/stack/"
MEMO_LIMIT = 256


@dataclass(frozen=True)
class PinStep:
    patch: Patch
    status: str  # clean | empty | conflict | not-checked
    commit: str | None = None
    three_way: bool = False
    files: tuple[str, ...] = ()  # conflicted files, or hunks that failed
    detail: str = ""


@dataclass
class Stacked:
    pin: Node
    steps: list[PinStep]
    nodes: list[Node]  # pin, then one per patch that applied
    files: dict[str, tuple[str, ...]]  # patch id -> files it changes
    reused: int = 0

    @property
    def patches(self) -> list[Patch]:
        return [s.patch for s in self.steps[: len(self.nodes) - 1]]


def _salt() -> bytes:
    """Memo keys change whenever the code that builds the commits changes."""
    digest = hashlib.sha1()
    for module in (stack, series_module, git_module):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.digest()


def memo_keys(series: Series, base: str, patches: list[Patch]) -> list[str]:
    key = hashlib.sha1(_salt() + base.encode()).hexdigest()
    keys = []
    for patch in patches:
        data = series.patch_path(patch).read_bytes()
        key = hashlib.sha1(f"{key}\0{patch.id}\0".encode() + data).hexdigest()
        keys.append(key)
    return keys


def build_stack(series: Series, repo: Repo, base: str) -> Stacked:
    patches = list(series.manifest.patches)
    keys = memo_keys(series, base, patches)
    refs = repo.ref_commits("refs/series/")
    memo = {}
    for name, (commit, tree, parent) in refs.items():
        if name.startswith(MEMO):
            key, _, flag = name.removeprefix(MEMO).partition(".")
            memo[key] = (Node(tree, commit, parent), flag == "3way")
    pin_tree = next((t for c, t, _ in refs.values() if c == base), None) or repo.tree_of(base)
    nodes, three = [Node(pin_tree, base)], []
    for key in keys:
        hit = memo.get(key)
        if hit is None or hit[0].parent != nodes[-1].commit:
            break
        nodes.append(hit[0])
        three.append(hit[1])
    reused = len(nodes) - 1
    failure = None
    if reused < len(patches):
        tip = nodes[-1].commit
        assert tip is not None
        built = stack.build(series, repo, tip, patches[reused:])
        failure = built.failure
        updates = [
            f"update {MEMO}{keys[reused + i]}{'.3way' if s.three_way else ''} {s.commit}"
            for i, s in enumerate(built.steps)
        ]
        if len(memo) + len(updates) > MEMO_LIMIT:
            kept = set(keys)
            stale = [n for n in refs if n.startswith(MEMO) and n[len(MEMO) :][:40] not in kept]
            updates += [f"delete {name}" for name in stale]
        repo.update_refs(updates, "series check-conflicts: memoise the stack")
        fresh = {c: (t, p) for c, t, p in repo.ref_commits(MEMO).values()}
        for s in built.steps:
            tree, parent = fresh[s.commit]
            nodes.append(Node(tree, s.commit, parent))
            three.append(s.three_way)
    steps = _pin_steps(patches, nodes, three, failure)
    by_commit = _stack_files(repo, nodes)
    files = {st.patch.id: by_commit.get(str(st.commit), ()) for st in steps if st.commit}
    return Stacked(nodes[0], steps, nodes, files, reused)


def _pin_steps(
    patches: list[Patch], nodes: list[Node], three: list[bool], failure: stack.Failure | None
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
    entries = repo.log_files([str(tip), f"^{pin}"])
    return {e.commit: e.files for e in entries}

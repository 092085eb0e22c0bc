"""The arms of ``series bench`` and the states of ``series scorecard``, as trees on disk.

Arms, as upstream reported them: the pin; each patch alone on the pin
(where it applies alone); the stack after each patch (k is compared with
k - 1); and the whole stack against the pin. The commits are built in the
cache repository (``Series.stack``, memoised) and each is checked out once
into ``<cache>/bench/trees/<tree id>``, a linked work tree of the cache
repository that later runs reuse: a tree id names its content, so an
unchanged patch costs nothing the next time.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from series.git import Repo
from series.locks import exclusive
from series.manifest import Patch
from series.runs.bench.spec import Arm, Pair
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series

PIN = "pin"


@dataclass
class Plan:
    arms: list[Arm] = field(default_factory=list)
    states: list[Arm] = field(default_factory=list)  # pin, then the stack after each patch
    pairs: list[Pair] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why an arm is missing


def state_name(patch: Patch) -> str:
    return f"1..{patch.id}"


def plan(series: Series, ui: Ui, ids: list[str] | None, *, alone: bool = True) -> Plan:
    """Every arm and pair for the patches ``ids`` (all when empty), trees on disk."""
    wanted = {p.id for p in series.select(ids)}  # an unknown id fails before any work
    base = series.pin(ui)
    patches = list(series.manifest.patches)
    built = series.stack(base.commit, patches)
    trees = _Trees(series.cache, series.cache_dir / "bench" / "trees")
    result = Plan()
    pin = Arm(PIN, trees.get(base.commit))
    result.arms.append(pin)
    result.states.append(pin)
    if built.failure is not None:
        result.skipped.append(
            f"{built.failure.patch.id} does not apply on the stack: "
            f"{built.failure.describe()}; it and later patches have no arm"
        )
    for step in built.steps:
        state = Arm(state_name(step.patch), trees.get(step.commit))
        previous = result.states[-1]
        result.states.append(state)
        if step.patch.id not in wanted:
            continue
        result.arms += [a for a in (previous, state) if a not in result.arms]
        result.pairs.append(Pair(previous.name, state.name, f"+{step.patch.id} on {previous.name}"))
        if alone:
            _alone(series, base.commit, step.patch, trees, result)
    if not ids and len(result.states) > 1:
        result.pairs.append(Pair(PIN, result.states[-1].name, "stack vs pin"))
    return result


def _alone(series: Series, pin: str, patch: Patch, trees: _Trees, result: Plan) -> None:
    single = series.stack(pin, [patch])
    if single.failure is not None:
        result.skipped.append(
            f"{patch.id} does not apply alone on the pin: {single.failure.describe()}"
        )
        return
    arm = Arm(f"{patch.id} alone", trees.get(single.tip))
    result.arms.append(arm)
    result.pairs.append(Pair(PIN, arm.name))


class _Trees:
    """Linked work trees of the cache repository, one per tree id, made once."""

    def __init__(self, repo: Repo, root: Path) -> None:
        self.repo, self.root = repo, root

    def get(self, commit: str) -> Path:
        path = self.root / self.repo.objects.tree_of(commit)[:20]
        if Repo(path).worktree.is_linked():
            return path
        self.root.mkdir(parents=True, exist_ok=True)
        with exclusive(self.root / "add.lock"):
            if not Repo(path).worktree.is_linked():
                if path.exists():  # what an interrupted add left: series owns it
                    shutil.rmtree(path)
                self.repo.worktree.add(path, commit)
        return path

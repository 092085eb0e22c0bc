"""Turn patch files into commits, in memory, the way ``git am -3`` would.

Each patch is split with ``git mailinfo``, applied with ``git apply --cached``
to a scratch index holding its parent's tree (falling back to ``--3way``,
which uses the blob ids in the patch's index lines), and committed with
``commit-tree`` using the patch's author, date and message for both author
and committer. The result depends only on the base and the patch bytes, so
the same inputs always give the same commit ids, and no work tree is touched.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from series.git import Repo, mailinfo
from series.manifest import Patch
from series.series import Series, with_trailer


@dataclass(frozen=True)
class Step:
    patch: Patch
    commit: str
    three_way: bool


@dataclass(frozen=True)
class Failure:
    patch: Patch
    conflicted: tuple[str, ...]
    failed_hunks: tuple[str, ...]
    stderr: str


@dataclass
class Built:
    base: str
    steps: list[Step] = field(default_factory=list)
    failure: Failure | None = None

    @property
    def tip(self) -> str:
        return self.steps[-1].commit if self.steps else self.base


def build(series: Series, repo: Repo, base: str, patches: list[Patch]) -> Built:
    """Apply ``patches`` in order on ``base``; stop at the first that fails."""
    built = Built(base)
    with tempfile.TemporaryDirectory(prefix="series-stack-") as tmp:
        scratch = Path(tmp)
        for patch in patches:
            info = mailinfo(series.patch_path(patch), scratch)
            diff = scratch / "diff"
            parent = built.tip
            with repo.scratch_index(parent) as env:
                if info.diff.strip():
                    result = repo.apply_to_index(env, diff)
                    if not result.ok:
                        built.failure = Failure(
                            patch, result.conflicted, result.failed, result.stderr
                        )
                        return built
                    three_way = result.three_way
                else:
                    three_way = False
                tree = repo.write_tree(env)
            message = with_trailer(info.message, patch.id)
            commit = repo.commit_tree(tree, [parent], message, info.author)
            built.steps.append(Step(patch, commit, three_way))
    return built

"""Turn patch files into commits, in memory, the way ``git am -3`` would.

Each patch is split with ``git mailinfo``, applied with ``git apply --cached``
to a scratch index holding its parent's tree (falling back to ``--3way``,
which uses the blob ids in the patch's index lines), and committed with
``commit-tree`` using the patch's author, date and message for both author
and committer. The result depends only on the base and the patch bytes, so
the same inputs always give the same commit ids, and no work tree is touched.

Because of that, results can be memoised: with ``memo=True`` each commit is
kept under ``refs/series/stack/<key>`` in the repository it was built in (the
per-user cache repository), where the key hashes the base, the id and bytes
of every patch up to it, and the source of the code that makes the commits.
An unchanged series then costs one ``for-each-ref``; after an edit to patch k
only k and its successors are built again. At most MEMO_LIMIT refs are kept;
they are a cache, and deleting them is always safe.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from series import git as git_module
from series import series as series_module
from series.errors import UsageError
from series.git import GitFailed, Repo, mailinfo
from series.manifest import Patch
from series.series import Series, with_trailer

log = logging.getLogger("series.stack")
MEMO = "refs/series/stack/"
MEMO_LIMIT = 256


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

    def describe(self) -> str:
        """One line for a report: where it conflicts, else git's last word."""
        where = [*self.conflicted, *self.failed_hunks]
        if where:
            return f"conflicts in {', '.join(where)}"
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else "git apply failed"


# What `git apply` says about a diff it cannot parse, as opposed to one that
# does not fit the tree: no rebase would make such a patch apply.
_CORRUPT = re.compile(
    r"corrupt patch|patch fragment without header|only garbage|No valid patches|unrecognized input"
)


@dataclass
class Built:
    base: str
    steps: list[Step] = field(default_factory=list)
    failure: Failure | None = None
    reused: int = 0  # leading steps taken from the memo

    @property
    def tip(self) -> str:
        return self.steps[-1].commit if self.steps else self.base


def build(
    series: Series, repo: Repo, base: str, patches: list[Patch], *, memo: bool = False
) -> Built:
    """Apply ``patches`` in order on ``base``; stop at the first that fails.

    With ``memo``, reuse and record commits under MEMO in ``repo``.
    """
    if not memo:
        return _build(series, repo, base, patches)
    keys = memo_keys(series, base, patches)
    known: dict[str, tuple[str, bool]] = {}
    for name, commit in repo.refs(MEMO).items():
        key, _, flag = name.removeprefix(MEMO).partition(".")
        known[key] = (commit, flag == "3way")
    built = Built(base)
    for patch, key in zip(patches, keys, strict=True):
        if key not in known:
            break
        commit, three_way = known[key]
        built.steps.append(Step(patch, commit, three_way))
    reused = built.reused = len(built.steps)
    if reused == len(patches):
        return built
    rest = _build(series, repo, built.tip, patches[reused:])
    built.steps += rest.steps
    built.failure = rest.failure
    updates = [
        f"update {MEMO}{keys[reused + i]}{'.3way' if step.three_way else ''} {step.commit}"
        for i, step in enumerate(rest.steps)
    ]
    if len(known) + len(updates) > MEMO_LIMIT:
        wanted = set(keys)
        updates += [f"delete {MEMO}{k}" for k, (_, t) in known.items() if k not in wanted and not t]
        updates += [
            f"delete {MEMO}{k}.3way" for k, (_, t) in known.items() if k not in wanted and t
        ]
    try:
        repo.update_refs(updates, "series: memoise the stack")
    except GitFailed as exc:  # a concurrent run holds the ref locks: the memo is optional
        log.debug("memo not recorded: %s", exc.stderr.strip())
    return built


def _salt() -> bytes:
    """Memo keys change whenever the code that builds the commits changes."""
    digest = hashlib.sha1()
    for module in (git_module, series_module):
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.digest()


def memo_keys(series: Series, base: str, patches: list[Patch]) -> list[str]:
    key = hashlib.sha1(_salt() + base.encode()).hexdigest()
    keys = []
    for patch in patches:
        data = series.patch_path(patch).read_bytes()
        key = hashlib.sha1(f"{key}\0{patch.id}\0".encode() + data).hexdigest()
        keys.append(key)
    return keys


def _build(series: Series, repo: Repo, base: str, patches: list[Patch]) -> Built:
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
                    if not result.ok and _CORRUPT.search(result.stderr):
                        _refuse_corrupt(series, patch, result.stderr)
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


def _refuse_corrupt(series: Series, patch: Patch, stderr: str) -> NoReturn:
    lines = dict.fromkeys(line for line in stderr.splitlines() if line.strip())
    raise UsageError(
        f"{series.patch_path(patch)} is corrupt: git apply cannot read its diff",
        why="\n".join(lines),
        hint=f"restore it from git, or export {patch.id} again with `series export`",
    )

"""Evidence that a patch is already upstream: the same patch-id, or its PR number.

Read from the upstream commits since the pin (a :class:`~series.merge.Target`)
and the stack as merge nodes (:class:`~series.merge.Stacked`): an upstream
commit whose patch-id (over the files the series touches) is a patch's,
or whose subject ends in ``(#N)`` or starts ``Merge pull request #N`` where
N is the patch's ``pr``. check-conflicts reports it; rebase drops a patch
with patch-id evidence, as git rebase does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from series.evidence import patchids
from series.git import Repo
from series.merge import Stacked, Target

_PR = (re.compile(r"\(#(\d+)\)\s*$"), re.compile(r"^Merge pull request #(\d+)\b"))


@dataclass(frozen=True)
class Evidence:
    kind: str  # patch-id | pr
    commit: str
    subject: str


def find_evidence(
    repo: Repo, stacked: Stacked, target: Target, cache_dir: Path | None = None
) -> dict[str, tuple[Evidence, ...]]:
    """patch id -> upstream commits with the same patch-id, or naming its PR.

    ``cache_dir``: the per-user cache, where the patch-ids of commits are
    kept (series.evidence.patchids): only the commits it lacks are diffed.
    """
    if not target.revs:
        return {}
    paths = sorted({f for files in stacked.files.values() for f in files})
    pin, tip = stacked.pin.commit, stacked.nodes[-1].commit
    revs = [str(tip), *target.revs, f"^{pin}"]
    if not paths:
        ids: dict[str, str] = {}
    elif cache_dir is None:
        ids = repo.diffs.patch_ids(revs, paths)
    else:
        ids = _patch_ids(repo, cache_dir, revs, paths)
    ours = {str(node.commit) for node in stacked.nodes[1:]}
    upstream_ids: dict[str, list[str]] = {}
    for commit, pid in ids.items():
        if commit not in ours:
            upstream_ids.setdefault(pid, []).append(commit)
    subjects = {c.commit: c.subject for c in target.commits}
    prs: dict[int, list[str]] = {}
    for c in target.commits:
        for pattern in _PR:
            match = pattern.search(c.subject)
            if match:
                prs.setdefault(int(match.group(1)), []).append(c.commit)
    found: dict[str, tuple[Evidence, ...]] = {}
    for node, patch in zip(stacked.nodes[1:], stacked.patches, strict=True):
        items = [
            Evidence("patch-id", c, subjects.get(c, ""))
            for c in upstream_ids.get(ids.get(str(node.commit), ""), [])
        ]
        if patch.pr is not None:
            items += [Evidence("pr", c, subjects.get(c, "")) for c in prs.get(patch.pr, [])]
        if items:
            found[patch.id] = tuple(items)
    return found


def _patch_ids(repo: Repo, cache_dir: Path, revs: list[str], paths: list[str]) -> dict[str, str]:
    """``Diffs.patch_ids`` of ``revs`` over ``paths``, the cache's ids first."""
    listed = repo.diffs.touching(revs, paths)
    known = patchids.recall(cache_dir, listed)
    fresh = repo.diffs.patch_ids_of([c for c in listed if c not in known])
    patchids.keep(cache_dir, fresh)
    every = {**known, **fresh}
    return {c: every[c] for c in listed if c in every}

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

from series.git import Repo
from series.merge import Stacked, Target

_PR = (re.compile(r"\(#(\d+)\)\s*$"), re.compile(r"^Merge pull request #(\d+)\b"))


@dataclass(frozen=True)
class Evidence:
    kind: str  # patch-id | pr
    commit: str
    subject: str


def find_evidence(repo: Repo, stacked: Stacked, target: Target) -> dict[str, tuple[Evidence, ...]]:
    """patch id -> upstream commits with the same patch-id, or naming its PR."""
    if not target.revs:
        return {}
    paths = sorted({f for files in stacked.files.values() for f in files})
    pin, tip = stacked.pin.commit, stacked.nodes[-1].commit
    ids = repo.diffs.patch_ids([str(tip), *target.revs, f"^{pin}"], paths) if paths else {}
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

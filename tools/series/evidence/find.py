"""Evidence that a patch is already upstream: the same patch-id, or its PR number.

Read from the upstream commits since the pin (a :class:`~series.merge.Target`)
and the stack as merge nodes (:class:`~series.merge.Stacked`): an upstream
commit whose patch-id (of the whole commit; only one that changes exactly a
patch's files can have it) is a patch's, or whose subject ends in ``(#N)``
or starts ``Merge pull request #N`` where N is the patch's ``pr``.
check-conflicts reports it; rebase drops a patch with patch-id evidence, as
git rebase does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    repo: Repo,
    stacked: Stacked,
    target: Target,
    cache_dir: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, tuple[Evidence, ...]]:
    """patch id -> upstream commits with the same patch-id, or naming its PR.

    The upstream commits are the target's (the range since the pin, each
    with the files it changes); the patch-id of each one that changes
    exactly the files of a patch, and of each patch, is asked of git once and kept in
    ``cache_dir``, the per-user cache, by commit (series.evidence.patchids):
    a second run over the same range diffs no commit. ``say`` prints the
    warning about a cache file that was not trusted.
    """
    if not target.revs:
        return {}
    paths = {f for files in stacked.files.values() for f in files}
    mine = [node.commit for node in stacked.nodes[1:] if node.commit]
    ours = set(mine)
    # A patch-id hashes each file's diff with the file's name: a commit can share one
    # with a patch only if it changes exactly the patch's files (both lists are git's
    # `log --name-only --no-renames`). Only those commits are diffed.
    shapes = {frozenset(files) for files in stacked.files.values() if files}
    touching = [
        c.commit
        for c in target.commits
        if c.commit not in ours
        and (c.parents is None or len(c.parents) == 1)
        and frozenset(c.files) in shapes
    ]
    ids = patchids.patch_ids(repo, [*mine, *touching], cache_dir, say) if paths else {}
    upstream_ids: dict[str, list[str]] = {}
    for commit in touching:
        if commit in ids:
            upstream_ids.setdefault(ids[commit], []).append(commit)
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

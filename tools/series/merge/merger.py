"""Many three-way merges, in memory, in a handful of git processes.

check-conflicts asks a hundred questions of the form "does this merge
cleanly?", each a merge of two trees over a base the caller chooses: a
cherry-pick of patch k onto X is the merge of X and patch k's commit over
patch k's parent. A git process costs milliseconds, so the merges go to
``git merge-tree --write-tree --stdin`` in batches, one process per batch
(two at once, its halves, for a long batch when a core is idle:
series.git.mergetree ``Merge.trees``), and nothing touches a work tree or
an index. A replay, whose merges each need the one before, goes to the
merge stream instead (:meth:`Merger.stream_line`).

Choosing the base. Where git takes ``<base> -- <one> <two>`` lines (the
batch form of ``--merge-base``, probed once per run), the base is named
directly. Git 2.39 does not, so each side becomes a synthetic commit whose
only parent is the base: the merge base git then computes is exactly that
base, whatever the real histories are (the base is a common ancestor, and
every other common ancestor is an ancestor of it). The synthetic commits
of a batch are written with one ``hash-object --stdin-paths``.

Everything a ``Merger`` writes (synthetic commits, merge results) goes to a
scratch object store that is deleted when the run ends
(``series.git.mergetree``), so the cache repository does not grow.

``favour_theirs`` turns a conflicted merge into the tree ``-X theirs``
would give: content conflicts through ``git merge-file --theirs``, other
conflicts (modify/delete, modes, ...) by taking the patch's side.
``favour_ours`` is the same towards ``ours`` (upstream's side, for a patch
partly upstream in another form: series.evidence.remainder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from series.errors import UsageError
from series.git.mergetree import MergeStream, StageEntry, TreeMerge
from series.git.repo import Repo
from series.git.run import ZERO
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast

MODES = ("auto", "synthetic", "merge-base")
_IDENT = b"keras-series scratch <scratch@keras-series.invalid> 0 +0000"
_REGULAR = ("100644", "100755")


class Node(NamedTuple):
    """A tree to merge, with the commit holding it when there is one."""

    tree: str
    commit: str | None = None
    parent: str | None = None  # the commit's only parent, when known


class Job(NamedTuple):
    """Merge ``ours`` and ``theirs`` over ``base`` (which must be a commit)."""

    base: Node
    ours: Node
    theirs: Node


def synthetic_commit(tree: str, parent: str | None) -> bytes:
    """The bytes of a scratch commit; the same tree and parent give the same id."""
    head = b"tree " + tree.encode() + b"\n"
    if parent:
        head += b"parent " + parent.encode() + b"\n"
    return head + b"author " + _IDENT + b"\ncommitter " + _IDENT + b"\n\nseries scratch\n"


class Merger:
    """Runs batches of ``Job``s in ``repo`` under ``env`` (a scratch-object env)."""

    def __init__(self, repo: Repo, env: Mapping[str, str], mode: str = "auto") -> None:
        if mode not in MODES:
            raise UsageError(f"unknown merge mode {mode!r}", hint=f"use one of {', '.join(MODES)}")
        self.repo = repo
        self.env = dict(env)
        self.mode = mode
        self._probed = False
        self.merges = 0
        self.batches = 0

    def _resolve_mode(self, commit: str) -> str:
        if self.mode != "synthetic" and not self._probed:
            self._probed = True
            supported = self.repo.merge.base_on_stdin(commit, env=self.env)
            if self.mode == "merge-base" and not supported:
                raise UsageError(
                    "this git cannot take a merge base in merge-tree --stdin",
                    why="`<base> -- <one> <two>` input lines need a newer git than this one",
                    hint="use --merge-mode auto (synthetic merge bases work with any git)",
                )
            self.mode = "merge-base" if supported else "synthetic"
        return self.mode

    def run(self, jobs: Sequence[Job]) -> list[TreeMerge]:
        """All ``jobs`` in one merge-tree process (plus one to write commits)."""
        if not jobs:
            return []
        first = jobs[0].base.commit
        assert first is not None
        mode = self._resolve_mode(first)
        wanted: dict[tuple[str, str], int] = {}
        sides: list[tuple[str, list[str | tuple[str, str]]]] = []
        for job in jobs:
            base = job.base.commit
            assert base is not None, "a merge base must be a commit"
            pair: list[str | tuple[str, str]] = []
            for node in (job.ours, job.theirs):
                if node.commit is not None and (mode == "merge-base" or node.parent == base):
                    pair.append(node.commit)
                else:
                    key = (node.tree, base if mode == "synthetic" else "")
                    wanted.setdefault(key, len(wanted))
                    pair.append(key)
            sides.append((base, pair))
        ids = self.repo.objects.write(
            "commit", [synthetic_commit(t, p) for t, p in wanted], env=self.env
        )
        lines = []
        for base, pair in sides:
            one, two = (s if isinstance(s, str) else ids[wanted[s]] for s in pair)
            lines.append(f"{base} -- {one} {two}" if mode == "merge-base" else f"{one} {two}")
        self.merges += len(lines)
        self.batches += 1
        return self.repo.merge.trees(lines, env=self.env)

    def stream_line(self, stream: MergeStream, job: Job) -> str | None:
        """The input line of ``job`` for ``stream`` (series.git.mergetree.MergeStream), the
        line :meth:`run` would write for it in a batch, its synthetic commits written by
        the stream's ``hash-object``; None when the stream is closed (or closes)."""
        if not stream.live:
            return None
        base = job.base.commit
        assert base is not None, "a merge base must be a commit"
        mode = self._resolve_mode(base)
        pair = []
        for node in (job.ours, job.theirs):
            if node.commit is not None and (mode == "merge-base" or node.parent == base):
                pair.append(node.commit)
                continue
            made = stream.write(
                "commit", synthetic_commit(node.tree, base if mode == "synthetic" else None)
            )
            if made is None:
                return None
            pair.append(made)
        one, two = pair
        return f"{base} -- {one} {two}" if mode == "merge-base" else f"{one} {two}"

    def favour_theirs(self, merge: TreeMerge) -> str:
        """The tree of ``merge`` with every conflict resolved towards ``theirs``."""
        return self.favour(merge, "theirs")

    def favour_ours(self, merge: TreeMerge) -> str:
        """The tree of ``merge`` with every conflict resolved towards ``ours``.

        Where the two sides change the same lines, ours; elsewhere both
        sides' changes, as merged: for a patch replayed onto upstream, the
        patch's remainder with upstream's form of what they share.
        """
        return self.favour(merge, "ours")

    def favour(self, merge: TreeMerge, side: str) -> str:
        """The tree of ``merge`` with every conflict resolved towards ``side``."""
        if merge.clean:
            return merge.tree
        stage = {"ours": 2, "theirs": 3}[side]
        stages: dict[str, dict[int, StageEntry]] = {}
        for entry in merge.entries:
            stages.setdefault(entry.path, {})[entry.stage] = entry
        contents = [
            e.oid
            for st in stages.values()
            if _both_regular(st)
            for e in st.values()
            if e.mode in _REGULAR
        ]
        blobs = self.repo.objects.read_blobs(sorted(set(contents)), env=self.env)
        index = []
        merged: list[tuple[str, str, bytes]] = []
        for path, st in sorted(stages.items()):
            chosen = st.get(stage)
            if chosen is None:
                index.append(f"0 {ZERO}\t{path}")  # that side deleted it
            elif _both_regular(st):
                base = blobs[st[1].oid] if 1 in st and st[1].mode in _REGULAR else b""
                data = self.repo.merge.file(base, blobs[st[2].oid], blobs[st[3].oid], favour=side)
                merged.append((chosen.mode, path, data))
            else:
                index.append(f"{chosen.mode} {chosen.oid}\t{path}")
        oids = self.repo.objects.write("blob", [m[2] for m in merged], env=self.env)
        index += [
            f"{mode} {oid}\t{path}" for (mode, path, _), oid in zip(merged, oids, strict=True)
        ]
        return self.repo.index.rewrite(merge.tree, index, self.env)


def _both_regular(stages: dict[int, StageEntry]) -> bool:
    ours, theirs = stages.get(2), stages.get(3)
    return ours is not None and theirs is not None and {ours.mode, theirs.mode} <= set(_REGULAR)

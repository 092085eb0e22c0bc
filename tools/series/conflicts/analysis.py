"""What ``series check-conflicts`` computes, without a work tree or an index.

Three questions, all answered with merges (series.merge) in the per-user
cache repository:

* the stack on its pin: the patch files applied in order (series.stack, memoised,
  through series.conflicts.pinstack);
* the pairwise matrix on the pin: each patch cherry-picked alone onto the
  pin, and for each pair whether the two results merge (they commute), or
  whether the later one applies only on top of the earlier one;
* a replay onto another upstream revision, patch by patch as ``git rebase``
  does, with evidence that a patch is already upstream (series.evidence:
  patch-id, or the PR number at the end of an upstream subject).

For each patch with upstream evidence, and each whose replay is empty or
conflicts (its hunks may be upstream though nothing names it), the
remainder engine (series.evidence.weigh) then says hunk by hunk what the
revision holds, in the patch's lines or in another form, and what it
lacks: the patch is fully upstream, partly upstream or not upstream
(``Replayed.remainder``), whatever its PR number says.

The replay runs two chains. The *skip* chain drops a conflicting patch and
goes on, like ``git rebase --skip``. The *favoured* chain resolves the
conflict towards the patch, like ``-X theirs``, so later patches see their
predecessors. A patch that conflicts in the skip chain but not in the
favoured one conflicts only because an earlier patch did; one that
conflicts in the favoured chain conflicts by itself. Until the first
conflict both chains are one. Each step is cherry-picked onto each chain's
tree once, when the walk asks for it, in one long-lived ``merge-tree
--stdin`` for the whole replay (series.git.mergetree.MergeStream, as
``series rebase`` merges): both chains' lines are handed to git before
either answer is read, and the stream's processes start beside the
matrix's batches. Where the stream cannot answer one merge at a time (no
``stdbuf``, or a git whose output stays buffered), the replay goes to
batches from that step on: two per chunk of patches, predicting the
result after each patch, then verifying every step against the
prediction before it (series.merge.predict: the work grows linearly with
the number of patches). Where a step does not go as predicted (a
conflict, a skipped patch), each chain predicts its next chunk again from
where it stands: the prediction's first merge is that step itself, so a
chain that conflicts at every step costs one batch per step, as step by
step would, and one that goes on cleanly after a conflict is checked in
two batches per chunk again. Every tree is git's own merge either way.

A conflict the project has a recorded resolution for (resolutions/<id>/,
series.merge.resolutions) is resolved by it, as ``series rebase`` does:
the patch is ``resolved``, not a conflict, and both chains go on from the
resolved tree. A recorded resolution that does not fit this conflict is
not used, and the note says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from series.evidence import Ask, Evidence, Remainder, find_evidence, weigh
from series.git import LogEntry, MergeMessage, TreeMerge
from series.git.mergetree import MergeStream
from series.manifest import Patch
from series.merge import Job, Merger, Node, Stacked, Target, resolutions
from series.merge.predict import predict_jobs, verify_jobs


@dataclass(frozen=True)
class Alone:
    patch: Patch
    applies: bool
    tree: str | None
    files: tuple[str, ...]  # conflicted files when it does not apply


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    result: str  # commute | conflict | needs (b applies only on a) | n/a
    files: tuple[str, ...] = ()


@dataclass
class Replayed:
    patch: Patch
    # clean | conflict | resolved | already-upstream | partly-upstream | empty (| not-checked)
    status: str
    replay: str  # clean | conflict | resolved | empty | skipped (what the rebase did) | not-checked
    cause: str | None = None  # self | earlier (conflicts only)
    blocked_by: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    conflicts: tuple[MergeMessage, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    upstream: tuple[LogEntry, ...] = ()
    tree: str | None = None  # the rebased tree after this patch (skip chain)
    note: str = ""
    resolution: str | None = None  # resolutions/<id>/<key>.patch, when one resolved it
    remainder: Remainder | None = None  # what upstream holds of it, hunk by hunk


# -- the pairwise matrix and the replay -------------------------------------------


@dataclass
class Analysis:
    alone: list[Alone] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    replayed: list[Replayed] = field(default_factory=list)


def analyse(
    merger: Merger,
    stacked: Stacked,
    target: Target | None,
    *,
    matrix: bool,
    recorded: Path | None = None,
    cache_dir: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> Analysis:
    """``recorded``: the project root whose resolutions/ the replay uses (None: none);
    ``cache_dir``: the per-user cache where the evidence keeps patch-ids by commit
    (``say`` prints its warning about a file it did not trust)."""
    stream = merger.repo.merge.stream(merger.env) if target else None
    try:
        if stream is not None:
            stream.start()  # its processes start now, beside the matrix's batches
        return _analyse(merger, stacked, target, matrix, recorded, cache_dir, say, stream)
    finally:
        if stream is not None:
            stream.close()


def _analyse(
    merger: Merger,
    stacked: Stacked,
    target: Target | None,
    matrix: bool,
    recorded: Path | None,
    cache_dir: Path | None,
    say: Callable[[str], None] | None,
    stream: MergeStream | None,
) -> Analysis:
    s, pin = stacked.nodes, stacked.pin
    n = len(s) - 1
    alone_jobs = [Job(s[k - 1], pin, s[k]) for k in range(1, n + 1)] if matrix else []
    # The first chunk predicted beside the matrix, where no stream merges step by step.
    guess = target is not None and (stream is None or not stream.live)
    predict = predict_jobs(s, 0, target.node) if target and guess else []
    first = merger.run(alone_jobs + predict)
    alone_out, predicted = first[: len(alone_jobs)], first[len(alone_jobs) :]
    result = Analysis()
    pair_jobs, pair_keys = _pair_jobs(stacked, alone_out) if matrix else ([], [])
    verify = verify_jobs(s, 0, target.node, predicted) if target and guess else []
    second = merger.run(pair_jobs + [j for j in verify if j is not None])
    pair_out, verified = second[: len(pair_jobs)], iter(second[len(pair_jobs) :])
    checked = [next(verified) if j is not None else None for j in verify]
    patches = stacked.patches
    for k, out in enumerate(alone_out):
        result.alone.append(
            Alone(patches[k], out.clean, out.tree if out.clean else None, out.files)
        )
    result.pairs = _pairs(stacked, result.alone, pair_keys, pair_out)
    if target:
        evidence = find_evidence(merger.repo, stacked, target, cache_dir, say)
        chain = _Chain(merger, stacked, target, predicted, checked, recorded, evidence, stream)
        result.replayed = chain.run()
    return result


def _pair_jobs(
    stacked: Stacked, alone: list[TreeMerge]
) -> tuple[list[Job], list[tuple[int, int, str]]]:
    s, jobs, keys = stacked.nodes, [], []
    for i in range(len(alone)):
        for j in range(i + 1, len(alone)):
            a, b = alone[i], alone[j]
            if a.clean and b.clean:
                jobs.append(Job(stacked.pin, Node(a.tree), Node(b.tree)))
                keys.append((i, j, "commute"))
            elif a.clean:
                jobs.append(Job(s[j], Node(a.tree), s[j + 1]))
                keys.append((i, j, "needs"))
    return jobs, keys


def _pairs(
    stacked: Stacked,
    alone: list[Alone],
    keys: list[tuple[int, int, str]],
    outs: list[TreeMerge],
) -> list[Pair]:
    done = {(i, j): (kind, out) for (i, j, kind), out in zip(keys, outs, strict=True)}
    pairs = []
    for i in range(len(alone)):
        for j in range(i + 1, len(alone)):
            a, b = alone[i].patch.id, alone[j].patch.id
            kind, out = done.get((i, j), ("n/a", None))
            if out is None:
                pairs.append(Pair(a, b, "n/a"))
            elif kind == "commute":
                pairs.append(Pair(a, b, "commute" if out.clean else "conflict", out.files))
            else:
                pairs.append(Pair(a, b, "needs" if out.clean else "n/a", out.files))
    return pairs


_Role = Literal["skip", "fav"]


@dataclass
class _Guess:
    """One chain's chunk predicted from ``onto`` after patch ``start``, and its verification
    (series.merge.predict; ``checked`` None until a step past the first needs it)."""

    start: int
    onto: Node
    predicted: list[TreeMerge]
    checked: list[TreeMerge | None] | None = None

    def knows(self, k: int, node: Node) -> bool:
        """Whether step k's merge onto ``node``'s tree is one of this guess's merges."""
        i = k - 1 - self.start
        if not 0 <= i < len(self.predicted):
            return False
        if i == 0:
            return node.tree == self.onto.tree  # the prediction's first merge is the step
        before = self.predicted[i - 1]
        return before.clean and before.tree == node.tree

    def merge(self, k: int) -> TreeMerge:
        i = k - 1 - self.start
        if i == 0:
            return self.predicted[0]
        assert self.checked is not None
        merge = self.checked[i]
        assert merge is not None
        return merge


class _Chain:
    """The replay onto the target: skip chain and favoured chain (module docstring)."""

    def __init__(
        self,
        merger: Merger,
        stacked: Stacked,
        target: Target,
        predicted: list[TreeMerge],
        checked: list[TreeMerge | None],
        recorded: Path | None,
        evidence: dict[str, tuple[Evidence, ...]],
        stream: MergeStream | None = None,
    ) -> None:
        self.merger, self.stacked, self.target = merger, stacked, target
        self.recorded = recorded
        self.guesses: dict[_Role, _Guess] = {}
        if predicted:
            self.guesses["skip"] = _Guess(0, target.node, predicted, checked)
        self.evidence = evidence
        self.stream = stream

    def run(self) -> list[Replayed]:
        s, patches = self.stacked.nodes, self.stacked.patches
        skip = self.fav = self.target.node
        conflicted: list[Patch] = []
        out: list[Replayed] = []
        onto: dict[str, Node] = {}
        for k in range(1, len(s)):
            patch = patches[k - 1]
            evidence = self.evidence.get(patch.id, ())
            onto[patch.id] = skip
            if s[k].tree == s[k - 1].tree:
                note = "the patch changes nothing"
                out.append(Replayed(patch, "empty", "empty", note=note, tree=skip.tree))
                continue
            if any(e.kind == "patch-id" for e in evidence):
                note = "dropped, as git rebase drops a patch already upstream"
                step = Replayed(patch, "already-upstream", "skipped", evidence=evidence, note=note)
                step.tree = skip.tree
                out.append(step)
                continue
            chains: dict[_Role, Node] = {"skip": skip}
            if self.fav != skip:
                chains["fav"] = self.fav
            outs = self._merges(k, chains)
            skip_out = outs["skip"]
            fav_out = outs.get("fav", skip_out)
            found = self._recorded(patch, skip_out)
            if found is not None and found.tree is not None:
                step = self._resolved(patch, evidence, skip_out, found)
                skip = Node(found.tree)
                same = fav_out is skip_out  # one merge for both chains
                self.fav = skip if same else Node(self._favour(patch, fav_out))
                out.append(step)
                step.tree = skip.tree
                continue
            # The favoured chain's own conflict may have a recorded resolution (one made
            # with the earlier patches in place): with it, that chain goes through.
            kept = found if fav_out is skip_out else self._recorded(patch, fav_out)
            resolved = kept.tree if kept is not None else None
            step = self._verdict(
                patch, evidence, skip, skip_out, fav_out, conflicted, resolved is not None
            )
            if resolved is not None and step.cause == "earlier":
                assert kept is not None and self.recorded is not None
                by = kept.name(self.recorded)
                step.note = f"with {', '.join(step.blocked_by)} kept, resolved by {by}"
            elif found is not None and found.note:
                step.note = found.note
            out.append(step)
            if skip_out.clean:
                skip = Node(skip_out.tree)
            self.fav = Node(resolved or self.merger.favour_theirs(fav_out))
            if step.replay == "conflict":
                conflicted.append(patch)
            step.tree = skip.tree
        self._weigh(out, onto)
        return out

    def _merges(self, k: int, chains: dict[_Role, Node]) -> dict[_Role, TreeMerge]:
        """Step k's merge onto each chain's tree: from the merge stream, one merge each,
        while it answers; else from the chain's guess where it knows it, else from a new
        guess (one batch for every chain that needs one)."""
        streamed = self._streamed(k, chains)
        if streamed is not None:
            return streamed
        s = self.stacked.nodes
        fresh = [role for role, node in chains.items() if not self._knows(role, k, node)]
        if fresh:
            jobs = {role: predict_jobs(s, k - 1, chains[role]) for role in fresh}
            outs = iter(self.merger.run([j for role in fresh for j in jobs[role]]))
            for role in fresh:
                self.guesses[role] = _Guess(k - 1, chains[role], [next(outs) for _ in jobs[role]])
        guesses = [self.guesses[role] for role in chains]
        unchecked = [g for g in guesses if g.checked is None and k - 1 > g.start]
        if unchecked:
            verify = [verify_jobs(s, g.start, g.onto, g.predicted) for g in unchecked]
            outs = iter(self.merger.run([j for v in verify for j in v if j is not None]))
            for g, v in zip(unchecked, verify, strict=True):
                g.checked = [next(outs) if j is not None else None for j in v]
        return {role: self.guesses[role].merge(k) for role in chains}

    def _streamed(self, k: int, chains: dict[_Role, Node]) -> dict[_Role, TreeMerge] | None:
        """Step k cherry-picked onto each chain's tree by the stream, the chains' lines
        handed to git before either answer is read; None when the stream is closed or
        closes (the step and the rest go to batches: every answer is git's own)."""
        stream = self.stream
        if stream is None or not stream.live:
            return None
        s = self.stacked.nodes
        roles = list(chains)
        for role in roles:
            line = self.merger.stream_line(stream, Job(s[k - 1], chains[role], s[k]))
            if line is None or not stream.send(line):
                stream.close()  # a line sent and not answered is not read: none after it
                return None
        outs: dict[_Role, TreeMerge] = {}
        for role in roles:
            merge = stream.answer()
            if merge is None:
                return None
            outs[role] = merge
        self.merger.merges += len(outs)
        return outs

    def _knows(self, role: _Role, k: int, node: Node) -> bool:
        guess = self.guesses.get(role)
        return guess is not None and guess.knows(k, node)

    def _recorded(self, patch: Patch, merge: TreeMerge) -> resolutions.Found | None:
        """What the project's recorded resolutions say about a conflicted merge."""
        if merge.clean or self.recorded is None:
            return None
        if not resolutions.recorded(self.recorded, patch.id):
            return None  # the usual case: nothing recorded, nothing to mark up
        env = self.merger.env
        return resolutions.lookup(self.merger.repo, self.recorded, patch.id, merge, env)

    def _favour(self, patch: Patch, merge: TreeMerge) -> str:
        """The favoured chain's tree: a recorded resolution if one fits, else ``-X theirs``."""
        found = self._recorded(patch, merge)
        if found is not None and found.tree is not None:
            return found.tree
        return self.merger.favour_theirs(merge)

    def _resolved(
        self,
        patch: Patch,
        evidence: tuple[Evidence, ...],
        merge: TreeMerge,
        found: resolutions.Found,
    ) -> Replayed:
        assert self.recorded is not None
        name = found.name(self.recorded)
        return Replayed(
            patch,
            "already-upstream" if evidence else "resolved",
            "resolved",
            files=merge.files,
            conflicts=merge.conflicts,
            evidence=evidence,
            upstream=tuple(self._touching(merge.files)),
            note=f"conflicts, resolved by {name}",
            resolution=name,
        )

    def _weigh(self, out: list[Replayed], onto: dict[str, Node]) -> None:
        """What upstream holds of each patch it may hold (module docstring)."""
        s = self.stacked.nodes
        asks = []
        for k, step in enumerate(out, 1):
            if s[k].tree == s[k - 1].tree:
                continue  # the patch itself changes nothing
            if step.evidence or step.replay in ("empty", "conflict"):
                commits = tuple(e.commit for e in step.evidence)
                asks.append(Ask(step.patch.id, s[k - 1], s[k], onto[step.patch.id], commits))
        found = weigh(self.merger, asks, self.target.commits)
        subjects = {c.commit: c.subject for c in self.target.commits}
        for step in out:
            rem = found.get(step.patch.id)
            if rem is not None:
                _judge_remainder(step, rem, subjects)

    def _verdict(
        self,
        patch: Patch,
        evidence: tuple[Evidence, ...],
        before: Node,
        skip_out: TreeMerge,
        fav_out: TreeMerge,
        earlier: list[Patch],
        fav_resolved: bool,
    ) -> Replayed:
        """``fav_resolved``: a recorded resolution resolves the favoured chain's conflict
        (it goes through, as the rebase that keeps the earlier patches does)."""
        fav_clean = fav_out.clean or fav_resolved
        if skip_out.clean and fav_clean:
            replay = "empty" if skip_out.tree == before.tree else "clean"
            status = "already-upstream" if evidence else replay
            note = {
                "empty": "its changes are already in the revision",
                "clean": "it still changes the tree: upstream took part of it, or another form"
                if evidence
                else "",
            }[replay]
            return Replayed(patch, status, replay, evidence=evidence, note=note)
        own = not fav_clean
        shown = fav_out if own else skip_out
        blocked: tuple[str, ...] = ()
        if not own:
            files = set(shown.files)
            touching = [p.id for p in earlier if files & set(self._files(p))]
            blocked = tuple(touching or [p.id for p in earlier])
        return Replayed(
            patch,
            "already-upstream" if evidence else "conflict",
            "conflict",
            cause="self" if own else "earlier",
            blocked_by=blocked,
            files=shown.files,
            conflicts=shown.conflicts,
            evidence=evidence,
            upstream=tuple(self._touching(shown.files)),
        )

    def _files(self, patch: Patch) -> tuple[str, ...]:
        return self.stacked.files.get(patch.id, ())

    def _touching(self, files: tuple[str, ...], limit: int = 10) -> list[LogEntry]:
        wanted = set(files)
        return [c for c in self.target.commits if wanted & set(c.files)][:limit]


def _judge_remainder(step: Replayed, rem: Remainder, subjects: dict[str, str]) -> None:
    """The status and note of ``step`` from what upstream holds of it."""
    step.remainder = rem
    named = {e.commit for e in step.evidence}
    step.evidence += tuple(
        Evidence("hunks", c, subjects.get(c, "")) for c in rem.evidence if c not in named
    )
    if step.replay == "skipped":
        return  # the same patch-id: dropped, as git rebase drops it
    given, total = len(rem.given), len(rem.hunks)
    if rem.verdict == "full":
        step.status = "already-upstream"
        if step.replay == "empty":
            step.note = "upstream holds all of it: nothing is left to carry"
        else:
            step.note = f"upstream holds all {total} hunks, some in another form"
    elif rem.verdict == "partial":
        step.status = "partly-upstream"
        left = ", ".join(h.unit.label for h in rem.remaining)
        step.note = f"upstream holds {given} of {total} hunks; what remains: {left}"
    elif step.status == "already-upstream":
        step.status = step.replay  # named upstream, but none of its hunks is there
        step.note = "upstream names its PR, but holds none of its hunks"

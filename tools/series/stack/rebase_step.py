"""The rebase sequencer's one decision: given a state and what just happened, what next.

:func:`step` is a pure function: ``step(state, event) -> (state, effect)``.
It walks the plan (series.stack.rebase_plan) one action at a time and
says which effect the driver (series.stack.rebase_driver) must perform;
the driver performs it with git and hands the result back as the next
event. Nothing here reads or writes a repository or a file, so every
decision of the rebase can be driven and tested with plain data.

Effects: :class:`Replay` (merge a patch's change onto a tree, and try
the recorded resolutions when it conflicts), :class:`Write` (write the
commits of the patches replayed so far, in one go), :class:`Halt` (stop
at the conflict in ``state.stop``: save the state, write the conflict
into the checkout) and :class:`Finish` (every action done, every commit
written: export and move the branch).

Events: ``None`` (start walking, or walk on from a state that was
loaded), :class:`Merged` (a Replay's result), :class:`Written` (a Write's
commits), :class:`Resolved` (``--continue``: the user's resolution,
already recorded), :class:`Skipped` (``--skip``) and :class:`Edited`
(``--continue`` at an edit stop: the commits the user made there).

``series edit``'s kinds: ``edit`` is a pick followed by a Halt at a
:class:`Stop` of kind "edit"; ``fixup`` is a pick whose tree replaces the
tree of the patch kept before it (whose commit is then written again). A
Replay names the commit a patch may stay on (``onto``): when nothing
before it changed, its own commit is kept (:class:`Merged` ``same``).

Commits are written lazily: a replayed patch's outcome holds its tree
until a Write, which comes before a Halt and before the Finish, so a
run without a conflict writes all its commits with one git process.
"""

from __future__ import annotations

from series.records import NamedTuple
from series.stack.rebase_plan import DROP_REASONS, Action, Outcome, RebaseState, Stop, Upstream


class _Mark:
    """An effect or event with nothing in it: equal to another of its own kind only."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Replay(NamedTuple):
    """Merge the change of ``commit`` (over its parent) onto ``onto_tree``."""

    index: int  # type: ignore[assignment]  # a field that hides tuple.index
    id: str
    commit: str
    onto_tree: str
    propose: bool = False  # a remainder: where it conflicts, propose the remainder
    onto: str = ""  # the patch may keep its commit if its parent is this one


class Write(NamedTuple):
    """Write commits of (index, tree, the patch's old commit), each on the one before."""

    items: tuple[tuple[int, str, str], ...]
    parent: str


class Halt(_Mark):
    """Stop at ``state.stop``: the state is saved, the conflict written into the checkout."""


class Finish(_Mark):
    """Every action done and every commit written."""


Effect = Replay | Write | Halt | Finish


class Merged(NamedTuple):
    """What a Replay gave: a clean merge, a conflict a recorded resolution answered
    (``resolution``: its path), or a conflict nothing answered (``conflict``)."""

    clean: bool
    tree: str
    resolution: str = ""
    conflict: Stop | None = None
    same: str = ""  # the patch's own commit, kept: nothing before it changed


class Written(NamedTuple):
    commits: tuple[str, ...]


class Resolved(NamedTuple):
    """``--continue``: the tree the user staged, recorded as ``resolution``."""

    tree: str
    resolution: str


class Skipped(_Mark):
    """``--skip``: drop the patch stopped at."""


class Edited(NamedTuple):
    """``--continue`` at an edit stop: the commits made there, (commit, patch id or "",
    tree), oldest first, on the edited patch's parent; ``head`` is the last."""

    commits: tuple[tuple[str, str, str], ...]
    head: str


Event = Merged | Written | Resolved | Skipped | Edited | None


class StepError(Exception):
    """An event that does not fit the state (a bug in the driver, never the user's)."""


def step(state: RebaseState, event: Event) -> tuple[RebaseState, Effect]:
    """The state after ``event``, and the effect to perform next."""
    state = _apply(state, event)
    if state.stop is None and _edit_due(state):
        state = state._replace(stop=Stop(state.position, "", "", (), (), "", kind="edit"))
    if state.stop is not None:
        return state, _write(state) or Halt()
    while state.position < len(state.plan):
        action = state.plan[state.position]
        walk = WALK.get(action.kind)
        if walk is None:
            raise StepError(f"no step for an action of kind {action.kind!r}")
        state, effect = walk(state, action)
        if effect is not None:
            return state, effect
    return state, _write(state) or Finish()


def _pick(state: RebaseState, action: Action) -> tuple[RebaseState, Effect | None]:
    """Replay the patch onto the tree so far (its Merged result comes back to ``_merged``).

    Also an ``edit`` (the stop comes once it is replayed: ``_edit_due``) and a
    ``fixup`` (``_merged`` squashes it into the patch before).
    """
    onto = _reusable(state)
    return state, Replay(state.position, action.id, action.commit, tip_tree(state), onto=onto)


def _remainder(state: RebaseState, action: Action) -> tuple[RebaseState, Effect | None]:
    """Replay a patch upstream holds part of in another form; where it conflicts, the
    driver proposes the remainder instead of writing the conflict."""
    return state, Replay(state.position, action.id, action.commit, tip_tree(state), propose=True)


def _drop(state: RebaseState, action: Action) -> tuple[RebaseState, Effect | None]:
    why = DROP_REASONS[action.reason][0]
    if action.part is not None and action.part.other:
        why += ", part of it in another form"
    return _add(state, _noted(Outcome("dropped"), why, action)), None


# How each kind of action is walked: the state after it, and an effect to perform
# (None: done without one, walk on). A new kind of action is a new entry.
WALK = {
    "pick": _pick,
    "edit": _pick,
    "fixup": _pick,
    "drop": _drop,
    "remainder": _remainder,
}


def tip_tree(state: RebaseState) -> str:
    """The tree the next patch goes on: the last kept outcome's, else the target's."""
    for outcome in reversed(state.done):
        if outcome.kept:
            return outcome.tree
    return state.onto_tree


def unwritten(state: RebaseState) -> list[int]:
    """The indexes of kept outcomes whose commits are not written yet."""
    return [k for k, o in enumerate(state.done) if o.kept and not o.new]


def upcoming(state: RebaseState) -> list[tuple[int, str]]:
    """(index, commit) of the picks not replayed yet, in order, for speculation.

    From the action at the position on (the one stopped at included), so a
    run taken up again (``--continue``, ``--skip``) speculates the rest as a
    fresh one does (series.stack.rebase_driver).
    """
    return [
        (k, a.commit)
        for k, a in enumerate(state.plan)
        if k >= state.position and a.kind in ("pick", "remainder")
    ]


def _edit_due(state: RebaseState) -> bool:
    """The patch just replayed is one to edit, and the user has not had it yet."""
    k = state.position - 1
    return (
        k >= 0 and state.plan[k].kind == "edit" and state.done[k].status in ("picked", "resolved")
    )


def _reusable(state: RebaseState) -> str:
    """The commit the next patch may stay on as it is (its own commit kept), or "".

    Only in an edit (a rebase moves the base: nothing stays), when every
    commit so far is written (the patch would go on ``current``), and
    neither it nor the one after it is a fixup (whose squash rewrites the
    patch before it).
    """
    k = state.position
    after = state.plan[k + 1].kind if k + 1 < len(state.plan) else ""
    if (
        state.kind != "edit"
        or unwritten(state)
        or state.plan[k].kind == "fixup"
        or after == "fixup"
    ):
        return ""
    return state.current


def _apply(state: RebaseState, event: Event) -> RebaseState:
    if event is None:
        return state
    if isinstance(event, Written):
        todo = unwritten(state)
        if len(todo) != len(event.commits) or not todo:
            raise StepError(f"{len(event.commits)} commits written for {len(todo)} patches")
        done = list(state.done)
        for k, commit in zip(todo, event.commits, strict=True):
            done[k] = done[k]._replace(new=commit)
        return state._replace(done=tuple(done), current=event.commits[-1])
    if isinstance(event, Merged):
        return _merged(state, event)
    stop = state.stop
    if stop is None:
        raise StepError(f"{type(event).__name__} while the rebase is not stopped")
    if isinstance(event, Edited) != (stop.kind == "edit"):
        raise StepError(f"{type(event).__name__} at a stop of kind {stop.kind}")
    if isinstance(event, Edited):
        return _edited(state, event)
    if isinstance(event, Resolved) and state.plan[stop.index].kind == "fixup":
        return _squash(state, event.tree, "resolved by hand, recorded")._replace(stop=None)
    if isinstance(event, Resolved):
        outcome = Outcome(
            "resolved", event.tree, note="resolved by hand, recorded", resolution=event.resolution
        )
    else:
        outcome = Outcome(
            "skipped",
            upstream_commit=stop.upstream[0].split()[0] if stop.upstream else state.onto,
            note=f"conflicts with upstream in {', '.join(stop.files)}",
        )
    return _add(state, outcome)._replace(stop=None)


def _merged(state: RebaseState, event: Merged) -> RebaseState:
    if state.stop is not None or state.position >= len(state.plan):
        raise StepError("a merge result with no action waiting for it")
    action = state.plan[state.position]
    if event.conflict is not None:
        return state._replace(stop=event.conflict._replace(index=state.position))
    if event.same:
        return _add(state, Outcome("picked", event.tree, event.same))._replace(current=event.same)
    if event.clean and event.tree == tip_tree(state):
        return _add(state, _noted(Outcome("empty"), "it changes nothing on the new base", action))
    if action.kind == "fixup":
        return _squash(state, event.tree, "" if event.clean else "resolved (recorded)")
    if event.clean:
        part = action.part
        if part is not None and part.verdict == "partial":
            note = "reduced: upstream took " + "; ".join(f"{c[:12]} ({h})" for c, h in part.took)
            return _add(state, Outcome("picked", event.tree, note=note))
        return _add(state, Outcome("picked", event.tree))
    note = "resolved by the recorded resolution"
    return _add(state, Outcome("resolved", event.tree, note=note, resolution=event.resolution))


def _squash(state: RebaseState, tree: str, how: str) -> RebaseState:
    """A fixup's tree becomes the tree of the patch kept before it, whose commit is
    written again (on the commit before it).

    Commits are written in order, so when that patch's commit is not written
    yet (a fixup before it, or its own replay, left it unwritten), the commit
    so far stays the one the next Write goes on; only a written one is undone.
    """
    kept = [k for k, o in enumerate(state.done) if o.kept]
    if not kept:
        raise StepError("a fixup with no patch before it")
    j, done = kept[-1], list(state.done)
    current = state.current
    if done[j].new:  # written: it was the commit so far; write it again on the one before
        current = state.done[kept[-2]].new if len(kept) > 1 else state.onto
    done[j] = done[j]._replace(tree=tree, new="")
    into = state.plan[j].id
    note = f"squashed into {into}" + (f", {how}" if how else "")
    return _add(state._replace(done=tuple(done), current=current), Outcome("squashed", note=note))


def _edited(state: RebaseState, event: Edited) -> RebaseState:
    """What the user made at an edit stop replaces the edited patch: the commit that
    carries its id stays it, the others are new patches there; none of them: dropped."""
    assert state.stop is not None
    k = state.stop.index - 1
    action = state.plan[k]
    mine = next((c for c, pid, _ in event.commits if pid == action.id), "")
    actions: list[Action] = [] if mine else [action]
    outcomes = [] if mine else [Outcome("dropped", note="removed at the edit stop")]
    for commit, pid, tree in event.commits:
        if commit == mine:
            same = commit == state.done[k].new
            note = "unchanged at the edit stop" if same else "edited"
            actions.append(action)
            outcomes.append(Outcome("edited", tree, commit, note))
        else:
            actions.append(Action("pick", pid, commit))
            outcomes.append(Outcome("picked", tree, commit, "new at the edit stop"))
    return state._replace(
        plan=(*state.plan[:k], *actions, *state.plan[k + 1 :]),
        done=(*state.done[:k], *outcomes),
        current=event.head,
        stop=None,
    )


def _noted(outcome: Outcome, why: str, action: Action) -> Outcome:
    """``why``, and the upstream commit that has the patch when there is one."""
    u: Upstream | None = action.upstream
    if u is None and action.part is not None and action.part.took:
        commit, hunks = action.part.took[0]
        return outcome._replace(
            note=f"{why} (upstream has {hunks}: {commit[:12]})", upstream_commit=commit
        )
    if u is None:
        return outcome._replace(note=why)
    note = f"{why} (upstream has it, {u.kind}: {u.commit[:12]} {u.subject})"
    return outcome._replace(note=note, upstream_commit=u.commit)


def _add(state: RebaseState, outcome: Outcome) -> RebaseState:
    return state._replace(done=(*state.done, outcome))


def _write(state: RebaseState) -> Write | None:
    todo = unwritten(state)
    if not todo:
        return None
    if not state.current:
        raise StepError(f"commits to write for {len(todo)} patches with no commit to write on")
    items = tuple((k, state.done[k].tree, state.plan[k].commit) for k in todo)
    return Write(items, state.current)

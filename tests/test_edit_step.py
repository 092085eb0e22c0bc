"""series edit's plans and action kinds, driven with plain data: no repository, no git.

series.stack.edit_plan turns a request into per-patch actions; the step
function (series.stack.rebase_step) walks them as it walks a rebase's:
``edit`` is a pick and then a stop of kind "edit", ``fixup`` squashes into
the patch kept before it, a ``drop`` with reason ``removed`` is `series
edit --drop`, and a patch whose parent is where it goes keeps its commit.
The test plays the driver, as tests/test_rebase_step.py does.
"""

from __future__ import annotations

import json

import pytest

from series.errors import UsageError
from series.stack.edit_plan import Entry, Request, build
from series.stack.rebase_plan import Action, RebaseState, begin, from_json, to_json
from series.stack.rebase_step import Edited, Halt, Merged, Replay, Write, Written, step

BASE = "b" * 40
ENTRIES = [
    Entry("P1", "c1", "core: one"),
    Entry("P2", "c2", "util: two"),
    Entry("P3", "c3", "core: three"),
]


def kinds(plan: tuple[Action, ...]) -> list[tuple[str, str]]:
    return [(a.kind, a.id) for a in plan]


def edit_state(plan: tuple[Action, ...]) -> RebaseState:
    return begin(
        onto=BASE,
        onto_tree="t0",
        onto_rev="the pin",
        onto_label="the patches before it",
        url=None,
        tip="c3",
        base=BASE,
        saved="s" * 40,
        drop_merged=False,
        plan=plan,
        kind="edit",
    )


def test_each_form_is_a_plan() -> None:
    assert kinds(build(ENTRIES, 3, Request(at="p2"))) == [
        ("pick", "P1"),
        ("edit", "P2"),
        ("pick", "P3"),
    ]
    assert kinds(build(ENTRIES, 3, Request(after="P1"))) == [
        ("edit", "P1"),
        ("pick", "P2"),
        ("pick", "P3"),
    ]
    dropped = build(ENTRIES, 3, Request(drops=("P2",)))
    assert kinds(dropped)[1] == ("drop", "P2") and dropped[1].reason == "removed"
    moved = build(ENTRIES, 3, Request(move="P3", before="P1"))
    assert [a.id for a in moved] == ["P3", "P1", "P2"]
    moved = build(ENTRIES, 3, Request(move="P1", after="P3"))
    assert [a.id for a in moved] == ["P2", "P3", "P1"]
    fix = Entry("", "f1", "fixup! core: one")
    squash = build([*ENTRIES, fix], 3, Request(squash=True))
    assert kinds(squash) == [("pick", "P1"), ("fixup", "P1"), ("pick", "P2"), ("pick", "P3")]
    assert squash[1].commit == "f1"


@pytest.mark.parametrize(
    "request_",
    [
        Request(),
        Request(at="P1", drops=("P2",)),
        Request(move="P1"),
        Request(before="P1"),
        Request(at="P9"),
        Request(move="P1", before="P1"),
        Request(drops=("P1", "P2", "P3")),
        Request(squash=True),  # nothing to squash
    ],
)
def test_what_is_not_a_plan_is_a_usage_error(request_: Request) -> None:
    with pytest.raises(UsageError):
        build(ENTRIES, 3, request_.checked())


def test_an_edit_keeps_the_commits_before_it_stops_then_takes_what_was_made() -> None:
    state, effect = step(edit_state(build(ENTRIES, 3, Request(at="P2"))), None)
    assert effect == Replay(0, "P1", "c1", "t0", onto=BASE)
    state, effect = step(state, Merged(True, "t1", same="c1"))  # its parent is the base
    assert effect == Replay(1, "P2", "c2", "t1", onto="c1")
    state, effect = step(state, Merged(True, "t2", same="c2"))
    assert effect == Halt() and state.stop is not None and state.stop.kind == "edit"
    assert state.stopped_at == "P2" and state.current == "c2"
    assert from_json(json.loads(json.dumps(to_json(state)))) == state
    # the user amended P2 (c2') and added a commit after it (n1)
    made = (("c2x", "P2", "t2x"), ("n1", "", "tn"))
    state, effect = step(state, Edited(made, "n1"))
    assert [a.id for a in state.plan] == ["P1", "P2", "", "P3"]
    assert [o.status for o in state.done] == ["picked", "edited", "picked"]
    assert effect == Replay(3, "P3", "c3", "tn", onto="n1")
    state, effect = step(state, Merged(True, "t3"))  # merged: P2 changed
    assert effect == Write(((3, "t3", "c3"),), "n1")


def test_a_fixup_rewrites_the_patch_before_it() -> None:
    fix = Entry("", "f1", "fixup! core: one")
    state, effect = step(edit_state(build([*ENTRIES, fix], 3, Request(squash=True))), None)
    assert effect == Replay(0, "P1", "c1", "t0", onto="")  # a fixup follows: not kept as is
    state, effect = step(state, Merged(True, "t1"))
    assert effect == Replay(1, "P1", "f1", "t1", onto="")
    state, effect = step(state, Merged(True, "t1f"))
    assert [o.status for o in state.done] == ["picked", "squashed"]
    assert state.done[0].tree == "t1f"
    state, effect = step(state, None)
    assert effect == Replay(2, "P2", "c2", "t1f", onto="")
    state, effect = step(state, Merged(True, "t2"))
    state, effect = step(state, Merged(True, "t3"))
    assert effect == Write(((0, "t1f", "c1"), (2, "t2", "c2"), (3, "t3", "c3")), BASE)
    state, _ = step(state, Written(("n1", "n2", "n3")))
    assert state.current == "n3"


def test_fixups_of_patches_not_written_yet_write_them_all_on_the_base() -> None:
    # P2's fixup squashes into a patch whose commit is not written, after P1's
    # fixup left P1 unwritten too: every commit goes on the base in one Write
    # (the commit so far stays the base; it used to become "", a bad parent).
    fixes = [Entry("", "f1", "fixup! core: one"), Entry("", "f2", "fixup! util: two")]
    state, _ = step(edit_state(build([*ENTRIES, *fixes], 3, Request(squash=True))), None)
    for tree in ("t1", "t1f", "t2", "t2f"):
        state, effect = step(state, Merged(True, tree))
        assert state.current == BASE
    assert [o.status for o in state.done] == ["picked", "squashed", "picked", "squashed"]
    state, effect = step(state, Merged(True, "t3"))
    assert effect == Write(((0, "t1f", "c1"), (2, "t2f", "c2"), (4, "t3", "c3")), BASE)


def test_a_fixup_of_a_written_patch_writes_it_again_on_the_commit_before() -> None:
    # P1 and P2 written (at the stop of `series edit P2`), then a fixup of P2
    # squashes into it: P2 is written again on P1's new commit.
    plan = (Action("pick", "P1", "c1"), Action("pick", "P2", "c2"), Action("fixup", "P2", "f2"))
    state, effect = step(edit_state(plan), None)
    state, effect = step(state, Merged(True, "t1"))
    state, effect = step(state, Merged(True, "t2"))
    state, effect = step(state, Written(("n1", "n2")))  # as at a stop: the commits so far
    assert state.current == "n2"
    state, effect = step(state, Merged(True, "t2f"))
    assert state.current == "n1"
    assert effect == Write(((1, "t2f", "c2"),), "n1")


def test_a_drop_of_edit_leaves_the_patch_out() -> None:
    state, effect = step(edit_state(build(ENTRIES, 3, Request(drops=("P1",)))), None)
    assert state.done[0].status == "dropped" and "--drop" in state.done[0].note
    assert effect == Replay(1, "P2", "c2", "t0", onto=BASE)

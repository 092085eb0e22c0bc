"""The rebase sequencer's step function, driven with plain data: no repository, no git.

series.stack.rebase_step decides, series.stack.rebase_driver performs:
here the test plays the driver, answering each effect with a made-up
result, and checks every decision (what is replayed onto which tree,
which commits are written on which parent and when, where it stops,
what --continue and --skip record). The state round-trips through its
versioned JSON, and a state of another format is refused by name; the
last test reads one from a real repository's refs, as ``series`` does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from series.errors import SeriesError
from series.git import Repo
from series.stack import rebase_state
from series.stack.rebase_plan import (
    FORMAT,
    KINDS,
    Action,
    OtherFormat,
    Part,
    RebaseState,
    Stop,
    Upstream,
    begin,
    from_json,
    plan_rebase,
    to_json,
)
from series.stack.rebase_step import (
    WALK,
    Finish,
    Halt,
    Merged,
    Replay,
    Resolved,
    Skipped,
    StepError,
    Write,
    Written,
    step,
    upcoming,
)

ONTO, ONTO_TREE = "o" * 40, "t0" * 20
HAS_P2 = Upstream("patch-id", "u" * 40, "upstream took P2")
# what the remainder engine found of P2 (series.stack.upstream_parts): all of it
ALL_OF_P2 = Part("full", False, False, (("u" * 40, "a.py:1-7 in its own lines"),), (), ())


def fresh(plan: tuple[Action, ...], *, drop_merged: bool = False) -> RebaseState:
    return begin(
        onto=ONTO,
        onto_tree=ONTO_TREE,
        onto_rev="main",
        onto_label="main (oooo)",
        url=None,
        tip="f" * 40,
        base="b" * 40,
        saved="s" * 40,
        drop_merged=drop_merged,
        plan=plan,
    )


def three(*, drop_merged: bool = False) -> RebaseState:
    patches = [("P1", "c1"), ("P2", "c2"), ("P3", "c3")]
    return fresh(
        plan_rebase(patches, {"P2": HAS_P2}, drop_merged=drop_merged, parts={"P2": ALL_OF_P2}),
        drop_merged=drop_merged,
    )


def a_conflict(files: tuple[str, ...] = ("a.py",)) -> Stop:
    stages = tuple(("100644", f"{n}" * 40, n, f) for f in files for n in (1, 2, 3))
    upstream = ("u" * 40 + " upstream touched a.py",)
    return Stop(-1, "conflicted-tree", "key", files, stages, "index-tree", upstream, "")


def test_a_clean_run_replays_each_pick_on_the_tree_so_far_then_writes_once() -> None:
    state, effect = step(three(), None)
    assert effect == Replay(0, "P1", "c1", ONTO_TREE)
    assert upcoming(state) == [(0, "c1"), (1, "c2"), (2, "c3")]  # fresh: worth speculating
    state, effect = step(state, Merged(True, "T1"))
    assert effect == Replay(1, "P2", "c2", "T1")
    assert upcoming(state) == [(1, "c2"), (2, "c3")]  # begun: the rest
    # P2 changes nothing on T1: empty, with the upstream evidence the plan carries.
    state, effect = step(state, Merged(True, "T1"))
    assert effect == Replay(2, "P3", "c3", "T1")
    state, effect = step(state, Merged(True, "T3"))
    assert effect == Write(((0, "T1", "c1"), (2, "T3", "c3")), ONTO)
    state, effect = step(state, Written(("n1", "n3")))
    assert effect == Finish()
    assert state.current == "n3"
    assert [(o.status, o.new) for o in state.done] == [
        ("picked", "n1"),
        ("empty", ""),
        ("picked", "n3"),
    ]
    empty = state.done[1]
    assert empty.upstream_commit == HAS_P2.commit
    assert empty.note == (
        f"it changes nothing on the new base (upstream has it, patch-id: "
        f"{HAS_P2.commit[:12]} upstream took P2)"
    )
    assert state.progress() == [
        ("P1", "picked", ""),
        ("P2", "empty", empty.note),
        ("P3", "picked", ""),
    ]


def test_drop_merged_plans_a_drop_that_is_never_replayed() -> None:
    state = three(drop_merged=True)
    assert [a.kind for a in state.plan] == ["pick", "drop", "pick"]
    state, effect = step(state, None)
    state, effect = step(state, Merged(True, "T1"))
    assert effect == Replay(2, "P3", "c3", "T1")  # P2 dropped without a merge
    assert state.done[1].status == "dropped"
    assert state.done[1].note.startswith("already upstream (upstream has it, patch-id: ")
    assert upcoming(three(drop_merged=True)) == [(0, "c1"), (2, "c3")]


def test_a_pr_number_alone_plans_no_drop() -> None:
    patches = [("P1", "c1"), ("P2", "c2")]
    plan = plan_rebase(patches, {"P2": HAS_P2}, drop_merged=True)
    assert [a.kind for a in plan] == ["pick", "pick"]


def test_part_in_another_form_plans_a_remainder_that_proposes() -> None:
    other = Part("partial", True, False, (("u" * 40, "a.py:1-7 in another form"),), (), ())
    plan = plan_rebase(
        [("P1", "c1"), ("P2", "c2")], {"P2": HAS_P2}, drop_merged=True, parts={"P2": other}
    )
    assert [a.kind for a in plan] == ["pick", "remainder"]
    state, _ = step(fresh(plan, drop_merged=True), None)
    state, effect = step(state, Merged(True, "T1"))
    assert effect == Replay(1, "P2", "c2", "T1", propose=True)
    state, effect = step(state, Merged(True, "T2"))  # merged cleanly after all: reduced
    assert state.done[1].status == "picked" and state.done[1].note.startswith("reduced")
    assert from_json(json.loads(json.dumps(to_json(state)))) == state
    kept = plan_rebase([("P2", "c2")], {"P2": HAS_P2}, drop_merged=False, parts={"P2": other})
    assert [a.kind for a in kept] == ["pick"]  # without --drop-merged: a plain pick


def test_a_conflict_writes_what_came_before_then_halts_and_continue_goes_on() -> None:
    state, _ = step(three(), None)
    state, _ = step(state, Merged(True, "T1"))
    state, effect = step(state, Merged(False, "merged-with-conflicts", conflict=a_conflict()))
    assert effect == Write(((0, "T1", "c1"),), ONTO)
    assert state.stop is not None and state.stop.index == 1
    state, effect = step(state, Written(("n1",)))
    assert effect == Halt()
    assert state.current == "n1" and state.position == 1
    assert "resolve the conflicts of P2" in state.next_step
    assert state.progress()[1] == ("P2", "pending", "")

    # A halted state is saved as JSON and loaded by --continue: the same state.
    loaded = from_json(json.loads(json.dumps(to_json(state))))
    assert loaded == state

    after, effect = step(loaded, Resolved("R2", "resolutions/P2/key.patch"))
    assert effect == Replay(2, "P3", "c3", "R2")  # the next patch goes on the resolution
    assert after.stop is None
    assert after.done[1] == after.done[1]._replace(
        status="resolved", tree="R2", resolution="resolutions/P2/key.patch"
    )
    after, effect = step(after, Merged(True, "T3"))
    assert effect == Write(((1, "R2", "c2"), (2, "T3", "c3")), "n1")


def test_skip_drops_the_patch_stopped_at_naming_the_upstream_commit() -> None:
    state, _ = step(three(), None)
    state, effect = step(state, Merged(False, "m", conflict=a_conflict(("a.py", "b.py"))))
    assert effect == Halt()  # nothing replayed before it: nothing to write
    state, effect = step(state, Skipped())
    assert effect == Replay(1, "P2", "c2", ONTO_TREE)
    skipped = state.done[0]
    assert skipped.status == "skipped"
    assert skipped.upstream_commit == "u" * 40
    assert skipped.note == "conflicts with upstream in a.py, b.py"


def test_a_recorded_resolution_does_not_stop() -> None:
    state, _ = step(three(), None)
    state, effect = step(state, Merged(False, "R1", resolution="resolutions/P1/k.patch"))
    assert effect == Replay(1, "P2", "c2", "R1")
    assert state.done[0].status == "resolved"
    assert state.done[0].note == "resolved by the recorded resolution"


def test_events_that_do_not_fit_the_state_are_refused() -> None:
    state, _ = step(three(), None)
    with pytest.raises(StepError):
        step(state, Resolved("R", "r"))  # not stopped
    with pytest.raises(StepError):
        step(state, Skipped())
    with pytest.raises(StepError):
        step(state, Written(("n1",)))  # nothing to write
    assert set(WALK) == set(KINDS)  # every kind of action the state may hold is walked
    unknown = fresh((Action("explode", "P1", "c1"),))
    with pytest.raises(StepError, match="explode"):
        step(unknown, None)


def test_the_state_format_is_versioned_and_validated() -> None:
    state, _ = step(three(drop_merged=True), None)
    data = json.loads(json.dumps(to_json(state)))
    assert data["format"] == FORMAT == 2
    assert from_json(data) == state
    with pytest.raises(OtherFormat, match="format 1; this series reads 2"):
        from_json({**data, "format": 1})
    damaged = [
        {**data, "plan": [{**data["plan"][0], "kind": "explode"}]},
        {**data, "done": [{"status": "picked"}]},
        {**data, "current": 7},
        {**data, "extra": True},
        {
            **data,
            "done": [
                {
                    "status": "picked",
                    **dict.fromkeys(("tree", "new", "note", "upstream_commit", "resolution"), ""),
                }
            ]
            * 4,
        },
    ]
    for bad in damaged:
        with pytest.raises(ValueError):
            from_json(bad)


def test_a_state_of_the_older_format_is_refused_by_name(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    old = {"format": 1, "onto": ONTO, "steps": [], "stop": None}
    blob = subprocess.run(
        ["git", "-C", str(tmp_path), "hash-object", "-w", "--stdin"],
        input=json.dumps(old),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        ["git", "-C", str(tmp_path), "update-ref", rebase_state.STATE_REF, blob], check=True
    )
    with pytest.raises(SeriesError) as caught:
        rebase_state.load(Repo(tmp_path))
    assert "written by an older version of series" in caught.value.message
    assert "rebase state format 1; this series reads 2" in str(caught.value.why)

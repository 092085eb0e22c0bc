"""The data of a rebase: its plan (one action per patch), what each action gave, where it stopped.

A rebase is a program and its trace. The plan is an ordered tuple of
:class:`Action` (``pick`` a patch onto the new base, ``drop`` it with a
reason), fixed when the rebase starts by a plan builder
(:func:`plan_rebase`). :mod:`series.stack.rebase_step` walks it, one
action at a time, and appends an :class:`Outcome` per action to ``done``;
``stop`` is set while the rebase waits at a conflict. Everything here is
an immutable value, so a state is never changed in place: each step makes
a new one.

The state is stored as JSON (series.stack.rebase_state writes it in the
checkout's refs). ``FORMAT`` is its version: :func:`from_json` refuses
another one (:class:`OtherFormat`) and validates every key and type of
this one (:class:`ValueError`), so a damaged or foreign state is named,
never half-read. docs/rebase.md ("State") documents the format.

Pure: no git, no files. A new kind of action (edit, squash, a partly
upstream remainder) is an entry in ``KINDS``, its walk in
``rebase_step.WALK``, and a plan builder that uses it:
``series edit`` (state ``kind`` "edit", onto the base itself) adds ``edit``
(pick, then stop for the user: a :class:`Stop` of kind "edit"), ``fixup``
(squash this commit into the patch kept before it) and the drop reason
``removed``; its builder is series.stack.edit_plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from series.records import NamedTuple

TYPE_CHECKING = False  # typing is not imported (series rebase --abort loads this)
if TYPE_CHECKING:
    from typing import Any

FORMAT = 2
KINDS = ("pick", "drop", "remainder", "edit", "fixup")
# What became of an action; a patch with no outcome yet is "pending".
STATUSES = ("picked", "resolved", "empty", "dropped", "skipped", "edited", "squashed")
PENDING = "pending"
# Why a ``drop`` action drops its patch: reason -> (the note of its outcome, what
# series.toml's [[dropped]] record and the summary say). A new way to drop is an entry.
DROP_REASONS = {
    "upstream": ("already upstream", "already upstream (--drop-merged)"),
    "removed": ("dropped by `series edit --drop`", "removed by `series edit --drop`"),
}
# What a state is the state of: `series rebase`, or `series edit` (onto its own base).
STATE_KINDS = ("rebase", "edit")
# Why a state is stopped: a conflict to resolve, or a patch for the user to edit.
STOP_KINDS = ("conflict", "edit")


class Upstream(NamedTuple):
    """Evidence that upstream has a patch: the first upstream commit found (series.evidence)."""

    kind: str  # patch-id | pr
    commit: str
    subject: str


class Part(NamedTuple):
    """What upstream holds of a patch, hunk by hunk (series.stack.upstream_parts).

    ``verdict``: ``full`` (all of it) or ``partial``; ``other``: some of it
    in another form; ``conflicts``: some hunk it lacks conflicts with
    upstream; ``took``: (upstream commit, the hunks it took); ``given`` and
    ``remaining``: one line per hunk, for the messages.
    """

    verdict: str
    other: bool
    conflicts: bool
    took: tuple[tuple[str, str], ...]
    given: tuple[str, ...]
    remaining: tuple[str, ...]


class Action(NamedTuple):
    """What the rebase does with one patch.

    ``remainder``: pick a patch upstream holds part of in another form;
    where its merge conflicts, stop with the proposed remainder checked
    out instead of the conflict.
    """

    kind: str  # one of KINDS
    id: str
    commit: str  # the patch's commit before the rebase
    reason: str = ""  # drop: one of DROP_REASONS
    upstream: Upstream | None = None  # upstream has it (said in a note, recorded)
    part: Part | None = None  # what upstream holds of it, when it holds any


class Outcome(NamedTuple):
    """What one action gave."""

    status: str  # one of STATUSES
    tree: str = ""  # picked, resolved: its tree on the new base
    new: str = ""  # its commit there, once written ("" until then)
    note: str = ""
    upstream_commit: str = ""  # the upstream commit that has it / that it conflicts with
    resolution: str = ""  # the recorded resolution used or written, relative to the project

    @property
    def kept(self) -> bool:
        return self.status in ("picked", "resolved", "edited")


Stage = tuple[str, str, int, str]  # (mode, oid, stage, path)


class Stop(NamedTuple):
    """A conflict the rebase waits at: the action ``index`` has no outcome yet.

    Or (``kind`` "edit") the user's turn to change the patch of action
    ``index - 1``, just replayed: HEAD is on it; the conflict fields are empty
    but ``written_from``.
    """

    index: int  # type: ignore[assignment]  # a field that hides tuple.index, as JSON names it
    conflict_tree: str  # the merge with conflict markers, as written into the checkout
    key: str  # what the conflict is (series.merge.resolutions.conflict_key)
    files: tuple[str, ...]
    stages: tuple[Stage, ...]
    written_from: str  # the index tree the conflict was written over
    upstream: tuple[str, ...] = ()  # "sha subject" of upstream commits that touched the files
    note: str = ""
    proposal: str = ""  # a remainder action: the proposed remainder, written instead
    kind: str = "conflict"  # one of STOP_KINDS


class RebaseState(NamedTuple):
    onto: str
    onto_tree: str
    onto_rev: str
    onto_label: str
    url: str | None
    tip: str  # the branch tip when the rebase started
    base: str  # refs/series/base then
    saved: str  # the snapshot commit of series.toml and patches/
    drop_merged: bool  # the option the plan was built with
    plan: tuple[Action, ...]
    done: tuple[Outcome, ...] = ()  # the outcomes of plan[:len(done)]
    current: str = ""  # the last commit written on the new base (onto at first)
    stop: Stop | None = None
    kind: str = "rebase"  # one of STATE_KINDS

    @property
    def command(self) -> str:
        return f"series {self.kind}"

    @property
    def stopped_at(self) -> str:
        """The patch the state is stopped at (its conflict, or the one being edited)."""
        assert self.stop is not None
        k = self.stop.index - 1 if self.stop.kind == "edit" else self.stop.index
        return self.plan[k].id

    @property
    def position(self) -> int:
        """The index of the next action (the one stopped at, while stopped)."""
        return len(self.done)

    def progress(self) -> list[tuple[str, str, str]]:
        """(id, status, note) of every action, ``pending`` for those not done."""
        rows = [(a.id, o.status, o.note) for a, o in zip(self.plan, self.done, strict=False)]
        return rows + [(a.id, PENDING, "") for a in self.plan[len(self.done) :]]

    def walked(self) -> list[tuple[Action, Outcome]]:
        return list(zip(self.plan, self.done, strict=False))

    @property
    def next_step(self) -> str:
        cmd = self.command
        if self.stop is None:
            return f"`{cmd} --continue` finishes it, `{cmd} --abort` undoes it"
        sid = self.stopped_at
        if self.stop.kind == "edit":
            return (
                f"change {sid} in the checkout (`git commit --amend`; new commits after it "
                f"become new patches), then `{cmd} --continue`; or `{cmd} --abort`"
            )
        if self.stop.proposal:
            return (
                f"check the proposed remainder of {sid} in the checkout (edit and `git add` "
                f"what is not right), then `{cmd} --continue`; or `{cmd} "
                f"--skip` to drop all of {sid}, or `{cmd} --abort`"
            )
        return (
            f"resolve the conflicts of {sid} in the checkout, `git add` them, then "
            f"`{cmd} --continue`; or `{cmd} --skip` to drop "
            f"{sid}, or `{cmd} --abort`"
        )


def plan_rebase(
    patches: Sequence[tuple[str, str]],
    evidence: Mapping[str, Upstream],
    *,
    drop_merged: bool,
    parts: Mapping[str, Part] | None = None,
) -> tuple[Action, ...]:
    """``series rebase --onto``: pick every patch (id, commit) in order.

    With ``drop_merged``, a patch upstream holds all of (``parts``, weighed
    hunk by hunk) is dropped, and one it holds part of in another form is
    a ``remainder``; evidence alone (a PR number) drops nothing. Without
    it, the evidence and parts ride along and are said when the patch
    turns out empty or stops.
    """
    parts = parts or {}
    actions = []
    for pid, commit in patches:
        part, upstream = parts.get(pid), evidence.get(pid)
        if drop_merged and part is not None and part.verdict == "full":
            actions.append(Action("drop", pid, commit, "upstream", upstream, part))
        elif drop_merged and part is not None and part.other and not part.conflicts:
            actions.append(Action("remainder", pid, commit, upstream=upstream, part=part))
        else:
            actions.append(Action("pick", pid, commit, upstream=upstream, part=part))
    return tuple(actions)


def begin(
    *,
    onto: str,
    onto_tree: str,
    onto_rev: str,
    onto_label: str,
    url: str | None,
    tip: str,
    base: str,
    saved: str,
    drop_merged: bool,
    plan: tuple[Action, ...],
    kind: str = "rebase",
) -> RebaseState:
    """The state before the first action: nothing done, the next patch goes on ``onto``."""
    state = RebaseState(
        onto, onto_tree, onto_rev, onto_label, url, tip, base, saved, drop_merged, plan
    )
    return state._replace(current=onto, kind=kind)


# -- JSON ---------------------------------------------------------------------------


class OtherFormat(Exception):
    """The state was written in another format (by another version of series)."""

    def __init__(self, found: object) -> None:
        super().__init__(f"rebase state format {found!r}; this series reads {FORMAT}")
        self.found = found


def to_json(state: RebaseState) -> dict[str, Any]:
    data: dict[str, Any] = _plain(state)
    data["format"] = FORMAT
    return data


def _plain(value: Any) -> Any:
    """``value`` with every record in it as a dict of its fields, in order; other tuples
    stay tuples (what ``dataclasses.asdict`` gave when these records were dataclasses)."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in zip(value._fields, value, strict=True)}
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value


def from_json(data: object) -> RebaseState:
    """The state of ``data``, validated (OtherFormat; ValueError naming what is wrong)."""
    top = _object(data, "the state")
    if top.get("format") != FORMAT:
        raise OtherFormat(top.get("format"))
    _keys(top, "the state", {"format", *RebaseState._fields})
    plan = tuple(_action(a, i) for i, a in enumerate(_list(top, "plan")))
    done = tuple(_outcome(o, i) for i, o in enumerate(_list(top, "done")))
    if len(done) > len(plan):
        raise ValueError("more outcomes than actions in the plan")
    stop = None if top["stop"] is None else _stop(top["stop"])
    if stop is not None and stop.index != len(done):
        raise ValueError(f"stop.index is {stop.index}, the next action is {len(done)}")
    if stop is not None and stop.kind == "edit" and not done:
        raise ValueError("an edit stop with no patch replayed before it")
    kind = _str(top, "kind", "the state")
    if kind not in STATE_KINDS:
        raise ValueError(f"kind: unknown kind {kind!r}")
    url = top["url"]
    if url is not None and not isinstance(url, str):
        raise ValueError("url: not a string or null")
    where = "the state"
    return RebaseState(
        onto=_str(top, "onto", where),
        onto_tree=_str(top, "onto_tree", where),
        onto_rev=_str(top, "onto_rev", where),
        onto_label=_str(top, "onto_label", where),
        url=url,
        tip=_str(top, "tip", where),
        base=_str(top, "base", where),
        saved=_str(top, "saved", where),
        drop_merged=_bool(top, "drop_merged", where),
        plan=plan,
        done=done,
        current=_str(top, "current", where),
        stop=stop,
        kind=kind,
    )


def _action(raw: object, i: int) -> Action:
    where = f"plan[{i}]"
    data = _object(raw, where)
    _keys(data, where, set(Action._fields))
    kind = _str(data, "kind", where)
    if kind not in KINDS:
        raise ValueError(f"{where}.kind: unknown action {kind!r}")
    reason = _str(data, "reason", where)
    if kind == "drop" and reason not in DROP_REASONS:
        raise ValueError(f"{where}.reason: unknown reason {reason!r}")
    upstream = None
    if data["upstream"] is not None:
        u = _object(data["upstream"], f"{where}.upstream")
        _keys(u, f"{where}.upstream", set(Upstream._fields))
        upstream = Upstream(
            *(_str(u, k, f"{where}.upstream") for k in ("kind", "commit", "subject"))
        )
    part = None if data["part"] is None else _part(data["part"], f"{where}.part")
    return Action(
        kind, _str(data, "id", where), _str(data, "commit", where), reason, upstream, part
    )


def _part(raw: object, where: str) -> Part:
    data = _object(raw, where)
    _keys(data, where, set(Part._fields))
    verdict = _str(data, "verdict", where)
    if verdict not in ("full", "partial"):
        raise ValueError(f"{where}.verdict: unknown verdict {verdict!r}")
    took = []
    for pair in _list(data, "took"):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
        ):
            raise ValueError(f"{where}.took: not a [commit, hunks] pair: {pair!r}")
        took.append((pair[0], pair[1]))
    return Part(
        verdict,
        _bool(data, "other", where),
        _bool(data, "conflicts", where),
        tuple(took),
        _strings(data, "given"),
        _strings(data, "remaining"),
    )


def _outcome(raw: object, i: int) -> Outcome:
    where = f"done[{i}]"
    data = _object(raw, where)
    fields = ("status", "tree", "new", "note", "upstream_commit", "resolution")
    _keys(data, where, set(fields))
    outcome = Outcome(*(_str(data, k, where) for k in fields))
    if outcome.status not in STATUSES:
        raise ValueError(f"{where}.status: unknown status {outcome.status!r}")
    return outcome


def _stop(raw: object) -> Stop:
    data = _object(raw, "stop")
    _keys(data, "stop", set(Stop._fields))
    index = data["index"]
    if not isinstance(index, int) or isinstance(index, bool):
        raise ValueError("stop.index: not an integer")
    stages = []
    for entry in _list(data, "stages"):
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and all(isinstance(entry[n], str) for n in (0, 1, 3))
            and isinstance(entry[2], int)
        ):
            raise ValueError(f"stop.stages: not a [mode, oid, stage, path] entry: {entry!r}")
        stages.append((entry[0], entry[1], entry[2], entry[3]))
    return Stop(
        index,
        _str(data, "conflict_tree", "stop"),
        _str(data, "key", "stop"),
        _strings(data, "files"),
        tuple(stages),
        _str(data, "written_from", "stop"),
        _strings(data, "upstream"),
        _str(data, "note", "stop"),
        _str(data, "proposal", "stop"),
        _stop_kind(data),
    )


def _stop_kind(data: dict[str, Any]) -> str:
    kind = _str(data, "kind", "stop")
    if kind not in STOP_KINDS:
        raise ValueError(f"stop.kind: unknown kind {kind!r}")
    return kind


def _object(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: not a JSON object")
    return raw


def _keys(data: dict[str, Any], where: str, expected: set[str]) -> None:
    if set(data) != expected:
        missing, unknown = sorted(expected - set(data)), sorted(set(data) - expected)
        raise ValueError(f"{where}: missing keys {missing}, unknown keys {unknown}")


def _str(data: dict[str, Any], key: str, where: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key}: not a string")
    return value


def _bool(data: dict[str, Any], key: str, where: str) -> bool:
    value = data[key]
    if not isinstance(value, bool):
        raise ValueError(f"{where}.{key}: not a boolean")
    return value


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data[key]
    if not isinstance(value, list):
        raise ValueError(f"{key}: not a list")
    return value


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    values = _list(data, key)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"stop.{key}: not a list of strings")
    return tuple(values)

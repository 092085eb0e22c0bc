"""The state of a ``series rebase`` in progress: versioned, validated, in the checkout's refs.

Like the checkout state (series.checkout), it lives in the checkout's git
directory as refs, changed only in one ``update-ref --stdin`` transaction,
so a ``kill -9`` at any moment leaves the old state or the new one:

* ``refs/series/rebase/state``: a blob of JSON (format below);
* ``refs/series/rebase/onto``: the upstream commit the series moves to;
* ``refs/series/rebase/saved``: a commit whose tree holds series.toml and
  patches/ as they were when the rebase started (``--abort`` restores them
  byte for byte; ``series range-diff`` reads the old series from it);
* ``refs/series/rebase/current``: the replayed commit the next patch goes
  on (it keeps the replayed commits from being garbage-collected).

After a rebase finishes, ``refs/series/rebase/last`` keeps the saved
snapshot of the series before it. The JSON (format 1) is documented in
docs/rebase.md ("State").
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from series import refnames
from series.errors import SeriesError
from series.git import ZERO, Repo, Transaction

PREFIX = refnames.REBASE
STATE_REF = refnames.REBASE_STATE  # also series.checkout.REBASE_STATE_REF
ONTO_REF = refnames.REBASE_ONTO
SAVED_REF = refnames.REBASE_SAVED
CURRENT_REF = refnames.REBASE_CURRENT
LAST_REF = refnames.REBASE_LAST
STOP_PREFIX = refnames.STOP
FORMAT = 1
STATUSES = ("pending", "picked", "resolved", "empty", "dropped", "skipped", "squashed", "edited")
ACTIONS = ("pick", "edit", "drop", "fixup")  # series.stack.edit_plan
KINDS = ("rebase", "edit")


@dataclass
class StepState:
    id: str
    commit: str  # the patch's commit before the rebase
    status: str = "pending"
    new: str | None = None  # its commit on the new base
    note: str = ""
    upstream_commit: str = ""  # the upstream commit that has it / that it conflicts with
    resolution: str = ""  # the recorded resolution used or written, relative to the project
    action: str = "pick"  # what the plan does with it (ACTIONS; a rebase only picks)


@dataclass
class Stop:
    index: int  # the step that conflicts
    conflict_tree: str  # the merge with conflict markers, as written into the checkout
    key: str  # what the conflict is (series.stack.resolutions.conflict_key)
    files: list[str]
    stages: list[tuple[str, str, int, str]]  # (mode, oid, stage, path)
    written_from: str  # the index tree the conflict was written over
    upstream: list[str] = field(default_factory=list)  # "sha subject" that touched the files
    note: str = ""
    kind: str = "conflict"  # or "edit": stopped on the patch for the user to change it


@dataclass
class RebaseState:
    onto: str
    onto_rev: str
    onto_label: str
    url: str | None
    tip: str  # the branch tip when the rebase started
    base: str  # refs/series/base then
    saved: str  # the snapshot commit of series.toml and patches/
    drop_merged: bool
    steps: list[StepState]
    current: str  # where the next patch goes (onto, then the last replayed commit)
    stop: Stop | None = None
    kind: str = "rebase"  # or "edit": `series edit`, onto the same base (KINDS)

    @property
    def command(self) -> str:
        return f"series {self.kind}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = FORMAT
        return data

    @property
    def next_step(self) -> str:
        cmd = self.command
        if self.stop is None:
            return f"`{cmd} --continue` finishes it, `{cmd} --abort` undoes it"
        sid = self.steps[self.stop.index].id
        if self.stop.kind == "edit":
            return (
                f"change {sid} in the checkout (`git commit --amend`; new commits after it "
                f"become new patches), then `{cmd} --continue`; or `{cmd} --abort`"
            )
        return (
            f"resolve the conflicts of {sid} in the checkout, `git add` them, then "
            f"`{cmd} --continue`; or `{cmd} --skip` to drop "
            f"{sid}, or `{cmd} --abort`"
        )


def load(repo: Repo) -> RebaseState | None:
    """The rebase in progress in ``repo``, validated, or None."""
    blob = repo.ref_value(STATE_REF)
    if blob is None:
        return None
    where = f"{STATE_REF} in {repo.path}"
    try:
        data = json.loads(repo.read_blob(blob).decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("format") != FORMAT:
            raise SeriesError(
                f"{where} was written by another version of series",
                why=f"rebase state format {data.get('format')!r}; this series reads {FORMAT}",
                hint="finish or abort the rebase with the version of series that started it",
            )
        del data["format"]
        stop = data.pop("stop")
        steps = [StepState(**s) for s in data.pop("steps")]
        if any(s.status not in STATUSES or s.action not in ACTIONS for s in steps):
            raise ValueError("a step has an unknown status or action")
        if data.get("kind", "rebase") not in KINDS:
            raise ValueError(f"unknown kind {data.get('kind')!r}")
        state = RebaseState(**data, steps=steps, stop=None)
        if stop is not None:
            stop["stages"] = [tuple(e) for e in stop["stages"]]
            state.stop = Stop(**stop)
        return state
    except (UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise SeriesError(
            f"the rebase state in {where} is damaged",
            why=str(exc),
            hint=f"nothing was changed; `git -C {repo.path} update-ref -d {STATE_REF}` "
            "forgets the rebase (the branch was never moved by it)",
        ) from None


def save(repo: Repo, txn: Transaction, state: RebaseState, old_blob: str | None) -> None:
    """Add the writes of ``state`` (state blob and current ref) to ``txn``."""
    raw = (json.dumps(state.to_json(), indent=2) + "\n").encode()
    blob = repo.write_objects("blob", [raw])[0]
    txn.update(STATE_REF, blob, old_blob or ZERO)
    txn.update(CURRENT_REF, state.current, repo.ref_value(CURRENT_REF) or ZERO)


def forget(repo: Repo, txn: Transaction, *, keep_last: bool) -> None:
    """Add the deletion of every rebase ref to ``txn`` (``keep_last``: the snapshot as last)."""
    refs = repo.refs(PREFIX)
    for name in (STATE_REF, ONTO_REF, SAVED_REF, CURRENT_REF):
        if name in refs:
            txn.delete(name, refs[name])
    for name, old in repo.refs(STOP_PREFIX).items():
        txn.delete(name, old)
    if keep_last and SAVED_REF in refs:
        txn.update(LAST_REF, refs[SAVED_REF], refs.get(LAST_REF) or ZERO)

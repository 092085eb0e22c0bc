"""The plan builder of ``series edit``: what the user asked, as per-patch actions.

Pure: it reads the patches of the branch (id, commit, subject) and the
request, and returns the actions the sequencer walks
(series.stack.rebase_plan.Action, series.stack.rebase_step), or a usage
error naming what does not fit. Nothing here touches git.

* ``pick``: replay the patch (unchanged when nothing before it changed);
* ``edit``: replay it, then stop with HEAD on it (amend it, or add commits
  after it: they become new patches at that place);
* ``drop`` (reason ``removed``): leave it out (export deletes its file);
* ``fixup``: squash this commit into the patch replayed just before it
  (the commit's tree, the patch's message and author).
"""

from __future__ import annotations

from dataclasses import dataclass

from series.errors import UsageError
from series.stack.rebase_plan import Action

FIXUP_PREFIXES = ("fixup! ", "squash! ", "amend! ")


@dataclass(frozen=True)
class Request:
    """The options of ``series edit`` (series.commands.edit), one form of them."""

    at: str | None = None
    after: str | None = None
    before: str | None = None
    move: str | None = None
    drops: tuple[str, ...] = ()
    squash: bool = False

    @property
    def given(self) -> bool:
        return bool(self.at or self.after or self.before or self.move or self.drops or self.squash)

    @property
    def form(self) -> str:
        if self.move:
            return "move"
        if self.at:
            return "edit"
        if self.after:
            return "insert"
        if self.drops:
            return "drop"
        return "squash"

    def checked(self) -> Request:
        """This request, if it is one form; else a usage error (exit 2)."""
        forms = [
            bool(self.at),
            bool(self.after) and not self.move,
            bool(self.move),
            bool(self.drops),
            self.squash,
        ]
        if sum(forms) != 1:
            raise UsageError(
                "series edit takes one of: ID, --after ID, --move ID --before|--after ID, "
                "--drop ID, --squash (or --continue, --skip, --abort)",
                hint="e.g. `series edit P5` to amend P5, `series edit --after P6` to add a "
                "patch after P6; see `series edit --help`",
            )
        if self.before and not self.move:
            raise UsageError("--before goes with --move", hint="series edit --move ID --before ID")
        if self.move and bool(self.before) == bool(self.after):
            raise UsageError(
                "--move needs where to: --before ID or --after ID",
                hint=f"e.g. series edit --move {self.move} --before P1",
            )
        return self


@dataclass(frozen=True)
class Entry:
    """One commit of the branch, from the base up: its patch id ('' when it has none)."""

    id: str
    commit: str
    subject: str


def build(entries: list[Entry], synced: int, request: Request) -> tuple[Action, ...]:
    """The actions for ``request`` over the branch's commits (``synced``: how many are exported).

    Commits past ``synced`` were made after the last export: only ``--squash``
    takes them (its fixups); every other form needs an exported branch.
    """
    if request.form != "squash" and len(entries) != synced:
        raise AssertionError("the caller refuses unexported commits before planning")
    ids = [e.id for e in entries]
    form = request.form
    if form == "squash":
        return tuple(_squash(entries))
    picks = [Action("pick", e.id, e.commit) for e in entries]
    if form in ("edit", "insert"):
        target = _known(ids, request.at or request.after or "")
        picks[target] = Action("edit", entries[target].id, entries[target].commit)
        return tuple(picks)
    if form == "drop":
        gone = {_known(ids, d) for d in request.drops}
        if len(gone) == len(entries):
            raise UsageError(
                "refusing to drop every patch of the series",
                hint="drop them one at a time, or edit series.toml",
            )
        return tuple(
            Action("drop", a.id, a.commit, reason="removed") if k in gone else a
            for k, a in enumerate(picks)
        )
    assert request.move is not None
    moved = picks.pop(_known(ids, request.move))
    anchor = request.before or request.after or ""
    if anchor == moved.id:
        raise UsageError(f"cannot move {moved.id} next to itself", hint="name another patch")
    place = _known([a.id for a in picks], anchor) + (1 if request.after else 0)
    picks.insert(place, moved)
    return tuple(picks)


def _known(ids: list[str], wanted: str) -> int:
    for k, pid in enumerate(ids):
        if pid.lower() == wanted.lower():
            return k
    raise UsageError(
        f"no patch {wanted} in the checkout's series",
        why=f"the series: {', '.join(i for i in ids if i)}",
        hint="`series list` shows the patches",
    )


def _squash(entries: list[Entry]) -> list[Action]:
    """Each fixup commit right after the patch it names (by subject or id), marked ``fixup``."""
    plan: list[Action] = []
    fixups: dict[int, list[Action]] = {}
    patches = [e for e in entries if not e.subject.startswith(FIXUP_PREFIXES)]
    for e in entries:
        if not e.subject.startswith(FIXUP_PREFIXES):
            continue
        target = _fixup_target(patches, e)
        fixups.setdefault(target, []).append(Action("fixup", patches[target].id, e.commit))
    if not fixups:
        raise UsageError(
            "nothing to squash: no `fixup!`, `squash!` or `amend!` commit on the branch",
            hint="make one with `git commit --fixup=<the patch's commit>` in the checkout",
        )
    for k, e in enumerate(patches):
        plan.append(Action("pick", e.id, e.commit))
        plan.extend(fixups.get(k, []))
    return plan


def _fixup_target(patches: list[Entry], fixup: Entry) -> int:
    subject = fixup.subject
    while subject.startswith(FIXUP_PREFIXES):
        subject = subject.split(" ", 1)[1]
    for k, e in enumerate(patches):
        if e.subject == subject or e.commit.startswith(subject) or e.id == subject:
            return k
    raise UsageError(
        f"no patch for {fixup.commit[:12]} {fixup.subject}",
        why=f"no patch of the series has the subject {subject!r}",
        hint="make it with `git commit --fixup=<the patch's commit>`, or reword it",
    )

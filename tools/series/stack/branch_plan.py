"""What ``series branches`` plans and did: one :class:`Item` per branch, and its JSON.

Kept apart from the logic (series.stack.branches) so that the command
module and the record can name the actions without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from series import refnames
from series.builder.build import Failure
from series.manifest import Patch

CREATE, MOVE, UNCHANGED, DELETE, SKIP = "create", "move", "unchanged", "delete", "skip"
CHANGES = (CREATE, MOVE, DELETE)
LOCAL_BACKUP = refnames.BACKUP_BRANCHES
REMOTE_BACKUP = refnames.BACKUP_REMOTE


@dataclass(frozen=True)
class Options:
    prefix: str = ""
    alone: bool = False
    dry_run: bool = False
    push: str | None = None  # a remote name, URL or path
    prune: bool = False
    force: bool = False
    upstream: str | None = None  # --upstream: where the pinned commit is fetched from

    @property
    def mode(self) -> str:
        return "alone" if self.alone else "stacked"


@dataclass
class Item:
    """One branch: what it is, what it should be, and what this run does to it."""

    branch: str
    patch: str | None  # None: the branch at the pin (position 0), or one whose patch left
    position: int | None
    old: str | None  # the local branch before the run
    new: str | None  # what it should be (None: delete, or skipped)
    base: str | None  # the pull request's base branch
    action: str  # create, move, unchanged, delete, skip
    why: str = ""
    done: bool = False
    forced: bool = False
    remote_old: str | None = None
    remote_action: str | None = None
    remote_forced: bool = False

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def changes(self, prune: bool) -> bool:
        local = self.action in (CREATE, MOVE) or (self.action == DELETE and prune)
        return local or self.remote_action in CHANGES

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "branch": self.branch,
            "patch": self.patch,
            "position": self.position,
            "action": self.action,
            "old": self.old,
            "new": self.new,
            "base": self.base,
            "done": self.done,
        }
        if self.why:
            data["why"] = self.why
        if self.remote_action is not None:
            data["remote"] = {"action": self.remote_action, "old": self.remote_old}
        return data


@dataclass
class Outcome:
    mode: str
    prefix: str
    remote: str | None
    dry_run: bool
    pin: str
    upstream_ref: str
    prune: bool
    items: list[Item] = field(default_factory=list)
    failure: Failure[Patch] | None = None
    backups: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[Item]:
        """Items this run changes (or, with --dry-run, would change), locally or remotely."""
        return [i for i in self.items if i.changes(self.prune)]

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "prefix": self.prefix,
            "remote": self.remote,
            "dry_run": self.dry_run,
            "pin": self.pin,
            "upstream_ref": self.upstream_ref,
            "prune": self.prune,
            "changed": bool(self.changes) and not self.dry_run,
            "branches": [i.to_json() for i in self.items],
            "backups": self.backups,
        }

"""What ``series branches`` made: which branches, at which commits, pushed where.

Kept in the checkout as one ref, ``refs/series/branches``, pointing at a
blob of JSON (format 1, validated on every load), and changed in the same
``update-ref --stdin`` transaction as the branches themselves. It answers
the two questions the command must not guess:

* is this branch one series made (so it may move it, and delete it once
  its patch left series.toml), or someone's own branch of the same name?
* is what the remote has what series pushed from here (so it may be
  replaced under a lease), or a colleague's push?

Branches are kept in *sets*, one per naming (``--prefix``) and mode
(stacked or ``--alone``), so pruning one set never deletes another's::

    {"format": 1, "sets": [{"prefix": "", "mode": "stacked",
      "branches": {"perf-P1-x": "<commit>"},
      "pushed": {"origin": {"perf-P1-x": "<commit>"}}}]}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from series import json_text, refnames
from series.errors import SeriesError
from series.git import Repo

RECORD_REF = refnames.BRANCHES
FORMAT = 1
MODES = ("stacked", "alone")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class BranchSet:
    prefix: str
    mode: str
    branches: dict[str, str] = field(default_factory=dict)  # name -> commit series set
    pushed: dict[str, dict[str, str]] = field(default_factory=dict)  # remote -> name -> commit

    @property
    def key(self) -> tuple[str, str]:
        return (self.prefix, self.mode)

    @property
    def live(self) -> bool:
        return bool(self.branches) or any(self.pushed.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "mode": self.mode,
            "branches": dict(sorted(self.branches.items())),
            "pushed": {r: dict(sorted(p.items())) for r, p in sorted(self.pushed.items()) if p},
        }


@dataclass
class Record:
    sets: list[BranchSet] = field(default_factory=list)
    blob: str | None = None  # the blob it was read from, for compare-and-swap

    def get(self, prefix: str, mode: str) -> BranchSet:
        for s in self.sets:
            if s.key == (prefix, mode):
                return s
        made = BranchSet(prefix, mode)
        self.sets.append(made)
        return made

    def owner(self, name: str) -> BranchSet | None:
        return next((s for s in self.sets if name in s.branches), None)

    def dump(self) -> bytes:
        live = [s.to_json() for s in sorted(self.sets, key=lambda s: s.key) if s.live]
        return (json_text.dumps({"format": FORMAT, "sets": live}, indent=2) + "\n").encode()


def load(repo: Repo) -> Record:
    blob = repo.refs.value(RECORD_REF)
    if blob is None:
        return Record()
    where = f"{RECORD_REF} in {repo.path}"
    try:
        data = json_text.loads(repo.objects.read_blob(blob).decode("utf-8"))
    except ValueError as exc:  # not UTF-8, or not JSON
        raise _damaged(where, f"it is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SeriesError(
            f"{where} was written by another version of series",
            why=f"format {data.get('format') if isinstance(data, dict) else None!r}; "
            f"this series reads format {FORMAT}",
            hint="use the version of series that made the branches",
        )
    sets = data.get("sets")
    if not isinstance(sets, list):
        raise _damaged(where, "'sets' is not a list")
    return Record([_set(item, where) for item in sets], blob)


def _set(item: Any, where: str) -> BranchSet:
    if not isinstance(item, dict) or item.get("mode") not in MODES:
        raise _damaged(where, f"a set is not an object with a mode in {MODES}")
    prefix = item.get("prefix")
    if not isinstance(prefix, str):
        raise _damaged(where, "a set's 'prefix' is not a string")
    branches = _commits(item.get("branches"), where, "branches")
    pushed = item.get("pushed", {})
    if not isinstance(pushed, dict):
        raise _damaged(where, "'pushed' is not an object")
    remotes = {str(r): _commits(p, where, f"pushed.{r}") for r, p in pushed.items()}
    return BranchSet(prefix, item["mode"], branches, remotes)


def _commits(data: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and _SHA.match(v) for k, v in data.items()
    ):
        raise _damaged(where, f"'{key}' is not an object of branch -> commit id")
    return dict(data)


def _damaged(where: str, why: str) -> SeriesError:
    return SeriesError(
        f"the record of series-made branches in {where} is damaged",
        why=why,
        hint=f"nothing was changed; look at it (git cat-file -p {RECORD_REF}), "
        f"or delete it (git update-ref -d {RECORD_REF}): series then treats "
        "every existing branch as someone else's and refuses to move it",
    )

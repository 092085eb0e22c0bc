"""The memo of built stacks, kept as refs in the per-user cache repository.

Each commit :func:`series.builder.build.build` makes is kept under
``refs/series/stack/<key>`` (``<key>.3way`` when it needed a 3-way apply),
where the key hashes the base, the id and bytes of every patch up to it,
and the source of the code that makes the commits. An unchanged series
then costs one ``for-each-ref``; after an edit to patch k only k and its
successors are built again. At most MEMO_LIMIT refs are kept; they are a
cache, and deleting them is always safe. Memo updates are
compare-and-swap like every ref update; one that loses a race with a
concurrent run is simply not recorded.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from series import refnames
from series.builder import build as build_module
from series.builder import message as message_module
from series.builder.build import Built, P, PatchFile, Step
from series.git import RefMoved, Repo
from series.git import index as git_index
from series.git import repo as git_repo
from series.logs import debug

MEMO = refnames.MEMO
MEMO_LIMIT = 256

Known = dict[str, tuple[str, bool]]  # key -> (commit, whether it needed a 3-way apply)


def recorded(repo: Repo) -> Known:
    """Every commit the memo of ``repo`` keeps, by key: one ``for-each-ref``."""
    known: Known = {}
    for name, commit in repo.refs.under(MEMO).items():
        key, _, flag = name.removeprefix(MEMO).partition(".")
        known[key] = (commit, flag == "3way")
    return known


def build(repo: Repo, base: str, files: list[PatchFile[P]], known: Known | None = None) -> Built[P]:
    """:func:`series.builder.build.build`, reusing and recording commits in ``repo``.

    ``known``: :func:`recorded`'s answer, for a command that builds two stacks in one
    repository (``series range-diff``: one listing for both); what this build records
    (or deletes) is written into it, so it stays what the refs hold.
    """
    keys = memo_keys(base, files)
    if known is None:
        known = recorded(repo)
    built: Built[P] = Built(base)
    for item, key in zip(files, keys, strict=True):
        if key not in known:
            break
        commit, three_way = known[key]
        built.steps.append(Step(item.patch, commit, three_way))
    reused = built.reused = len(built.steps)
    if reused == len(files):
        return built
    rest = build_module.build(repo, built.tip, files[reused:])
    built.steps += rest.steps
    built.failure = rest.failure
    _record(repo, known, keys, reused, rest.steps)
    return built


def _record(repo: Repo, known: Known, keys: list[str], at: int, steps: list[Step[P]]) -> None:
    lines = [
        f"update {MEMO}{keys[at + i]}{'.3way' if s.three_way else ''} {s.commit} {'0' * 40}"
        for i, s in enumerate(steps)
    ]
    gone = []
    if len(known) + len(lines) > MEMO_LIMIT:
        wanted = set(keys)
        for key, (commit, three_way) in known.items():
            if key not in wanted:
                lines.append(f"delete {MEMO}{key}{'.3way' if three_way else ''} {commit}")
                gone.append(key)
    try:
        repo.refs.update("series memo: record built commits", lines)
    except RefMoved as exc:  # a concurrent run got there first: the memo is optional
        debug("series.stack", "memo not recorded: %s", exc.why)
        return
    for key in gone:
        del known[key]
    for i, s in enumerate(steps):
        known[keys[at + i]] = (s.commit, s.three_way)


def _salt() -> bytes:
    """Memo keys change whenever the code that builds the commits changes."""
    digest = hashlib.sha1()
    for module in (git_index, git_repo, build_module, message_module):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.digest()


def memo_keys(base: str, files: list[PatchFile[P]]) -> list[str]:
    key = hashlib.sha1(_salt() + base.encode()).hexdigest()
    keys = []
    for item in files:
        data = item.path.read_bytes()
        key = hashlib.sha1(f"{key}\0{item.patch.id}\0".encode() + data).hexdigest()
        keys.append(key)
    return keys

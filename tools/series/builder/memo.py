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

The key is of the bytes read before the build, and git reads the file
again to build it: a file saved in between would have its new commit
kept under its old bytes' key, and taken the next time the file holds
those bytes. So after a build every file must still be the file the keys
were computed from (the same bytes, and the same inode, size and times:
a write in place changes the times, and the change time cannot be set
back); else the run refuses, keeping nothing.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from series import refnames
from series.builder import build as build_module
from series.builder import message as message_module
from series.builder.build import Built, P, PatchFile, Step
from series.errors import SeriesError
from series.git import RefMoved, Repo
from series.git import ident as git_ident
from series.git import index as git_index
from series.git import mail as git_mail
from series.git import objects as git_objects
from series.git import repo as git_repo
from series.git import run as git_run
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
    read = [identity(item.path) for item in files]  # before the bytes the keys hash
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
    changed = [
        item.path
        for item, before in zip(files, read, strict=True)
        if before is None or before != identity(item.path)
    ]
    if changed or memo_keys(base, files) != keys:
        raise SeriesError(
            f"{(changed or [files[0].path])[0]} changed while series read it",
            why="the stack was built from bytes that are no longer the file's, so neither "
            "the built commits nor their record can be trusted; nothing was written",
            hint="run the command again once the file is saved",
        )
    _record(repo, known, keys, reused, rest.steps)
    return built


def identity(path: Path) -> tuple[int, ...] | None:
    """series.files.identity (the builder imports nothing above the git layer)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


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
    """Memo keys change whenever the code that builds the commits changes: the source of
    every module on the way from a patch file to its commit (how the file is split, the
    patch applied, the message and the commit written, the environment git runs in)."""
    digest = hashlib.sha1()
    modules = (git_index, git_repo, build_module, message_module)
    for module in (*modules, git_mail, git_objects, git_ident, git_run):
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

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

The key is of the bytes read once before the build, and the build applies
those bytes (series.builder.build's ``data``), not the file read again: a
commit is kept only under the key of the bytes it was built from, even
when the file is saved twice within one tick of the file system's clock
(same size and times). A file saved while the stack is built is still
refused: after a build every file must still be the file the keys were
computed from (the same bytes, and the same inode, size and times), else
the run refuses, keeping nothing, since what it built is no longer what
the file says.

Beside each, in the same transaction, ``refs/series/proven/<key>/<commit>``
records what the build proved: those bytes on that base, by this code, gave
that commit. :func:`proven` trusts a step only when such a ref names both
the key and the commit it is asked about, and points at that commit: a memo
ref moved to another commit, a memo of other bytes or of other series code
(the key hashes both) proves nothing, and the caller builds the long way.
``series export`` uses it to skip re-applying the unchanged prefix of the
files it writes (series.stack.export).
"""

from __future__ import annotations

import os
import sys
from _blake2 import blake2b
from functools import cache
from importlib.util import find_spec

from series import refnames
from series.errors import SeriesError
from series.git.refs import RefMoved
from series.logs import debug

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from series.builder.build import Built, P, PatchFile, Step
    from series.git import Repo
    from series.git.refs import Listing

MEMO = refnames.MEMO
PROVEN = refnames.PROVEN
MEMO_LIMIT = 256

Known = dict[str, tuple[str, bool]]  # key -> (commit, whether it needed a 3-way apply)


def recorded(repo: Repo) -> Known:
    """Every commit the memo of ``repo`` keeps, by key: one ``for-each-ref``."""
    return known_of(repo.refs.under(MEMO))


def recorded_later(repo: Repo) -> Listing:
    """:func:`recorded`'s ``for-each-ref``, started now and read later (``series
    range-diff``: beside the reading of the earlier version), by :func:`known_of` of its
    :meth:`~series.git.refs.Listing.result`."""
    return repo.refs.under_later(MEMO)


def known_of(refs: dict[str, str]) -> Known:
    """The memo, by key, from its refs (refname -> commit)."""
    known: Known = {}
    for name, commit in refs.items():
        key, _, flag = name.removeprefix(MEMO).partition(".")
        known[key] = (commit, flag == "3way")
    return known


def build(repo: Repo, base: str, files: list[PatchFile[P]], known: Known | None = None) -> Built[P]:
    """:func:`series.builder.build.build`, reusing and recording commits in ``repo``.

    ``known``: :func:`recorded`'s answer, for a command that builds two stacks in one
    repository (``series range-diff``: one listing for both); what this build records
    (or deletes) is written into it, so it stays what the refs hold.
    """
    # The builder is imported only here and in check: a range-diff that finds both stacks
    # in the memo (series.stack.rangediff) applies no patch, and loads none of it.
    from series.builder import build as build_module
    from series.builder.build import Built, Step

    read = [identity(item.path) for item in files]  # before the bytes the keys hash
    data = [item.path.read_bytes() for item in files]
    keys = keys_of(base, [(item.patch.id, d) for item, d in zip(files, data, strict=True)])
    if known is None:
        known = recorded(repo)
    built: Built[P] = Built(base, data=data)
    for item, key in zip(files, keys, strict=True):
        if key not in known:
            break
        commit, three_way = known[key]
        built.steps.append(Step(item.patch, commit, three_way))
    reused = built.reused = len(built.steps)
    if reused == len(files):
        return built
    rest = build_module.build(repo, built.tip, files[reused:], data[reused:])
    built.steps += rest.steps
    built.failure = rest.failure
    _still_read(base, files, read, keys)
    _record(repo, known, keys, reused, rest.steps)
    return built


def _still_read(
    base: str, files: list[PatchFile[P]], read: list[tuple[int, ...] | None], keys: list[str]
) -> None:
    """Refuses unless every file is still the one the keys were computed from (``read``:
    its identity taken before): what was built is of bytes the file no longer holds."""
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


def identity(path: Path) -> tuple[int, ...] | None:
    """What changes whenever ``path`` is written, in place or replaced: its device, inode,
    size and times; None when it cannot be read. (Two writes in one tick of the file
    system's clock may keep it: the bytes are compared too.)"""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _record(repo: Repo, known: Known, keys: list[str], at: int, steps: list[Step[P]]) -> None:
    lines = [  # a key the memo has already is left as it is: its proof is added
        f"update {MEMO}{keys[at + i]}{'.3way' if s.three_way else ''} {s.commit} {'0' * 40}"
        for i, s in enumerate(steps)
        if keys[at + i] not in known
    ]
    gone = []
    proofs = {f"{PROVEN}{keys[at + i]}/{s.commit}": s.commit for i, s in enumerate(steps)}
    if len(known) + len(lines) > MEMO_LIMIT:
        wanted = set(keys)
        for key, (commit, three_way) in known.items():
            if key not in wanted:
                lines.append(f"delete {MEMO}{key}{'.3way' if three_way else ''} {commit}")
                gone.append(key)
        for name, commit in repo.refs.under(PROVEN).items():
            if name.removeprefix(PROVEN).partition("/")[0] not in wanted and name not in proofs:
                lines.append(f"delete {name} {commit}")
    # A proof's value is fixed by its name, so it is set whatever it held: one left behind
    # by a pruned memo ref must not stop the memo from being recorded again.
    lines += [f"update {name} {commit}" for name, commit in proofs.items()]
    try:
        repo.refs.update("series memo: record built commits", lines)
    except RefMoved as exc:  # a concurrent run got there first: the memo is optional
        debug("series.stack", "memo not recorded: %s", exc.why)
        return
    for key in gone:
        del known[key]
    for i, s in enumerate(steps):  # a key the memo had already keeps its ref, and its commit
        known.setdefault(keys[at + i], (s.commit, s.three_way))


@cache
def _salt() -> bytes:
    """Memo keys change whenever the code that builds the commits changes: the source of
    every module on the way from a patch file to its commit (how the file is split, the
    patch applied, the message and the commit written, the environment git runs in).

    Read once per process: the code a run builds with is the code it imported, and a
    key computed before a build is the one checked after it (an upgrade of series
    during a run gave the keys after it another salt, and the run refused as if a
    patch file had changed)."""
    digest = _hash(b"")
    for name in _SALTED:
        with open(_source(name), "rb") as source:
            digest.update(source.read())
    return digest.digest()


# The modules whose source :func:`_salt` hashes, in the order it hashes them.
_SALTED = (
    "series.git.index",
    "series.git.repo",
    "series.builder.build",
    "series.builder.message",
    "series.git.mail",
    "series.git.objects",
    "series.git.ident",
    "series.git.run",
)


def _source(name: str) -> str:
    """The file of module ``name``: the imported module's, else the one an import would
    load. Not imported for it: a run that reuses every commit of the memo applies no
    patch, and needs neither the index nor the mail parts of the git layer."""
    module = sys.modules.get(name)
    if module is not None:
        return str(module.__file__)
    spec = find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return spec.origin


def memo_keys(base: str, files: list[PatchFile[P]]) -> list[str]:
    return keys_of(base, [(item.patch.id, item.path.read_bytes()) for item in files])


def keys_of(base: str, patches: list[tuple[str, bytes]]) -> list[str]:
    """The memo key of each (patch id, patch bytes) applied in order on ``base``."""
    return keys_of_digests(base, [(patch_id, content_digest(data)) for patch_id, data in patches])


def keys_of_digests(base: str, patches: list[tuple[str, bytes]]) -> list[str]:
    """:func:`keys_of`, each patch's bytes given by their :func:`content_digest`."""
    key = _hash(_salt() + base.encode()).hexdigest()
    keys = []
    for patch_id, digest in patches:
        key = _hash(f"{key}\0{patch_id}\0".encode() + digest).hexdigest()
        keys.append(key)
    return keys


def content_digest(data: bytes) -> bytes:
    """What a key holds of a patch file's bytes: their blake2b (64 bytes), the digest
    series.stack.rangediff_kept takes of each file a plain range-diff reads, so that a
    range-diff hashes each patch file once (series.stack.rangediff)."""
    return blake2b(data).digest()


def _hash(data: bytes) -> blake2b:
    """The digest of the keys: Python's own blake2b (``_blake2``, which series.code has
    loaded already), 20 bytes as SHA-1's were, so a key is 40 hex digits as before. Not
    SHA-1: the builtin ``_sha1`` hashes the half megabyte of patches of a version about
    five times slower (``series range-diff`` keys two versions), and hashlib's OpenSSL
    one costs more to import than it saves."""
    return blake2b(data, digest_size=20)


def proven(repo: Repo, base: str, patches: list[tuple[str, bytes]], commits: list[str]) -> int:
    """How many of ``patches`` (id, bytes), from the first, are proven to give ``commits``
    applied in order on ``base``: one ``for-each-ref`` in ``repo`` (the cache)."""
    if not patches:
        return 0
    return _count(repo.refs.under(PROVEN), keys_of(base, patches), commits)


def _count(refs: dict[str, str], keys: list[str], commits: list[str]) -> int:
    """Step k counts only when the steps before it do and ``PROVEN/<key k>/<commit k>`` is
    there and points at commit k. Its key hashes series' code, the base and the id and
    bytes of every patch up to k, so a proof of other bytes, another base or other code
    is never found; the name holds the commit, so a ref moved to another commit is not
    taken either. What is not proven must be applied the long way."""
    count = 0
    for key, commit in zip(keys, commits, strict=False):
        if refs.get(f"{PROVEN}{key}/{commit}") != commit:
            break
        count += 1
    return count


def check(repo: Repo, base: str, files: list[PatchFile[P]], commits: list[str]) -> Built[P] | None:
    """``files`` applied in order on ``base`` in ``repo`` (the cache), to be compared with
    ``commits`` (what the caller expects them to give): the leading files proven to give
    those commits are not applied again (their steps are the proven commits), the rest are
    applied onto the last of them, and recorded with their proofs. None when ``repo`` does
    not have the commit to apply them onto: the caller applies them where it has it."""
    from series.builder import build as build_module  # as in build
    from series.builder.build import Built, Step

    read = [identity(item.path) for item in files]  # before the bytes the keys hash
    data = [item.path.read_bytes() for item in files]
    keys = keys_of(base, [(item.patch.id, d) for item, d in zip(files, data, strict=True)])
    refs = repo.refs.under(refnames.ROOT)  # the memo and the proofs, in one process
    count = _count(refs, keys, commits)
    built: Built[P] = Built(base, data=data)
    built.steps = [Step(f.patch, c, False) for f, c in zip(files[:count], commits, strict=False)]
    built.reused = count
    if count == len(files):
        return built
    if not repo.objects.has(built.tip):
        return None
    rest = build_module.build(repo, built.tip, files[count:], data[count:])
    built.steps += rest.steps
    built.failure = rest.failure
    known: dict[str, tuple[str, bool]] = {}
    for name, commit in refs.items():
        if name.startswith(MEMO):
            key, _, flag = name.removeprefix(MEMO).partition(".")
            known[key] = (commit, flag == "3way")
    _still_read(base, files, read, keys)
    _record(repo, known, keys, count, rest.steps)
    return built

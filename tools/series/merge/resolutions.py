"""Recorded resolutions: a conflict resolved once is replayed, on any machine, without asking.

A resolution is kept in the project repository, reviewable like a patch:
``resolutions/<patch id>/<key>.patch``. Its header says which patch and
which conflict it is for; the body is a diff from the conflicted files
(with conflict markers, exactly as series writes them into the checkout)
to the files as resolved. The key hashes what the conflict is made of:
the patch id and, for every conflicted path, the blob ids of its base,
upstream and patch sides. The same conflict on another machine has the
same key and the same marked-up files, so the diff applies exactly; a
conflict that changed (upstream moved again, the patch was edited) has
another key, and the old resolution is not used (the rebase stops and
says so). Markers are written with ``git merge-file`` and fixed labels,
so they do not depend on the git version or on commit ids.

resolutions/ arrives with the project's commits, so it is read and
written only inside the project (:func:`series.files.confined`): a
``resolutions/<id>`` that is a symlink out of it is refused, never
written through, and a resolution outside is never replayed into a commit.

The format lives in the merge engine because two workflows read it:
rebase replays a resolution into the commit it makes, and check-conflicts
asks the same question of the same merge (:func:`lookup`), so both give
the same verdict on the same conflict. Only rebase writes one
(:func:`record`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from series.digests import blob_id, sha1
from series.files import confined, write_atomic
from series.git.repo import Repo
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast

TYPE_CHECKING = False  # a rebase --skip loads this module, and not the merge-tree engine
if TYPE_CHECKING:
    from series.git.mergetree import StageEntry, TreeMerge

DIRECTORY = "resolutions"
FORMAT = 1
_REGULAR = ("100644", "100755")


def labels(patch_id: str) -> tuple[str, str, str]:
    return ("new base", "old base", patch_id)


def conflict_key(patch_id: str, entries: Sequence[StageEntry]) -> str:
    lines = sorted(f"{e.path}\0{e.stage}\0{e.mode}\0{e.oid}" for e in entries)
    return sha1("\n".join([patch_id, *lines]).encode()).hexdigest()


def conflict_tree(
    repo: Repo, merge: TreeMerge, patch_id: str, env: Mapping[str, str] | None = None
) -> str:
    """The merged tree with each content conflict marked up by ``merge-file`` (fixed labels).

    Other conflicts (modify/delete, modes) keep what ``merge-tree`` wrote.
    ``env``: the scratch object store the merge was written to, if any.
    """
    info = _marked_up(repo, merge, patch_id, env)
    return repo.index.rewrite(merge.tree, info, env) if info else merge.tree


def _marked_up(
    repo: Repo, merge: TreeMerge, patch_id: str, env: Mapping[str, str] | None
) -> list[str]:
    """The ``update-index --index-info`` lines that put the marked-up files of
    :func:`conflict_tree` over the merged tree (none: no content conflict)."""
    return _written(repo, _marked(repo, merge, patch_id, env), env)


def _marked(
    repo: Repo, merge: TreeMerge, patch_id: str, env: Mapping[str, str] | None
) -> list[tuple[str, str, bytes]]:
    """(mode, path, marked-up bytes) of each content conflict of ``merge``, by path."""
    stages: dict[str, dict[int, StageEntry]] = {}
    for entry in merge.entries:
        stages.setdefault(entry.path, {})[entry.stage] = entry
    content = {
        path: st
        for path, st in stages.items()
        if 2 in st and 3 in st and {st[2].mode, st[3].mode} <= set(_REGULAR)
    }
    if not content:
        return []
    oids = sorted({e.oid for st in content.values() for e in st.values()})
    blobs = repo.objects.read_blobs(oids, env=env)
    ordered = sorted(content.items())
    triples = [
        (blobs[st[1].oid] if 1 in st else b"", blobs[st[2].oid], blobs[st[3].oid])
        for _, st in ordered
    ]
    merged = repo.merge.files(triples, favour=None, labels=labels(patch_id))
    return [(st[3].mode, path, data) for (path, st), data in zip(ordered, merged, strict=True)]


def _written(
    repo: Repo,
    marked: Sequence[tuple[str, str, bytes]],
    env: Mapping[str, str] | None,
    write: Callable[[Sequence[bytes]], list[str] | None] | None = None,
) -> list[str]:
    """The files of :func:`_marked` written: their ``--index-info`` lines. ``write``: blobs
    written by a ``hash-object`` running already, into the repository's own object store
    (None, or its None: one is run)."""
    payloads = [m[2] for m in marked]
    ids = write(payloads) if write is not None and env is None else None
    if ids is None:
        ids = repo.objects.write("blob", payloads, env=env)
    return [f"{mode} {oid}\t{path}" for (mode, path, _), oid in zip(marked, ids, strict=True)]


def path_for(root: Path, patch_id: str, key: str) -> Path:
    """Where the resolution of conflict ``key`` is kept (checked to be readable there)."""
    return confined(root, root / DIRECTORY / patch_id / f"{key[:16]}.patch", reading=True)


def is_recorded(root: Path, patch_id: str, merge: TreeMerge) -> bool:
    """Whether a resolution is recorded for ``merge`` (patch ``patch_id``'s conflict):
    only then can :func:`lookup` find its resolved tree."""
    return path_for(root, patch_id, conflict_key(patch_id, merge.entries)).is_file()


def recorded(root: Path, patch_id: str) -> list[Path]:
    """The files ``resolutions/<patch_id>/*.patch``, as ``Path.glob`` lists them (none where
    the folder is missing, not a folder or not readable), without its pattern: pathlib
    compiles one with ``re``, whose import (with enum's) was 2 ms of a ``rebase --skip``."""
    folder = confined(root, root / DIRECTORY / patch_id, reading=True)
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link to itself: not a folder, for Path.glob
            return []
        raise
    found = (folder / name for name in names if name.endswith(".patch"))
    return sorted(confined(root, p, reading=True) for p in found)


def check_recorded(root: Path, patch_ids: Sequence[str]) -> None:
    """:func:`recorded` of each of ``patch_ids`` for what it refuses (a ``resolutions/``
    or a file in it leading out of the project), with ``resolutions/`` listed once: a
    patch without a folder there has nothing to look at (nothing below a missing
    directory can lead out), where each :func:`recorded` resolves the project again."""
    folder = confined(root, root / DIRECTORY, reading=True)
    if not os.path.lexists(folder):
        return
    try:
        names: set[str] | None = set(os.listdir(folder))
    except OSError:  # not a directory, unreadable: each asks, as it always did
        names = None
    for pid in patch_ids:
        if names is None or pid in names:
            recorded(root, pid)


def record(
    repo: Repo,
    root: Path,
    *,
    patch: tuple[str, str],
    key: str,
    stages: Sequence[tuple[str, str, int, str]],
    conflicted: str,
    resolved: str,
    made_for: str,
) -> Path:
    """Write the resolution of one conflict (``patch`` is (id, title)); returns its path."""
    pid, title = patch
    head = [
        f"# series recorded resolution, format {FORMAT} (docs/rebase.md)",
        f"# patch: {pid} {title}",
        f"# made for: {made_for}",
        f"# conflict: {key}",
    ]
    sides = {1: "base", 2: "upstream", 3: "patch"}
    for path in sorted({s[3] for s in stages}):
        head.append(f"# file: {path}")
        head += [f"#   {sides[st]} {mode} {oid}" for mode, oid, st, p in stages if p == path]
    head += [
        "# Below: from the conflicted files (markers as series writes them) to the resolution.",
        "",
    ]
    data = "\n".join(head).encode() + repo.diffs.trees(conflicted, resolved)
    target = confined(root, root / DIRECTORY / pid / f"{key[:16]}.patch")  # to be written
    if not target.is_file() or target.read_bytes() != data:
        write_atomic(target, data, within=root)
    return target


def _recorded_for(path: Path, key: str) -> bytes | None:
    """The bytes of the resolution file ``path`` if its header names conflict ``key``."""
    data = path.read_bytes()
    if f"# conflict: {key}\n".encode() not in data.split(b"\ndiff --git", 1)[0] + b"\n":
        return None
    return data


class Found(NamedTuple):
    """What the recorded resolutions say about one conflicted merge of one patch."""

    key: str  # the conflict (:func:`conflict_key`)
    conflicted: str  # the tree with the conflicts marked up (:func:`conflict_tree`)
    path: Path  # where its resolution is, or would be, kept
    tree: str | None  # the resolved tree, when a recorded resolution applies
    note: str  # why none was used, when some are recorded ("" otherwise)

    def name(self, root: Path) -> str:
        """The resolution as the project names it: ``resolutions/<id>/<key>.patch``."""
        return str(self.path.relative_to(root))


def lookup(
    repo: Repo,
    root: Path,
    patch_id: str,
    merge: TreeMerge,
    env: Mapping[str, str] | None = None,
    write: Callable[[Sequence[bytes]], list[str] | None] | None = None,
) -> Found:
    """The recorded resolution of ``merge`` (patch ``patch_id``'s conflict), replayed if it applies.

    A resolution recorded for this conflict that no longer applies, or
    resolutions recorded for another conflict of the patch (upstream or the
    patch changed since), are not used; ``note`` says so. ``write``: the marked-up
    files written by a ``hash-object`` running already (a rebase's stop).
    """
    key = conflict_key(patch_id, merge.entries)
    marked = _marked(repo, merge, patch_id, env)
    path = path_for(root, patch_id, key)
    note = ""
    here = path.is_file()
    data = _recorded_for(path, key) if here else None
    if data is not None:
        known = _replayed(repo, merge.tree, marked, data, env)
        if known is not None:
            return Found(key, known[0], path, known[1], "")
    info = _written(repo, marked, env, write) if marked else []
    placed = _placed_at_the_end(data, marked) if data is not None else None
    if data is not None and placed is None:  # marked up and resolved in one scratch index
        conflicted, resolved = repo.index.rewrite_and_apply(merge.tree, info, data, env)
        if resolved is not None:
            return Found(key, conflicted, path, resolved, "")
    else:
        conflicted = repo.index.rewrite(merge.tree, info, env) if info else merge.tree
    if here and data is None:  # its name is this conflict's, its header another's
        note = f"{path.name} is named for this conflict, but its header names another: not replayed"
    elif placed is not None:
        note = (
            f"{path.name} has a hunk with no context after it ({placed}) before the file's "
            "end, which git would place at the end: not replayed"
        )
    elif here:
        note = f"{path.name} is recorded for this conflict but does not apply to it"
    others = [p for p in recorded(root, patch_id) if p != path]
    if others and not note:
        names = ", ".join(str(p.relative_to(root)) for p in others)
        note = (
            f"recorded resolution(s) {names} were made for another conflict "
            "(upstream or the patch changed since): not replayed"
        )
    return Found(key, conflicted, path, None, note)


def _replayed(
    repo: Repo,
    tree: str,
    marked: Sequence[tuple[str, str, bytes]],
    data: bytes,
    env: Mapping[str, str] | None,
) -> tuple[str, str] | None:
    """The marked-up tree and the resolved one, where the resolution ``data`` only edits
    marked-up files and gives, hunk by hunk at the lines it names, exactly the blobs
    its ``index`` lines name: the preimage is the blob the diff was made from, each hunk
    matches where it says, and the result is the postimage git hashed. Both trees are
    written as edits of ``tree`` (one ``hash-object``, one ``mktree``), with no index;
    in an object store of ``env``'s (check-conflicts), in one scratch index. None:
    anything else (another file, a new, deleted or renamed one, a mode change, a binary
    or quoted path, a hunk that does not match there, ids not SHA-1): ``apply --cached``
    on a scratch index answers, as it always did.

    Both commands take this answer first, so they agree: ``apply --cached`` gives the
    same bytes for a resolution as series writes one (each hunk with context after
    it, or at the file's end), but places a hunk without that context (``diff -U0``,
    written by hand) at the file's end or refuses it (docs/hardening.md row 880).
    """
    if not marked:
        return None
    files = _edits(data)
    if not files:
        return None
    by_path = {path: (mode, content) for mode, path, content in marked}
    resolved: dict[str, bytes] = {}
    for path, (old, new, mode, hunks) in files.items():
        if path not in by_path or by_path[path][0] != mode:
            return None
        before = by_path[path][1]
        if blob_id(before, 40) != old:
            return None
        after = _patched(before, hunks)
        if after is None or blob_id(after, 40) != new:
            return None
        resolved[path] = after
    order = [path for _, path, _ in marked]
    payloads = [by_path[p][1] for p in order] + [resolved[p] for p in order if p in resolved]
    ids = repo.objects.write("blob", payloads, env=env)
    if ids != [blob_id(p, 40) for p in payloads]:
        return None
    marked_ids = dict(zip(order, ids[: len(order)], strict=True))
    new_ids = {p: files[p][1] for p in resolved}
    conflicted = [f"{by_path[p][0]} {marked_ids[p]}\t{p}" for p in order]
    done = [f"{by_path[p][0]} {new_ids.get(p, marked_ids[p])}\t{p}" for p in order]
    if repo.index.edits(tree, env):
        trees = repo.index.rewrite_many(tree, [conflicted, done], env)
        return trees[0], trees[1]
    return repo.index.rewrite_twice(tree, conflicted, done, env)


# re imported and these compiled where used (re's cache): a --skip with no recorded
# resolution reads none (re, with enum, was 2 ms of it)
_DIFF = rb"diff --git a/(\S+) b/(\S+)\n"
_ID = rb"index ([0-9a-f]{40})\.\.([0-9a-f]{40}) (100644|100755)\n"
_HUNK = rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@[^\n]*\n"
Hunk = tuple[int, int, int, list[tuple[bytes, bytes]]]


def _edits(data: bytes) -> dict[str, tuple[str, str, str, list[Hunk]]] | None:
    """path -> (old id, new id, mode, hunks) of a resolution whose every file section is
    a plain edit of one file, as ``diff-tree -p --full-index`` writes one; else None."""
    start = data.find(b"\ndiff --git ")
    if start < 0:
        return None
    lines = data[start + 1 :].splitlines(keepends=True)
    import re

    files: dict[str, tuple[str, str, str, list[Hunk]]] = {}
    i = 0
    while i < len(lines):
        if i + 4 > len(lines):
            return None
        head, ids = re.fullmatch(_DIFF, lines[i]), re.fullmatch(_ID, lines[i + 1])
        if head is None or ids is None or head.group(1) != head.group(2):
            return None
        name = head.group(1)
        if lines[i + 2] != b"--- a/" + name + b"\n" or lines[i + 3] != b"+++ b/" + name + b"\n":
            return None
        i += 4
        hunks: list[Hunk] = []
        while i < len(lines) and not lines[i].startswith(b"diff --git "):
            found = re.fullmatch(_HUNK, lines[i])
            if found is None:
                return None
            old_start, old_n, new_n = int(found[1]), int(found[2] or b"1"), int(found[4] or b"1")
            i += 1
            body: list[tuple[bytes, bytes]] = []
            while i < len(lines) and lines[i][:1] in (b" ", b"-", b"+", b"\\"):
                line = lines[i]
                if line[:1] == b"\\":  # "\ No newline at end of file": the line before
                    if not body or not body[-1][1].endswith(b"\n"):
                        return None
                    body[-1] = (body[-1][0], body[-1][1][:-1])
                elif not line.endswith(b"\n"):
                    return None
                else:
                    body.append((line[:1], line[1:]))
                i += 1
            if sum(t != b"+" for t, _ in body) != old_n or sum(t != b"-" for t, _ in body) != new_n:
                return None
            hunks.append((old_start, old_n, new_n, body))
        path = name.decode("utf-8", "surrogateescape")
        if not hunks or path in files:
            return None
        files[path] = (ids[1].decode(), ids[2].decode(), ids[3].decode(), hunks)
    return files


def _placed_at_the_end(data: bytes, marked: Sequence[tuple[str, str, bytes]]) -> str | None:
    """Where (``path, line N``) the resolution ``data`` has a hunk with no context after
    it that its header places before the end of the marked-up file it edits; None where
    it has none. ``git apply``, which replays a resolution :func:`_replayed` cannot replay
    exactly, matches such a hunk at the file's end only (as git's own diff writes one,
    its last lines the file's): a hunk written by hand without context (``diff -U0``)
    that inserts lines was applied there, where its lines were never meant to go, and
    said "resolved (recorded)" (docs/hardening.md row 898). A path git quotes is not
    looked at (:func:`_edits` takes none either)."""
    lines_of = {path: len(content.splitlines()) for _, path, content in marked}
    path: str | None = None
    start = count = trailing = -1

    def misplaced() -> str | None:
        if start < 0 or trailing != 0 or path not in lines_of:
            return None
        last = start + count - 1 if count else start  # an insertion goes after line start
        return f"{path}, line {start}" if last < lines_of[path] else None

    import re

    before = b""
    for line in data.splitlines(keepends=True):
        found = re.fullmatch(_HUNK, line)
        header = line.startswith(b"+++ ") and before.startswith(b"--- ")  # not a line added
        before = line
        if found is not None or header or line.startswith(b"diff --git "):
            where = misplaced()
            if where is not None:
                return where
            start = count = trailing = -1
        if found is not None:
            start, count, trailing = int(found[1]), int(found[2] or b"1"), 0
        elif header:
            name = line[4:].rstrip(b"\n")
            path = name[2:].decode("utf-8", "surrogateescape") if name[:2] == b"b/" else None
        elif start >= 0 and line[:1] == b" ":
            trailing += 1
        elif start >= 0 and line[:1] in (b"-", b"+"):
            trailing = 0
    return misplaced()


def _patched(before: bytes, hunks: list[Hunk]) -> bytes | None:
    """``before`` with each hunk applied exactly at the line it names; None if one does not
    match there (git would look elsewhere: the caller leaves that to git)."""
    old = before.splitlines(keepends=True)
    out: list[bytes] = []
    pos = 0
    for old_start, old_n, _, body in hunks:
        at = old_start - 1 if old_n else old_start
        if at < pos or at > len(old):
            return None
        out += old[pos:at]
        pos = at
        for tag, text in body:
            if tag == b"+":
                out.append(text)
                continue
            if pos >= len(old) or old[pos] != text:
                return None
            if tag == b" ":
                out.append(text)
            pos += 1
    out += old[pos:]
    return b"".join(out)

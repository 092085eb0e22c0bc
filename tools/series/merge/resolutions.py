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

from collections.abc import Mapping, Sequence
from pathlib import Path

from series.digests import sha1
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
    merged = []
    for path, st in sorted(content.items()):
        base = blobs[st[1].oid] if 1 in st else b""
        data = repo.merge.file(
            base, blobs[st[2].oid], blobs[st[3].oid], favour=None, labels=labels(patch_id)
        )
        merged.append((st[3].mode, path, data))
    ids = repo.objects.write("blob", [m[2] for m in merged], env=env)
    return [f"{mode} {oid}\t{path}" for (mode, path, _), oid in zip(merged, ids, strict=True)]


def path_for(root: Path, patch_id: str, key: str) -> Path:
    """Where the resolution of conflict ``key`` is kept (checked to be readable there)."""
    return confined(root, root / DIRECTORY / patch_id / f"{key[:16]}.patch", reading=True)


def recorded(root: Path, patch_id: str) -> list[Path]:
    folder = confined(root, root / DIRECTORY / patch_id, reading=True)
    return sorted(confined(root, p, reading=True) for p in folder.glob("*.patch"))


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


def replay(
    repo: Repo, path: Path, key: str, conflicted: str, env: Mapping[str, str] | None = None
) -> str | None:
    """The resolved tree, if ``path`` is the resolution of conflict ``key`` and applies."""
    data = _recorded_for(path, key)
    return repo.index.apply_exact(conflicted, data, env=env) if data is not None else None


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
) -> Found:
    """The recorded resolution of ``merge`` (patch ``patch_id``'s conflict), replayed if it applies.

    A resolution recorded for this conflict that no longer applies, or
    resolutions recorded for another conflict of the patch (upstream or the
    patch changed since), are not used; ``note`` says so.
    """
    key = conflict_key(patch_id, merge.entries)
    info = _marked_up(repo, merge, patch_id, env)
    path = path_for(root, patch_id, key)
    note = ""
    here = path.is_file()
    data = _recorded_for(path, key) if here else None
    if data is not None:  # marked up and resolved in one scratch index (conflict_tree, replay)
        conflicted, resolved = repo.index.rewrite_and_apply(merge.tree, info, data, env)
        if resolved is not None:
            return Found(key, conflicted, path, resolved, "")
    else:
        conflicted = repo.index.rewrite(merge.tree, info, env) if info else merge.tree
    if here:
        note = f"{path.name} is recorded for this conflict but does not apply to it"
    others = [p for p in recorded(root, patch_id) if p != path]
    if others and not note:
        names = ", ".join(str(p.relative_to(root)) for p in others)
        note = (
            f"recorded resolution(s) {names} were made for another conflict "
            "(upstream or the patch changed since): not replayed"
        )
    return Found(key, conflicted, path, None, note)

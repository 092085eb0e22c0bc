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
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from series.files import confined, write_atomic
from series.git import Repo, StageEntry, TreeMerge

DIRECTORY = "resolutions"
FORMAT = 1
_REGULAR = ("100644", "100755")


def labels(patch_id: str) -> tuple[str, str, str]:
    return ("new base", "old base", patch_id)


def conflict_key(patch_id: str, entries: Sequence[StageEntry]) -> str:
    lines = sorted(f"{e.path}\0{e.stage}\0{e.mode}\0{e.oid}" for e in entries)
    return hashlib.sha1("\n".join([patch_id, *lines]).encode()).hexdigest()


def conflict_tree(repo: Repo, merge: TreeMerge, patch_id: str) -> str:
    """The merged tree with each content conflict marked up by ``merge-file`` (fixed labels).

    Other conflicts (modify/delete, modes) keep what ``merge-tree`` wrote.
    """
    stages: dict[str, dict[int, StageEntry]] = {}
    for entry in merge.entries:
        stages.setdefault(entry.path, {})[entry.stage] = entry
    content = {
        path: st
        for path, st in stages.items()
        if 2 in st and 3 in st and {st[2].mode, st[3].mode} <= set(_REGULAR)
    }
    if not content:
        return merge.tree
    oids = sorted({e.oid for st in content.values() for e in st.values()})
    blobs = repo.objects.read_blobs(oids)
    merged = []
    for path, st in sorted(content.items()):
        base = blobs[st[1].oid] if 1 in st else b""
        data = repo.merge.file(
            base, blobs[st[2].oid], blobs[st[3].oid], favour=None, labels=labels(patch_id)
        )
        merged.append((st[3].mode, path, data))
    ids = repo.objects.write("blob", [m[2] for m in merged])
    info = [f"{mode} {oid}\t{path}" for (mode, path, _), oid in zip(merged, ids, strict=True)]
    return repo.index.rewrite(merge.tree, info)


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


def replay(repo: Repo, path: Path, key: str, conflicted: str) -> str | None:
    """The resolved tree, if ``path`` is the resolution of conflict ``key`` and applies."""
    data = path.read_bytes()
    if f"# conflict: {key}\n".encode() not in data.split(b"\ndiff --git", 1)[0] + b"\n":
        return None
    return repo.index.apply_exact(conflicted, data)

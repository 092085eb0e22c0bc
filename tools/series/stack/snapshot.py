"""A snapshot of the project's series files (series.toml, patches/) as a commit.

``series rebase`` takes one before it changes anything, in the checkout's
repository (``refs/series/rebase/saved``): ``--abort`` puts the files back
byte for byte from it, the end of the rebase builds the new series.toml
from the old one in it (so a rebase finished twice after a kill writes the
same bytes), and ``series range-diff`` reads the old series from it.
"""

from __future__ import annotations

from pathlib import Path

from series.digests import blob_id
from series.files import confined, confined_all, keep_copies, remove, write_atomic
from series.git.ident import Ident
from series.git.repo import Repo

_WHO = Ident("keras-series", "rebase@keras-series.invalid", "@0 +0000")


def save_project(repo: Repo, root: Path, patch_files: list[Path]) -> str:
    """A commit whose tree holds series.toml and the given patch files."""
    paths = [confined(root, p, reading=True) for p in (root / "series.toml", *patch_files)]
    blobs = repo.objects.write("blob", [p.read_bytes() for p in paths])
    index = [
        f"100644 {oid}\t{path.relative_to(root).as_posix()}"
        for path, oid in zip(paths, blobs, strict=True)
    ]
    tree = repo.index.rewrite(None, index)  # no empty tree written, nor read into the index
    return repo.objects.commit_tree(tree, [], "series rebase: the series before the rebase\n", _WHO)


def saved_files(repo: Repo, saved: str) -> dict[str, bytes]:
    """relative path -> bytes of every file in the snapshot."""
    files = repo.objects.tree_files(saved)
    blobs = repo.objects.read_blobs(sorted(set(files.values())))
    return {path: blobs[oid] for path, oid in files.items()}


def restore_project(
    repo: Repo, root: Path, saved: str, written: list[Path], what: str
) -> tuple[int, Path | None]:
    """Put the snapshot's files back; delete those of ``written`` it does not have.

    Returns how many files it changed, and where the files it replaced or
    deleted are kept: before any is written, each is copied under a new
    ``.series/backups/<what>-<time>/`` (series.files ``keep_copies``), since
    they may hold what the user wrote by hand during the rebase or edit
    (series.toml's hand-kept keys, a patch file edited), which the command
    would otherwise throw away (or what a rebase's end, cut short, had
    written: its bytes cannot tell them apart); None when none differed.
    Files that already match are not touched, so it can run again after an
    interruption (which keeps again what still differs). A file matches when
    its bytes hash to the snapshot's blob id (git's own object id of those
    bytes): only the blobs of the files that differ are read from git.
    """
    files = repo.objects.small_tree_files(saved)  # series.toml and patches/: no ls-tree
    # all before any is written; each path once (the snapshot's files are mostly ``written``)
    confined_all(root, dict.fromkeys([root / rel for rel in files] + written))
    stale = {rel: oid for rel, oid in files.items() if _blob_id(root / rel, oid) != oid}
    extra = [p for p in written if p.relative_to(root).as_posix() not in files and p.is_file()]
    present = [root / rel for rel in stale if (root / rel).is_file()]
    kept = keep_copies(root, present + extra, what)
    blobs = repo.objects.read_blobs(sorted(set(stale.values()))) if stale else {}
    changed = 0
    for rel, oid in stale.items():
        write_atomic(root / rel, blobs[oid], within=root)
        changed += 1
    for path in written:
        if path.relative_to(root).as_posix() not in files and remove(path, within=root):
            changed += 1
    return changed, kept


def keep_edited(repo: Repo, root: Path, saved: str, paths: list[Path], what: str) -> Path | None:
    """Copies of those of ``paths`` (files about to be replaced or removed) whose bytes are
    not the snapshot's: edited by hand since it was taken (series.toml's hand-kept keys, a
    patch file edited, one added), kept under a new ``.series/backups/<what>-<time>/``
    (series.files ``keep_copies``) before anything is written; None when none was.

    A rebase's end writes patches/ and series.toml from the snapshot (made again, the same
    bytes, after a kill): what the user wrote there meanwhile is kept as ``--abort`` keeps
    it. A file that already holds what the end writes is not in ``paths`` (the end, cut
    short, had written it): nothing of the user's to keep.
    """
    files = repo.objects.small_tree_files(saved)  # no ls-tree: the long-lived cat-file
    like = next(iter(files.values()))  # series.toml is there: its id's length is the hash's
    edited = [
        p
        for p in paths
        if p.is_file() and _blob_id(p, like) != files.get(p.relative_to(root).as_posix())
    ]
    return keep_copies(root, edited, what)


def _blob_id(path: Path, like: str) -> str | None:
    """The id git gives the bytes of the file ``path`` as a blob (the hash of ``like``'s
    length: SHA-1, or SHA-256 in such a repository); None when it is not a file."""
    if not path.is_file():
        return None
    return blob_id(path.read_bytes(), len(like))

"""A work tree's index file, checked as git checks it only under ``git fsck``.

git 2.39 reads a repository's index (``.git/index``) without checking the
checksum it ends with: only ``git fsck`` does. An index whose bytes were
changed (a flipped bit, a truncated end, a block of a damaged disk) is read as
it is: git status then lists changes nobody made, or none where there are,
and a command that rewrites the index from it (``read-tree``, ``stash``)
would make the damage the user's staged work, with nothing said. git refuses
an index only when its header or an entry cannot be parsed at all ("index file
smaller than expected", "bad signature", "bad index version").

So before a git command that reads the checkout's own index
(series.git.run ``READS_INDEX``, no ``GIT_INDEX_FILE`` of series' own) series
checks the file as git would if it checked (:func:`damage`): its size, its signature,
its version and its checksum (SHA-1 or SHA-256, the repository's; an index
written with ``index.skipHash``, whose checksum is all zeros, is taken as
git takes it). What git itself says of an index it cannot read is told apart
in series.git.run (``environment_fault``); both end in one message there.

Only ``os``, series.plain and series.digests (Python's own ``_sha1``, ``_sha256``):
series.stack.verified_kept asks it before the CLI is imported.
"""

from __future__ import annotations

import os

from series.digests import sha1, sha256
from series.plain import read_plain

_HEADER = 12  # "DIRC", the version, the number of entries
_VERSIONS = (2, 3, 4)  # what git 2.39 reads


def index_path(work_tree: str) -> str | None:
    """The index file of the work tree ``work_tree`` (its ``.git`` directory's), or None
    where it has none of its own there (a bare repository, a linked work tree)."""
    git_dir = os.path.join(work_tree, ".git")
    return os.path.join(git_dir, "index") if os.path.isdir(git_dir) else None


def damage(path: str) -> str | None:
    """What is wrong with the index file at ``path``, as git would say it if it checked
    (its own words, quoted), or None: a sound index, none at all (git reads that as
    empty), or one that is no plain file (git's to fail on; a FIFO there is refused
    before git starts: series.git.inprogress)."""
    try:
        data = read_plain(path)
    except OSError:
        return None
    if len(data) < _HEADER + 20:
        return (
            f'it is {len(data)} bytes long, shorter than the smallest index (git: "index file '
            'smaller than expected")'
        )
    if data[:4] != b"DIRC":
        signature = int.from_bytes(data[:4], "big")
        return (
            "it does not begin as an index does (git: "
            f'"bad signature 0x{signature:08x}", "index file corrupt")'
        )
    version = int.from_bytes(data[4:8], "big")
    if version not in _VERSIONS:
        return (
            f"its format is version {version}, which this git cannot read: damage, or an "
            f'index written by a newer git (git: "bad index version {version}", "index file '
            'corrupt")'
        )
    if not _sound(data):
        return (
            "its checksum does not match its bytes: they were changed after git wrote it "
            '(git fsck: "bad index file sha1 signature"; git status reads it without '
            "checking, as it is)"
        )
    return None


def _sound(data: bytes) -> bool:
    """Whether ``data`` ends with the checksum of the rest, SHA-1 or SHA-256 (whichever the
    repository uses), or with zeros in its place (``index.skipHash``: not written)."""
    for width, digest in ((20, sha1), (32, sha256)):
        if len(data) < _HEADER + width:
            continue
        body, end = data[:-width], data[-width:]
        if end == bytes(width) or digest(body).digest() == end:
            return True
    return False

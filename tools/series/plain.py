"""Reading a file series keeps, or git keeps, only when it is a plain file: the one reader.

A FIFO put where series (or git) keeps a file makes a plain ``open`` wait
for a writer for ever, and a symlink there is followed wherever it leads.
Series writes every file it keeps by renaming a plain file into place, and
git writes its own the same way, so anything else in their place is not
theirs: :func:`read_plain` opens with ``O_NONBLOCK`` (a FIFO opens at
once) and ``O_NOFOLLOW`` (a link is not followed), then takes the file only
if ``fstat`` says it is a plain file, and raises :class:`NotPlain` (an
``OSError``) otherwise. Its callers decide what that means: a cache entry
is treated as absent (worked out again and written back as a file), state
the user's work depends on is refused with an error naming the file.

Only ``os`` and ``stat`` (which ``os`` loads): the answers given before the
CLI is imported (series.stack.branches_kept, verified_kept) and the git
layer read with it too.
"""

from __future__ import annotations

import os
from stat import S_ISREG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FOLLOW = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_FLAGS = _FOLLOW | os.O_NOFOLLOW


class NotPlain(OSError):
    """The path exists but is no plain file: a symlink, a FIFO, a device, a directory (or,
    with ``mine``, a file another user owns or others may write)."""


def read_plain(path: str | os.PathLike[str], *, mine: bool = False, follow: bool = False) -> bytes:
    """The bytes of the plain file ``path``, never following a link or waiting on a FIFO.

    Raises FileNotFoundError when it is missing, :class:`NotPlain` when it is no plain
    file, and OSError for the rest. ``mine``: a file of another user, or one that group or
    others may write (a cache directory shared by mistake), is :class:`NotPlain` too.
    ``follow``: a link is followed (a project's patch file may be one, series.files
    judges where it leads), to a plain file only.
    """
    try:
        fd = os.open(path, _FOLLOW if follow else _FLAGS)
    except OSError as exc:
        if not follow and os.path.islink(path):  # O_NOFOLLOW's ELOOP, told without errno's import
            raise NotPlain(exc.errno, "not a plain file (a symbolic link)", str(path)) from None
        raise
    try:
        found = os.fstat(fd)
        if not S_ISREG(found.st_mode):
            raise NotPlain(0, "not a plain file", str(path))
        if mine and (found.st_uid != os.getuid() or found.st_mode & 0o022):
            raise NotPlain(0, "not this user's own file, or others may write it", str(path))
        chunks = [os.read(fd, found.st_size + 1)]
        while chunks[-1]:  # a file that grew since fstat: read to its end
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks)
    finally:
        os.close(fd)


def plain_tree(directory: str, rel: str, digest: Any, skip: frozenset[str] = frozenset()) -> None:
    """Every file under ``directory`` into ``digest``, its name (``rel`` and the path below)
    and bytes: a git directory's loose refs (``rel`` ``refs/``), for the digests of the
    kept answers (series.git.ref_files, series.stack.branches_kept). In ``os.walk``'s
    order (a directory's files by name, then its directories by name), without its
    generator and each file without a buffered reader (``os.walk`` cost most of a kept
    answer's digest of a cache with a hundred refs); the directories named in
    ``skip`` (``refs/x/``) left out. Raises OSError at a link, to a file or to a
    directory (git follows a linked directory of refs, which ``os.walk`` neither reads nor
    refuses: a ref moved under one left a digest as it was), and at what is neither file
    nor directory: what git makes of them is for a full run to find."""
    with os.scandir(directory) as found:
        entries = sorted(found, key=_name)
    below = []
    for entry in entries:
        if entry.is_symlink():
            raise OSError(f"{entry.path}: a link")
        if entry.is_dir(follow_symlinks=False):
            below.append(entry)
            continue
        if not entry.is_file(follow_symlinks=False):  # a FIFO would hold the answer
            raise OSError(f"{entry.path}: not a file")
        digest.update(f"\0{rel}{entry.name}\0".encode() + read_plain(entry.path))
    for entry in below:
        if f"{rel}{entry.name}/" not in skip:
            plain_tree(entry.path, f"{rel}{entry.name}/", digest, skip)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name

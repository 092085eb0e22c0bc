"""A checkout's refs (and index) read as files, as a digest: series.git.refs.files_key.

Apart from series.git.refs (which imports the git layer) so that a re-run
answered before the CLI is imported (series.stack.verified_kept) computes
the same digest: it imports only series.plain (``os``) and ``_blake2`` (hashlib's ``blake2b``,
without OpenSSL's import), which the kept answers load already for the
patch files and series' code (another hash would be one more extension
module to load, and hashes the index more slowly).
"""

from __future__ import annotations

import os
from _blake2 import blake2b

from series.plain import read_plain


def files_key(work_tree: str, *, index: bool = True) -> str | None:
    """series.git.refs.files_key of the checkout at ``work_tree`` (its docstring)."""
    git_dir = os.path.join(work_tree, ".git")
    if not os.path.isdir(git_dir) or os.path.exists(os.path.join(git_dir, "reftable")):
        return None
    digest = blake2b()
    try:
        # config and config.worktree: where git's work tree is (core.bare, core.worktree:
        # series.checkout refuses a checkout that is not its own work tree)
        for name in ("HEAD", "packed-refs", "config", "config.worktree"):
            path = os.path.join(git_dir, name)
            digest.update(f"{name}\0".encode() + (_bytes(path) if os.path.isfile(path) else b"-"))
        for where, dirs, files in os.walk(os.path.join(git_dir, "refs")):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(where, name)
                digest.update(f"\0{os.path.relpath(path, git_dir)}\0".encode() + _bytes(path))
        if index:  # its bytes: a size, time and inode can be kept by a write in place
            data = _bytes(os.path.join(git_dir, "index"))
            digest.update(b"\0index\0" + blake2b(data).digest())
    except OSError:
        return None  # a ref being written meanwhile, no index yet: ask git
    return digest.hexdigest()


def _bytes(path: str) -> bytes:
    return read_plain(path)  # a FIFO, a link (git's own are files): OSError, ask git

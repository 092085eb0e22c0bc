"""series' own code as installed, as a digest: what a kept answer was computed by.

Apart from series.known (which imports the file layer) so that a command
answered before the CLI is imported (series.stack.branches_kept) can ask
it: it imports nothing Python's start-up has not, but the builtin
``_blake2`` (hashlib's ``blake2b``, without OpenSSL's import).

Each module counts by its identity (inode, size, modification and change
times: a write in place changes the change time, which ``os.utime`` cannot
set back, and a file replaced has another inode), or by its bytes when that
identity is not safely in the past (git's "racily clean" rule,
:func:`module_key`).

A link in the package, to a module or to a directory of them, is followed, as
Python's import follows it: the modules it leads to are series' code as much as
the rest. A linked directory that holds the directory being walked (a cycle), or
one walked already, is not walked again: it counts by where it leads, and its
modules where they were counted.
"""

from __future__ import annotations

import os
import time
from _blake2 import blake2b

from series import __version__

# What no file system's clock tick exceeds (FAT's is 2 s; ext4's, a kernel tick): a file
# whose change time is within this of now may be written again with the same identity.
RACY_NS = 2_000_000_000

_DIGEST: list[bytes] = []


def code_digest() -> bytes:
    """series' own modules as installed: a changed series verifies again.

    Computed once per process: what a run checks before and after itself is
    the code it runs.
    """
    if _DIGEST:
        return _DIGEST[0]
    said = [__version__.encode()]
    now = time.time_ns()
    package = os.path.dirname(os.path.realpath(__file__))
    _modules(package, package, said, now, now - RACY_NS, {package})
    _DIGEST.append(blake2b(b"\0".join(said)).digest())
    return _DIGEST[0]


def _modules(
    directory: str, real: str, said: list[bytes], now: int, racy: int, walked: set[str]
) -> None:
    """Each module under ``directory`` (``__pycache__`` aside), by :func:`module_key`.

    ``real``: the directory's resolved path; ``walked``: the resolved paths of the
    directories walked so far. A link to a directory is followed (main skipped it: a
    module edited under a linked subpackage left the digest as it was, and a kept
    answer said what the old code said), but to one that holds ``real`` (a cycle) or
    one walked already: that link counts by where it leads (the module's docstring)."""
    with os.scandir(directory) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_dir():  # a link too: Python's import follows it
            if entry.name == "__pycache__":
                continue
            below = os.path.join(real, entry.name)
            if entry.is_symlink():
                below = os.path.realpath(entry.path)
                held = real == below or real.startswith(below.rstrip(os.sep) + os.sep)
                if held or below in walked:
                    said.append(f"{entry.path}\0link\0{below}".encode())
                    continue
            walked.add(below)
            _modules(entry.path, below, said, now, racy, walked)
        elif entry.name.endswith(".py"):
            stat = os.stat(entry.path)  # scandir's stat has no inode or ctime everywhere
            if stat.st_ctime_ns >= racy:  # rare: module_key reads the bytes
                said.append(module_key(entry.path, stat, now))
            else:  # module_key's settled answer, without a call per module
                said.append(_settled(entry.path, stat))


def module_key(path: str, stat: os.stat_result, now: int) -> bytes:
    """What stands for the file ``path`` (``stat``: its status) in a digest taken at ``now``.

    Its identity, when its change time is safely in the past: a later write
    gets a later change time. Within RACY_NS of now, a second write in the
    same tick of the file system's clock, of the same size, would keep the
    identity: the file's bytes stand for it then (a digest of them is never
    equal to one of an identity, so the next run, with the file settled,
    takes the full way once).
    """
    if stat.st_ctime_ns >= now - RACY_NS:  # any write, and any utime, sets it to now
        with open(path, "rb") as fh:
            return f"{path}\0bytes\0".encode() + blake2b(fh.read()).digest()
    return _settled(path, stat)


def _settled(path: str, st: os.stat_result) -> bytes:
    return f"{path}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}".encode()

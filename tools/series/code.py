"""series' own code as installed, as a digest: what a kept answer was computed by.

Apart from series.known (which imports the file layer) so that a command
answered before the CLI is imported (series.stack.branches_kept) can ask
it: it imports nothing Python's start-up has not, but the builtin
``_blake2`` (hashlib's ``blake2b``, without OpenSSL's import).
"""

from __future__ import annotations

import os
from _blake2 import blake2b

from series import __version__

_DIGEST: list[bytes] = []


def code_digest() -> bytes:
    """series' own modules as installed (path, size, time): a changed series verifies again.

    Computed once per process: what a run checks before and after itself is
    the code it runs.
    """
    if _DIGEST:
        return _DIGEST[0]
    said = [__version__]
    _modules(os.path.dirname(os.path.realpath(__file__)), said)
    _DIGEST.append(blake2b("\0".join(said).encode()).digest())
    return _DIGEST[0]


def _modules(directory: str, said: list[str]) -> None:
    """Each module under ``directory`` (``__pycache__`` aside) as path, size, time."""
    with os.scandir(directory) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _modules(entry.path, said)
        elif entry.name.endswith(".py"):
            stat = entry.stat()
            said.append(f"{entry.path}\0{stat.st_size}\0{stat.st_mtime_ns}")

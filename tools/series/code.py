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
    root = os.path.dirname(os.path.realpath(__file__))
    digest = blake2b(__version__.encode())
    for where, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            stat = os.stat(os.path.join(where, name))
            digest.update(f"\0{where}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    _DIGEST.append(digest.digest())
    return _DIGEST[0]

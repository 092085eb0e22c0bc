"""Writing the project's files: atomically, so a reader sees the old file or the new one.

Every write to patches/, series.toml, caches and state goes through
:func:`write_atomic`: a temporary file in the same directory, flushed to
disk, then renamed into place. A failure (a full disk, a kill) leaves the
old file whole.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """Write ``data`` beside ``path``, flush it (``durable``: fsync), rename it into place."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

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


def replace_all(changes: dict[Path, bytes | None]) -> list[Path]:
    """Write (or, for ``None``, delete) several files, all or nothing on a write error.

    Every new content is first written and flushed to a temporary file beside
    its target; only when all of them are on disk are they renamed into place
    (a rename needs no space), then deletions follow. A full disk or a
    read-only directory therefore fails before any file changed: the temporary
    files are removed and the error is raised. Returns the paths changed, in
    order; a kill during the renames leaves each file old or new, never half.
    """
    staged: list[tuple[Path, str]] = []
    try:
        for path, data in changes.items():
            if data is not None:
                staged.append((path, _stage(path, data)))
    except BaseException:
        for _, tmp in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    done = []
    for path, tmp in staged:
        os.replace(tmp, path)
        done.append(path)
    for path, data in changes.items():
        if data is None:
            path.unlink(missing_ok=True)
            done.append(path)
    return done


def _stage(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp

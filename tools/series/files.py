"""Writing the project's files: atomically, so a reader sees the old file or the new one.

Every write to patches/, series.toml, caches and state goes through
:func:`write_atomic`: a temporary file in the same directory, flushed to
disk, then renamed into place. A failure (a full disk, a kill) leaves the
old file whole.

Temporary files are named ``.series-tmp-<pid>-<name>.<random>``, so what a
killed run left is recognisable: :func:`clear_stale_temps` removes those
whose process is gone (every command does, for the project's directories).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from series import faults

TEMP_PREFIX = ".series-tmp-"


def write_atomic(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """Write ``data`` beside ``path``, flush it (``durable``: fsync), rename it into place."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        faults.point(f"write {path.name}: staged")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    faults.point(f"write {path.name}: renamed")


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
    faults.point(f"replace {len(staged)} files: staged")
    done = []
    for path, tmp in staged:
        os.replace(tmp, path)
        done.append(path)
        faults.point(f"replace {path.name}: renamed")
    for path, data in changes.items():
        if data is None:
            path.unlink(missing_ok=True)
            done.append(path)
            faults.point(f"replace {path.name}: removed")
    return done


def _stage(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
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


def _temp_prefix(path: Path) -> str:
    return f"{TEMP_PREFIX}{os.getpid()}-{path.name}."


def clear_stale_temps(*directories: Path) -> list[Path]:
    """Remove the temporary files of series runs that are gone (killed mid-write).

    Only files named as :func:`write_atomic` names them, and only those whose
    process no longer runs: a run writing beside us keeps its own. Returns
    what went.
    """
    gone = []
    for directory in directories:
        try:
            names = [e.name for e in os.scandir(directory) if e.name.startswith(TEMP_PREFIX)]
        except OSError:
            continue
        for name in names:
            pid = name[len(TEMP_PREFIX) :].partition("-")[0]
            if not pid.isdigit() or alive(int(pid)):
                continue
            try:
                (directory / name).unlink()
            except OSError:
                continue
            gone.append(directory / name)
    return gone


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (one of another user counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

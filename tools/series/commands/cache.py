"""``series cache clean``: empty the per-user cache, saying what goes and how much.

The cache (docs/manifest.md, "The per-user cache") holds only what series
can rebuild: it is removed entry by entry, and only the entries series
makes (``ENTRIES``); anything else in the directory is kept and named. The
project is never touched: a cache directory that is the project, lies in
it, or holds it (``SERIES_CACHE_DIR`` pointing at the wrong place) is
refused, and so are the home directory and ``/``. Another series run using
the cache (the upstream lock, a ``series test`` work-tree slot) makes it
refuse rather than pull files from under it. ``--dry-run`` says what would
go and removes nothing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from series.commands.options import ENVELOPE, Option
from series.errors import Exit, SeriesError

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = "exit status: 0 cleaned (or nothing to clean); 4 refused. Manual: docs/manifest.md."
OPTIONS = (
    Option("ACTION", "what to do with the cache: clean", choices=("clean",)),
    Option(
        "--dry-run",
        "say what would be removed, and how much, removing nothing",
        action="store_true",
    ),
    ENVELOPE,
)

# What series writes in the cache, and what each is (docs/manifest.md).
ENTRIES = {
    "upstream.git": "upstream bases and memoised stacks (fetched or imported again)",
    "sdist": "downloaded sdist archives (downloaded again)",
    "worktrees": "series test work trees (made again)",
    "tests": "series test results and logs (tests run again)",
    "bench": "bench trees, timings and work directories (measured again)",
    "scorecard": "scorecard results and work directories (measured again)",
    "unreachable": "notes of upstreams that did not answer",
    "known": "what apply and export read of series.toml (read again)",
    "manifests": "series.toml as tomllib read it, by its text (read again)",
    "status": "what the last series status saw (looked at again)",
    "branches": "what the last series branches --dry-run said (worked out again)",
    "verified": "what the last plain series apply re-run said (worked out again)",
    "range-diff": "what the last plain series range-diff printed (worked out again)",
    "help": "series --help as last printed (made again)",
    "git-version": "which gits on PATH were found new enough (asked again)",
    "patchinfo": "what series read of each patch file (read again)",
    "patchids": "patch-ids of upstream commits, by commit (computed again)",
    "commitfiles": "the files each upstream commit changes, by commit (read again)",
    "alone.json": "what check-conflicts found of each patch alone (computed again)",
}
UPSTREAM_LOCK = "upstream.lock"


def run(
    series: Series, ui: Ui, *, action: str, dry_run: bool = False, as_json: bool = False
) -> Exit:
    from series.locks import exclusive
    from series.project import CHECKOUT_LOCKS

    cache = series.cache_dir.absolute()
    _check_place(cache, series.root.resolve())
    if not cache.is_dir():
        found: list[dict[str, Any]] = []
        kept: list[str] = []
    elif dry_run:
        found, kept = _survey(cache, CHECKOUT_LOCKS)
    else:
        _check_idle(cache)
        with exclusive(cache / UPSTREAM_LOCK, say=ui.status, what="cleaning the cache"):
            _check_idle(cache, upstream=False)  # a test may have started meanwhile
            found, kept = _survey(cache, CHECKOUT_LOCKS)
            for entry in found:
                _remove(cache / entry["path"])
    total = sum(e["bytes"] for e in found)
    verb = "would remove" if dry_run else "removed"
    for entry in found:
        ui.status(f"{verb} {entry['path']} ({_size(entry['bytes'])}): {entry['what']}")
    for name in kept:
        ui.status(f"kept {name}: not made by series")
    if not found:
        ui.result(f"nothing to clean in {cache}")
    else:
        ui.result(f"{verb} {_size(total)} from {cache}; the project was not touched")
    if as_json:
        ui.json(
            {
                "cache": str(cache),
                "dry_run": dry_run,
                "removed": found,
                "bytes": total,
                "kept": kept,
            }
        )
    return Exit.OK


def _check_place(cache: Path, project: Path) -> None:
    real = cache.resolve()
    home = Path.home().resolve()
    wrong = (
        "it is the project, or holds it"
        if real == project or real in project.parents
        else "it lies inside the project"
        if project in real.parents
        else "it is the home directory or the file system root"
        if real in (home, Path(real.anchor))
        else None
    )
    if wrong:
        raise SeriesError(
            f"refusing to clean {cache}",
            why=f"{wrong}; the cache is only what series can rebuild",
            hint="point SERIES_CACHE_DIR (or XDG_CACHE_HOME) at the cache, or unset it",
            exit_code=Exit.REFUSED,
        )


def _check_idle(cache: Path, *, upstream: bool = True) -> None:
    """Refuse while another series run holds one of the cache's locks."""
    from series.locks import holder

    held = holder(cache / UPSTREAM_LOCK) if upstream else None
    busy = [held.describe()] if held is not None else []
    slots = cache / "worktrees"
    for lock in sorted(slots.glob("*.lock")) if slots.is_dir() else []:
        if _held(lock):
            busy.append(f"a series test work tree ({lock.name})")
    if busy:
        raise SeriesError(
            f"refusing to clean {cache}: another series command is using it",
            why="; ".join(busy),
            hint="run `series cache clean` again when it has finished",
            exit_code=Exit.REFUSED,
        )


def _held(lock: Path) -> bool:
    try:  # a link is not followed nor a FIFO waited on: the lock itself refuses them
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _survey(cache: Path, locks: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries series made (``ENTRIES``) and the names it did not; neither the
    upstream lock nor the checkout locks (``locks``), which another run may hold."""
    found, kept = [], []
    for path in sorted(cache.iterdir()):
        if path.name in ENTRIES:
            found.append({"path": path.name, "bytes": _bytes(path), "what": ENTRIES[path.name]})
        elif path.name not in (UPSTREAM_LOCK, locks):
            kept.append(path.name)
    return found, kept


def _bytes(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            with suppress(OSError):
                total += (Path(top) / name).lstat().st_size
    return total


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} bytes"
    value = n / 1000
    units = ["kB", "MB", "GB"]
    while value >= 1000 and len(units) > 1:
        value, units = value / 1000, units[1:]
    return f"{value:.1f} {units[0]}"
